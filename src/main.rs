//! `ferrocket`: the command line for Ferrocket's name server, broker, local
//! development pair and admin operations. Servers run until SIGTERM/SIGINT.

mod account_args;
mod admin;
mod config;
mod config_controller;
mod grpc_local;
mod properties;
mod proxy;
mod proxy_metrics;
mod start;
mod tune;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc malloc: per-thread heaps with cheap
/// cross-thread frees. Buffers cross cores here (a shard encodes a record,
/// the appender frees it), and glibc's arenas spent ~20% of broker CPU in
/// malloc/free at saturation (perf, tuning/RESULTS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "ferrocket",
    version,
    about = "RocketMQ-compatible message broker, thread-per-core on io_uring"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a name server (broker registry and topic routes).
    #[command(after_help = NAMESRV_DEFAULTS)]
    Namesrv(config::NamesrvArgs),
    /// Run a broker.
    #[command(after_help = BROKER_DEFAULTS)]
    Broker(config::BrokerArgs),
    /// Run a controller (controller mode's master elections, replicated
    /// with Raft across one or three controllers).
    #[command(after_help = CONTROLLER_DEFAULTS)]
    Controller(config::ControllerArgs),
    /// Local development: one name server and one broker as child processes.
    Start(start::StartArgs),
    /// The RocketMQ 5 gRPC endpoint (port 8081) for a cluster's v5 clients.
    Proxy(proxy::ProxyArgs),
    /// mqadmin-style operations against a running cluster.
    Admin(admin::AdminArgs),
    /// Host checks for running a broker well (`tune check`).
    Tune(tune::TuneArgs),
}

/// What `namesrv --help` says about settings left unset.
const NAMESRV_DEFAULTS: &str = "Unset, it listens on 127.0.0.1:9876 (listenAddr, listenPort).";

/// What `broker --help` says about settings left unset.
const BROKER_DEFAULTS: &str = "Unset, it listens on 127.0.0.1:10911 (listenAddr, listenPort) \
with HA on listenPort + 1, stores under ~/store (storePathRootDir), flushes ASYNC_FLUSH \
(flushDiskType), uses 1 GiB CommitLog segments (mappedFileSizeCommitLog), runs one shard on a \
1-2 core host, else one per core but the first (shardCount), and registers with no name \
server (namesrvAddr; registerBrokerIntervalMs=30000 once set).";

/// What `controller --help` says about its address and group.
const CONTROLLER_DEFAULTS: &str = "Unset, it is a group of one listening on 127.0.0.1:19876 \
(listenAddr, listenPort). A group of three: give each the same \
controllerDLegerPeers=n0-HOST:PORT;n1-HOST:PORT;n2-HOST:PORT and its own \
controllerDLegerSelfId=n0 (or n1, n2); it then listens on its own peer address.";

/// The log filter: `RUST_LOG` (unset: `info`), with openraft held to
/// warnings unless `RUST_LOG` names it: Raft's own INFO lines (elections,
/// snapshots, one of 1,182 characters) drowned the controller's, also
/// under a plain `RUST_LOG=info`; `RUST_LOG=info,openraft=info` shows them.
fn log_directives(rust_log: Option<&str>) -> String {
    let given = rust_log.map(str::trim).filter(|s| !s.is_empty());
    let base = given.unwrap_or("info");
    if base.contains("openraft") {
        base.to_string()
    } else {
        format!("{base},openraft=warn")
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::new(log_directives(
        std::env::var("RUST_LOG").ok().as_deref(),
    ));
    // Colours only for a person at a terminal, never in a log file.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

/// A flag set by SIGTERM or SIGINT; servers poll it and stop gracefully.
fn stop_flag() -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("cannot install signal handler: {e}"))?;
    }
    Ok(stop)
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Namesrv(args) => {
            let (config, controller) = config::namesrv_config(&args)?;
            // The embedded controller (`enableControllerInNamesrv`) runs
            // beside the name server on its own port, and stops with it.
            let controller = match controller {
                Some(controller) => Some(
                    ferrocket_controller::start(controller)
                        .map_err(|e| format!("controller: {e}"))?,
                ),
                None => None,
            };
            let ran =
                ferrocket_namesrv::run(config, stop_flag()?).map_err(|e| format!("namesrv: {e}"));
            if let Some(controller) = controller {
                controller.stop();
            }
            ran
        }
        Command::Controller(args) => {
            let config = config::controller_config(&args)?;
            ferrocket_controller::run(config, stop_flag()?).map_err(|e| format!("controller: {e}"))
        }
        Command::Broker(args) => {
            let (config, grpc_limits) = config::broker_config(&args)?;
            // GET/UPDATE_BROKER_CONFIG on, online changes written to `-c`.
            let mut handles = ferrocket_broker::BrokerHandles {
                online_keys: Some(ferrocket_broker::ConfigKeys {
                    file: args.common.config_file.clone(),
                }),
                ..Default::default()
            };
            let stop = stop_flag()?;
            let endpoint = match config.enable_proxy {
                true => Some(start_endpoint(&config, &mut handles, grpc_limits, &stop)?),
                false => None,
            };
            let ran = match config.controller_mode.enabled {
                true => ferrocket_broker::run_controller_mode(config, handles, Arc::clone(&stop)),
                false => ferrocket_broker::run(config, handles, Arc::clone(&stop))
                    .map_err(|e| format!("broker: {e}")),
            };
            if let Some(thread) = endpoint {
                // A broker that failed to start leaves the endpoint to stop.
                stop.store(true, std::sync::atomic::Ordering::Release);
                let _ = thread.join();
            }
            ran
        }
        Command::Start(args) => start::run(args, stop_flag()?),
        Command::Proxy(args) => proxy::run(args, stop_flag()?),
        Command::Admin(args) => {
            quiet_on_closed_stdout();
            admin::run(args)
        }
        Command::Tune(args) => {
            quiet_on_closed_stdout();
            tune::run(args)
        }
    }
}

/// The in-broker gRPC endpoint (`enableProxy=true`) on its own thread,
/// given the broker port's HTTP/2 connections and, in local mode, the
/// broker's in-process door (both put into `handles`).
fn start_endpoint(
    config: &ferrocket_broker::BrokerConfig,
    handles: &mut ferrocket_broker::BrokerHandles,
    limits: ferrocket_grpc::GrpcLimits,
    stop: &Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, String> {
    let local = std::net::SocketAddr::new(config.listen_addr, config.listen_port);
    let mut security = in_broker_security(config)?;
    let (tls, client_tls) = proxy::endpoint_tls(&config.tls)?;
    security.client_tls = client_tls;
    let broker = match config.proxy_mode {
        ferrocket_broker::ProxyMode::Local => {
            let port = ferrocket_broker::LocalPort::new();
            handles.local_port = Some(port.clone());
            Some(Arc::new(grpc_local::BrokerDoor(port)) as Arc<dyn ferrocket_grpc::LocalBroker>)
        }
        ferrocket_broker::ProxyMode::Cluster => None,
    };
    let endpoint = proxy::Endpoint {
        local,
        broker,
        tls,
        limits,
    };
    let (handoff, thread) =
        proxy::in_broker(&config.namesrv_addr, security, endpoint, Arc::clone(stop))?;
    handles.grpc_handoff = Some(handoff);
    Ok(thread)
}

/// The in-broker gRPC endpoint's ACL: the broker's accounts, checked for v5
/// clients too, and the broker's own credentials for its calls.
fn in_broker_security(
    config: &ferrocket_broker::BrokerConfig,
) -> Result<ferrocket_grpc::Security, String> {
    let credentials = config
        .inner_credentials
        .clone()
        .map(|(access_key, secret_key)| ferrocket_client::Credentials {
            access_key,
            secret_key,
        });
    if (config.acl_enable || config.auth.enabled()) && config.inner_credentials.is_none() {
        // This broker's own queues are served in process, unsigned and
        // allowed; only calls to the cluster's other brokers need the
        // account, so it is not an alarm on a broker of its own.
        tracing::info!(
            "ACL on with enableProxy=true and no innerClientAuthenticationCredentials: v5 clients \
             are served for this broker's queues; the endpoint's calls to other brokers of the \
             cluster go unsigned and those brokers refuse them (give it an account with \
             permission for what v5 clients do; with ACL 2.0 it becomes a super user)"
        );
    }
    let home = config.rocketmq_home().filter(|_| config.acl_enable);
    let mut security = proxy::security(home.as_deref(), credentials)?;
    security.access.users = proxy::broker_users(in_broker_auth(config));
    Ok(security)
}

/// ACL 2.0's settings for the in-broker endpoint: the broker's own, and
/// its own users.
fn in_broker_auth(config: &ferrocket_broker::BrokerConfig) -> Option<ferrocket_grpc::AuthSettings> {
    let auth = &config.auth;
    if !auth.enabled() {
        return None;
    }
    let host = match config.listen_addr.is_unspecified() {
        true => std::net::IpAddr::from([127, 0, 0, 1]),
        false => config.listen_addr,
    };
    let broker = std::net::SocketAddr::new(host, config.listen_port);
    Some(ferrocket_grpc::AuthSettings {
        authentication: auth.authentication_enabled,
        authorization: auth.authorization_enabled,
        authentication_whitelist: auth.authentication_whitelist.names.clone(),
        authorization_whitelist: auth.authorization_whitelist.names.clone(),
        broker_addr: Some(broker.to_string()),
    })
}

/// For the commands that print a report: piped into `head`, they end
/// quietly when the reader goes, as other Unix tools do (Rust ignores
/// SIGPIPE, so printing would panic). Their sockets are unaffected: Rust
/// writes to sockets with MSG_NOSIGNAL.
fn quiet_on_closed_stdout() {
    // SAFETY: restoring the default disposition of one signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The command line, with `broker --help` and `controller --help` listing
/// every key, its default and what it does, from the servers'
/// declarations (`-h` keeps the short form).
fn cli() -> Cli {
    let keys = format!(
        "{BROKER_DEFAULTS}\n\nSettings (broker.conf or --set KEY=VALUE), [default]:\n{}\
         \nThe gRPC endpoint's limits (enableProxy=true):\n{}",
        ferrocket_broker::BROKER_SETTINGS.help(),
        ferrocket_grpc::GRPC_SETTINGS.help()
    );
    let controller_keys = format!(
        "{CONTROLLER_DEFAULTS}\n\nSettings (controller.conf or --set KEY=VALUE), [default]:\n{}",
        ferrocket_controller::CONTROLLER_SETTINGS.help()
    );
    let command = <Cli as clap::CommandFactory>::command()
        .mut_subcommand("broker", |broker| broker.after_long_help(keys))
        .mut_subcommand("controller", |c| c.after_long_help(controller_keys));
    let matches = command.get_matches();
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let cli = cli();
    init_logging();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

//! `ferrocket proxy`: the RocketMQ 5 gRPC endpoint for a Remoting cluster
//! (Ferrocket's or Apache RocketMQ's), found through its name server, as
//! RocketMQ's proxy runs in cluster mode.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the stop flag is looked at.
const STOP_POLL_MS: u64 = 100;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Name servers of the cluster to serve, "host:port;host:port".
    #[arg(short = 'n', long = "namesrv-addr", default_value = "127.0.0.1:9876")]
    namesrv_addr: String,
    /// Address the gRPC endpoint binds.
    #[arg(long, default_value = "127.0.0.1")]
    listen_addr: IpAddr,
    /// gRPC port (RocketMQ's `grpcServerPort`); 0 picks a free one.
    #[arg(long, default_value_t = ferrocket_grpc::GRPC_PORT_DEFAULT)]
    listen_port: u16,
    /// Check v5 clients' credentials against ACL 1.0's accounts in
    /// `{DIR}/conf/plain_acl.yml` (RocketMQ's home).
    #[arg(long, value_name = "DIR")]
    acl_home: Option<std::path::PathBuf>,
    /// The account the proxy signs its calls to brokers with; it needs
    /// permission for everything clients do.
    #[command(flatten)]
    account: crate::account_args::AccountArgs,
    /// Serve Prometheus metrics on this port (Java's proxy default is
    /// 5557), at the gRPC listen address; unset: no endpoint.
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,
    /// The `cluster` label of the metrics (RocketMQ's `proxyClusterName`).
    #[arg(long, default_value = "DefaultCluster")]
    proxy_cluster_name: String,
    /// A setting, repeatable: RocketMQ's `tls.*` keys
    /// (`tls.server.mode=enforcing`, `tls.enable=true` for the calls to
    /// brokers, ...), the proxy's `tlsTestModeEnable`, `tlsCertPath`,
    /// `tlsKeyPath`, and ACL 2.0's `authenticationEnabled`,
    /// `authorizationEnabled`, `authenticationWhitelist`,
    /// `authorizationWhitelist` (users and ACLs are the brokers'), and the
    /// endpoint's limits (`grpcMaxConcurrentStreams`, `grpcConnectionsMax`,
    /// ..., see the README) and push consumers' auto-renew:
    /// `enableProxyAutoRenew`, `defaultInvisibleTimeMills`,
    /// `renewAheadTimeMillis`, `renewMaxTimeMillis`,
    /// `renewSchedulePeriodMillis`, `maxRenewRetryTimes`,
    /// `invisibleTimeMillisWhenClear`, `renewMaxThreadPoolNums`,
    /// `maxRenewHandlesPerClient`, `maxRenewHandles`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// The proxy's own names of `tls.*` keys, as RocketMQ's proxy copies them.
const TLS_ALIASES: [(&str, &str); 3] = [
    ("tlsTestModeEnable", "tls.test.mode.enable"),
    ("tlsCertPath", "tls.server.certPath"),
    ("tlsKeyPath", "tls.server.keyPath"),
];

/// Splits `--set KEY=VALUE`: the key trimmed, the value as given.
fn split_pair(pair: &str) -> Result<(&str, &str), String> {
    pair.split_once('=')
        .map(|(key, value)| (key.trim(), value))
        .ok_or_else(|| format!("--set {pair}: expected KEY=VALUE"))
}

/// Whether a declared table (ACL 2.0, limits, auto-renew) takes `key`.
fn declared(key: &str) -> bool {
    ferrocket_grpc::AUTH_SETTINGS.find(key).is_some()
        || ferrocket_grpc::GRPC_SETTINGS.find(key).is_some()
        || ferrocket_grpc::RENEW_SETTINGS.find(key).is_some()
}

/// Every key `--set` takes, for "did you mean".
fn known_keys() -> Vec<&'static str> {
    let mut keys = ferrocket_grpc::AUTH_SETTINGS.keys();
    keys.extend(ferrocket_grpc::GRPC_SETTINGS.keys());
    keys.extend(ferrocket_grpc::RENEW_SETTINGS.keys());
    keys.extend(TLS_ALIASES.iter().map(|(alias, _)| *alias));
    for decl in &ferrocket_tls::TLS_SETTINGS {
        keys.push(decl.name);
        keys.extend(decl.aliases.iter().copied());
    }
    keys
}

/// The refusal of a key the proxy does not take, with the known key it
/// most resembles.
fn unknown_key(pair: &str, key: &str) -> String {
    let hint = match ferrocket_runtime::suggest::closest(key, &known_keys()) {
        Some(meant) => format!(": did you mean `{meant}`?"),
        None => String::new(),
    };
    format!(
        "--set {pair}: the proxy takes only TLS, ACL 2.0, grpc* limit and auto-renew keys \
         here{hint}"
    )
}

/// The proxy's TLS settings from `--set` (its own key names map onto the
/// `tls.*` ones); any other key must be a declared one.
fn tls_settings(settings: &[String]) -> Result<ferrocket_tls::TlsSettings, String> {
    let mut tls = ferrocket_tls::TlsSettings::default();
    for pair in settings {
        let (key, value) = split_pair(pair)?;
        if declared(key) {
            continue;
        }
        let key = TLS_ALIASES
            .iter()
            .find(|(alias, _)| *alias == key)
            .map_or(key, |(_, name)| *name);
        match tls.set(key, value) {
            Ok(true) => {}
            Ok(false) => return Err(unknown_key(pair, key)),
            Err(e) => return Err(format!("--set {pair}: {e}")),
        }
    }
    Ok(tls)
}

/// Applies every `--set` pair `table` takes onto its default config.
fn from_table<C: Default>(
    table: &ferrocket_runtime::settings::Table<C>,
    settings: &[String],
) -> Result<C, String> {
    let mut config = C::default();
    for pair in settings {
        let (key, value) = split_pair(pair)?;
        let setting =
            ferrocket_runtime::settings::Setting::from_flag(value.into(), format!("--set {pair}"));
        table.apply(&mut config, key, &setting)?;
    }
    Ok(config)
}

/// ACL 2.0's settings from `--set`; `None` when both checks are off.
fn auth_settings(settings: &[String]) -> Result<Option<ferrocket_grpc::AuthSettings>, String> {
    let auth = from_table(&ferrocket_grpc::AUTH_SETTINGS, settings)?;
    Ok(Some(auth).filter(|a: &ferrocket_grpc::AuthSettings| a.authentication || a.authorization))
}

/// With ACL 2.0 on: the users and ACLs to check v5 clients against.
pub fn broker_users(
    auth: Option<ferrocket_grpc::AuthSettings>,
) -> Option<Arc<ferrocket_grpc::BrokerUsers>> {
    auth.map(|settings| Arc::new(ferrocket_grpc::BrokerUsers::new(settings)))
}

/// TLS on the gRPC port (`None`: disabled) and towards the brokers (`None`:
/// plaintext).
type EndpointTls = (
    Option<Arc<ferrocket_tls::ServerTls>>,
    Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
);

/// The endpoint's TLS from the `tls.*` settings.
pub fn endpoint_tls(tls: &ferrocket_tls::TlsSettings) -> Result<EndpointTls, String> {
    let server = ferrocket_tls::ServerTls::new(tls, &[ferrocket_grpc::tls::GRPC_ALPN])
        .map_err(|e| format!("TLS: {e}"))?;
    let client = match tls.client_uses_tls(None) {
        true => {
            let merged = tls.with_file().map_err(|e| format!("TLS: {e}"))?;
            Some(ferrocket_tls::client_config(&merged, &[]).map_err(|e| format!("TLS: {e}"))?)
        }
        false => None,
    };
    Ok((server, client))
}

/// ACL on both sides of the endpoint: the accounts under `acl_home` (none:
/// no check) and the account its broker calls are signed with.
pub fn security(
    acl_home: Option<&std::path::Path>,
    credentials: Option<ferrocket_client::Credentials>,
) -> Result<ferrocket_grpc::Security, String> {
    let acl = match acl_home {
        Some(home) => {
            let store = ferrocket_acl::AclStore::open(home).map_err(|e| format!("ACL: {e}"))?;
            Some(Arc::new(store))
        }
        None => None,
    };
    Ok(ferrocket_grpc::Security {
        access: ferrocket_grpc::Access {
            acl,
            ..Default::default()
        },
        credentials,
        client_tls: None,
        renew: ferrocket_grpc::RenewSettings::default(),
    })
}

pub fn run(args: ProxyArgs, stop: Arc<AtomicBool>) -> Result<(), String> {
    let credentials = args.account.credentials();
    let (tls, client_tls) = endpoint_tls(&tls_settings(&args.settings)?)?;
    let mut security = security(args.acl_home.as_deref(), credentials)?;
    security.client_tls = client_tls;
    security.access.users = broker_users(auth_settings(&args.settings)?);
    security.renew = from_table(&ferrocket_grpc::RENEW_SETTINGS, &args.settings)?;
    let _tls_reloader = match &tls {
        Some(tls) => Some(
            tls.watch(Arc::clone(&stop))
                .map_err(|e| format!("cannot start the TLS reload thread: {e}"))?,
        ),
        None => None,
    };
    let config = ferrocket_grpc::ProxyConfig {
        listen: SocketAddr::new(args.listen_addr, args.listen_port),
        namesrv_addr: args.namesrv_addr.clone(),
        security,
        tls,
        limits: from_table(&ferrocket_grpc::GRPC_SETTINGS, &args.settings)?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ferrocket-proxy")
        .build()
        .map_err(|e| format!("cannot start the proxy's runtime: {e}"))?;
    let shutdown = async move {
        while !stop.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(STOP_POLL_MS)).await;
        }
    };
    if let Some(port) = args.metrics_port {
        let metrics_addr = SocketAddr::new(args.listen_addr, port);
        let listener = runtime.block_on(crate::proxy_metrics::bind(metrics_addr))?;
        let labels = crate::proxy_metrics::ProxyLabels {
            cluster: args.proxy_cluster_name.clone(),
            node_id: SocketAddr::new(args.listen_addr, args.listen_port).to_string(),
        };
        runtime.spawn(crate::proxy_metrics::serve(listener, labels));
    }
    let namesrv = args.namesrv_addr;
    let bound = move |addr: SocketAddr| {
        // Tests and scripts wait for this line.
        println!("ferrocket proxy listening on {addr}");
        tracing::info!(%addr, %namesrv, "gRPC proxy serving");
    };
    runtime
        .block_on(ferrocket_grpc::serve(config, bound, shutdown))
        .map_err(|e| format!("proxy: {e}"))
}

/// Worker threads of the in-broker endpoint's runtime: the shards keep the
/// cores, the proxy is a guest on them.
const IN_BROKER_THREADS: usize = 2;

/// The in-broker endpoint's own side: its address, the broker it calls in
/// process (`proxyMode=local`; `None`: over Remoting), its TLS.
pub struct Endpoint {
    pub local: SocketAddr,
    pub broker: Option<Arc<dyn ferrocket_grpc::LocalBroker>>,
    pub tls: Option<Arc<ferrocket_tls::ServerTls>>,
    /// What clients may make the endpoint hold (the broker's `grpc*` keys).
    pub limits: ferrocket_grpc::GrpcLimits,
}

/// The in-broker endpoint (`enableProxy=true`): the proxy on its own tokio
/// threads, fed the broker port's HTTP/2 connections through the returned
/// handoff, serving the broker's cluster through its name servers (and the
/// broker itself in process, in local mode). It stops with `stop`; join
/// the thread after the broker returns.
pub fn in_broker(
    namesrv_addr: &str,
    security: ferrocket_grpc::Security,
    endpoint: Endpoint,
    stop: Arc<AtomicBool>,
) -> Result<
    (
        ferrocket_runtime::server::Handoff,
        std::thread::JoinHandle<()>,
    ),
    String,
> {
    if namesrv_addr.trim().is_empty() {
        return Err(
            "enableProxy needs namesrvAddr: the gRPC endpoint routes through the name server"
                .into(),
        );
    }
    let Endpoint {
        local,
        broker,
        tls,
        limits,
    } = endpoint;
    if let Some(tls) = &tls {
        // Ends by itself within one interval of the stop flag.
        tls.watch(Arc::clone(&stop))
            .map_err(|e| format!("cannot start the TLS reload thread: {e}"))?;
    }
    let (connections, incoming) = tokio::sync::mpsc::unbounded_channel();
    let handoff = ferrocket_runtime::server::Handoff::new(move |handed| {
        // Closed only when the endpoint is gone (the broker is stopping).
        let _ = connections.send(handed);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(IN_BROKER_THREADS)
        .enable_all()
        .thread_name("ferrocket-grpc")
        .build()
        .map_err(|e| format!("cannot start the gRPC endpoint's runtime: {e}"))?;
    let namesrv = namesrv_addr.to_string();
    let thread = std::thread::Builder::new()
        .name("ferrocket-grpc".into())
        .spawn(move || {
            // Made tokio sockets (TLS ones after their handshake) inside
            // the runtime, as they are taken.
            let connections_max = limits.connections_max;
            let incoming = runtime.block_on(async {
                ferrocket_grpc::tls::handed_over(incoming, tls, connections_max)
            });
            let shutdown = async move {
                while !stop.load(Ordering::Acquire) {
                    tokio::time::sleep(Duration::from_millis(STOP_POLL_MS)).await;
                }
            };
            tracing::info!(%local, "gRPC endpoint serving on the broker port");
            let served = runtime.block_on(ferrocket_grpc::serve_incoming(
                &namesrv, security, limits, local, broker, incoming, shutdown,
            ));
            if let Err(e) = served {
                tracing::error!(error = %e, "the in-broker gRPC endpoint stopped");
            }
        })
        .map_err(|e| format!("cannot start the gRPC endpoint's thread: {e}"))?;
    Ok((handoff, thread))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(pairs: &[&str]) -> Vec<String> {
        pairs.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn set_keys_reach_their_tables_and_a_typo_gets_a_suggestion() {
        let settings = sets(&[
            "authenticationEnabled=true",
            "authorizationWhitelist=a,b",
            "grpcConnectionsMax=9",
            "renewAheadTimeMillis=2000",
            "tlsTestModeEnable=false",
        ]);
        assert!(tls_settings(&settings).is_ok());
        let auth = auth_settings(&settings).unwrap().unwrap();
        assert!(auth.authentication && !auth.authorization);
        assert_eq!(auth.authorization_whitelist, ["a", "b"]);
        let limits = from_table(&ferrocket_grpc::GRPC_SETTINGS, &settings).unwrap();
        assert_eq!(limits.connections_max, 9);
        let renew = from_table(&ferrocket_grpc::RENEW_SETTINGS, &settings).unwrap();
        assert_eq!(renew.ahead_ms, 2_000);
        assert!(auth_settings(&sets(&["authorizationEnabled=false"]))
            .unwrap()
            .is_none());
        let typo = tls_settings(&sets(&["authenticationEnable=true"])).unwrap_err();
        assert!(
            typo.ends_with("did you mean `authenticationEnabled`?"),
            "{typo}"
        );
        let typo = tls_settings(&sets(&["renewAheadTimeMilis=1"])).unwrap_err();
        assert!(
            typo.ends_with("did you mean `renewAheadTimeMillis`?"),
            "{typo}"
        );
        let bad = auth_settings(&sets(&["authenticationEnabled=yes"])).unwrap_err();
        assert!(
            bad.starts_with("--set authenticationEnabled=yes: invalid value"),
            "{bad}"
        );
        assert!(tls_settings(&sets(&["novalue"])).is_err());
    }
}

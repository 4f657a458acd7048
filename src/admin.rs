//! `ferrocket admin`: mqadmin-style operations (topics, routes, clusters)
//! over the Remoting client. Builds its own current-thread tokio runtime.

use std::time::Duration;

mod auth;
mod broker;
mod consumer;
mod consumer_status;
mod controller;
mod message;
mod producer;
mod stats;
mod time;

use clap::{Args, Subcommand};
use ferrocket_client::admin::{BrokerEntry, CreateTopicOptions};
use ferrocket_client::{Admin, ClientError};

/// How long one admin request may take.
const ADMIN_REQUEST_TIMEOUT_MS: u64 = 5_000;
/// How long fetching one broker's runtime info may take in `cluster list`.
const RUNTIME_INFO_TIMEOUT_MS: u64 = 2_000;

#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Name server address(es), "host:port;host:port". Anywhere on the
    /// line, as with mqadmin (`admin topic list -n host:port`).
    #[arg(short = 'n', long, global = true, default_value = "127.0.0.1:9876")]
    namesrv_addr: String,
    #[command(flatten)]
    account: crate::account_args::AccountArgs,
    /// Talk to name servers and brokers over TLS (mqadmin's
    /// `-Dtls.enable=true`), taking any certificate unless
    /// `--tls-trust-cert-path` names the CA to verify against.
    #[arg(long)]
    tls: bool,
    /// The CA (PEM) server certificates must chain to (Java's
    /// `tls.client.trustCertPath` with `tls.client.authServer=true`).
    #[arg(long, value_name = "PEM", requires = "tls")]
    tls_trust_cert_path: Option<String>,
    #[command(subcommand)]
    command: AdminCommand,
}

/// The admin's TLS client configuration, when `--tls` is given.
fn admin_tls(
    args: &AdminArgs,
) -> Result<Option<std::sync::Arc<ferrocket_tls::rustls::ClientConfig>>, String> {
    if !args.tls {
        return Ok(None);
    }
    let mut settings = ferrocket_tls::TlsSettings::default();
    if let Some(ca) = &args.tls_trust_cert_path {
        for (key, value) in [
            ("tls.test.mode.enable", "false"),
            ("tls.client.authServer", "true"),
            ("tls.client.trustCertPath", ca.as_str()),
        ] {
            settings.set(key, value).map_err(|e| e.to_string())?;
        }
    }
    let merged = settings.with_file().map_err(|e| format!("TLS: {e}"))?;
    let config = ferrocket_tls::client_config(&merged, &[]).map_err(|e| format!("TLS: {e}"))?;
    Ok(Some(config))
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create, list and inspect topics.
    #[command(subcommand)]
    Topic(TopicCommand),
    /// Inspect clusters and their brokers.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Read and change a broker's settings online.
    #[command(subcommand)]
    Broker(broker::BrokerCommand),
    /// Find messages by id, key, unique key or queue offset.
    #[command(subcommand)]
    Message(message::MessageCommand),
    /// Consumer groups' progress and connections.
    #[command(subcommand)]
    Consumer(consumer::ConsumerCommand),
    /// Consumer offsets.
    #[command(subcommand)]
    Offset(consumer::OffsetCommand),
    /// Producer groups' connections.
    #[command(subcommand)]
    Producer(producer::ProducerCommand),
    /// What a controller knows of controller-mode broker sets.
    #[command(subcommand)]
    Controller(controller::ControllerCommand),
    /// Subscription groups (retry, DLQ and consume settings).
    #[command(subcommand)]
    Group(consumer::GroupCommand),
    /// Each topic's in and out rates and day counts (`mqadmin statsAll`).
    #[command(subcommand)]
    Stats(StatsCommand),
    /// ACL 2.0 users.
    #[command(subcommand)]
    User(auth::UserCommand),
    /// ACL 2.0 ACLs: what each user may do.
    #[command(subcommand)]
    Acl(auth::AclCommand),
}

#[derive(Debug, Subcommand)]
enum TopicCommand {
    /// Create or update a topic on one broker, on a cluster's masters, or
    /// (with neither option) on every registered master.
    Create(CreateTopicArgs),
    /// Delete a topic from a cluster's masters and from the name servers
    /// (`mqadmin deleteTopic`): its queues and every group's offsets of it
    /// go at once; its records stay in the CommitLog until retention.
    Delete {
        /// The topic to delete.
        #[arg(short = 't', long)]
        topic: String,
        /// Delete it from every broker of this cluster (and its route from the name servers).
        #[arg(short = 'c', long)]
        cluster: String,
    },
    /// List every topic the name server knows.
    List,
    /// Print a topic's route as JSON.
    Route {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
    },
    /// Each queue's offsets and last store time on every master of the
    /// topic (`mqadmin topicStatus`).
    Status {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
    },
}

#[derive(Debug, Args)]
struct CreateTopicArgs {
    /// The topic to create (or update).
    #[arg(short = 't', long)]
    topic: String,
    /// Create on the masters of this cluster.
    #[arg(short = 'c', long, conflicts_with = "broker_addr")]
    cluster: Option<String>,
    /// Create on this broker only (host:port).
    #[arg(short = 'b', long)]
    broker_addr: Option<String>,
    /// Read queues per broker.
    #[arg(short = 'r', long, default_value_t = 8)]
    read_queues: i32,
    /// Write queues per broker.
    #[arg(short = 'w', long, default_value_t = 8)]
    write_queues: i32,
    /// Permission bits: 2 write, 4 read, 6 both.
    #[arg(short = 'p', long, default_value_t = 6)]
    perm: i32,
    /// Mark the topic ordered.
    #[arg(short = 'o', long)]
    order: bool,
    /// Attributes to set or remove, as mqadmin's `-a`
    /// (`+message.type=PRIORITY`, `+retention.ms=3600000`,
    /// `+retention.bytes=1073741824`, `-key`, comma-separated).
    #[arg(short = 'a', long, default_value = "")]
    attributes: String,
}

#[derive(Debug, Subcommand)]
enum StatsCommand {
    /// Every topic and its consumer groups: accumulation, TPS in and out,
    /// messages in and out over the last day.
    All(stats::StatsAllArgs),
}

#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Brokers of every cluster, with runtime figures when reachable.
    List,
}

/// `describe_error`, saying in words that a topic the name server does not
/// know may not exist.
fn describe_for_topic(admin: &Admin, topic: &str, error: ClientError) -> String {
    match ferrocket_client::namesrv::is_topic_not_exist(&error) {
        true => format!("topic `{topic}` has no route on the name server (does it exist?)"),
        false => describe_error(admin, error),
    }
}

/// Runs one admin command to completion; the error is the message to print.
pub fn run(args: AdminArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(execute(args))
}

async fn execute(args: AdminArgs) -> Result<(), String> {
    let tls = admin_tls(&args)?;
    let credentials = args.account.credentials();
    let config = ferrocket_client::ConnectionConfig {
        request_timeout_ms: ADMIN_REQUEST_TIMEOUT_MS,
        credentials,
        tls,
        ..Default::default()
    };
    let admin = Admin::with_config(&args.namesrv_addr, config).map_err(|e| e.to_string())?;
    let describe = |error: ClientError| describe_error(&admin, error);
    match args.command {
        AdminCommand::Topic(TopicCommand::Create(create)) => {
            create_topic(&admin, create).await.map_err(describe)
        }
        AdminCommand::Topic(TopicCommand::Delete { topic, cluster }) => {
            let addrs = admin
                .delete_topic_in_cluster(&cluster, &topic)
                .await
                .map_err(describe)?;
            println!(
                "deleted topic {topic} from {} and the name servers",
                addrs.join(", ")
            );
            Ok(())
        }
        AdminCommand::Topic(TopicCommand::List) => {
            let mut topics = admin.topic_list().await.map_err(describe)?;
            topics.sort();
            for topic in topics {
                println!("{topic}");
            }
            Ok(())
        }
        AdminCommand::Topic(TopicCommand::Route { topic }) => {
            let route = admin
                .topic_route(&topic)
                .await
                .map_err(|error| describe_for_topic(&admin, &topic, error))?;
            let json = serde_json::to_string_pretty(&route)
                .map_err(|e| format!("cannot print the route: {e}"))?;
            println!("{json}");
            Ok(())
        }
        AdminCommand::Topic(TopicCommand::Status { topic }) => topic_status(&admin, &topic)
            .await
            .map_err(|error| describe_for_topic(&admin, &topic, error)),
        AdminCommand::Cluster(ClusterCommand::List) => cluster_list(&admin).await.map_err(describe),
        AdminCommand::Broker(command) => broker::run(&admin, command).await.map_err(describe),
        AdminCommand::Message(command) => {
            let topic = command.topic().map(str::to_string);
            let found = message::run(&admin, command)
                .await
                .map_err(|error| match &topic {
                    Some(topic) => describe_for_topic(&admin, topic, error),
                    None => describe_error(&admin, error),
                })?;
            if found {
                Ok(())
            } else {
                Err("no message found (QUERY_NOT_FOUND)".to_string())
            }
        }
        AdminCommand::Consumer(command) => consumer::run_consumer(&admin, command)
            .await
            .map_err(describe),
        AdminCommand::Offset(command) => {
            let topic = command.topic().to_string();
            consumer::run_offset(&admin, command)
                .await
                .map_err(|error| describe_for_topic(&admin, &topic, error))
        }
        AdminCommand::Producer(command) => producer::run(&admin, command).await.map_err(describe),
        AdminCommand::Controller(command) => {
            let timeout = Duration::from_millis(ADMIN_REQUEST_TIMEOUT_MS);
            controller::run(&admin, command, timeout).await
        }
        AdminCommand::Stats(StatsCommand::All(args)) => {
            stats::stats_all(&admin, args).await.map_err(describe)
        }
        AdminCommand::User(command) => auth::run_user(&admin, command).await.map_err(describe),
        AdminCommand::Acl(command) => auth::run_acl(&admin, command).await.map_err(describe),
        AdminCommand::Group(command) => {
            consumer::run_group(&admin, command).await.map_err(describe)
        }
    }
}

async fn topic_status(admin: &Admin, topic: &str) -> Result<(), ClientError> {
    let route = admin.topic_route(topic).await?;
    let mut rows = vec![[
        "#Broker Name".to_string(),
        "#QID".into(),
        "#Min Offset".into(),
        "#Max Offset".into(),
        "#Last Updated".into(),
    ]];
    for broker in &route.broker_datas {
        let Some(addr) = broker.master_addr() else {
            continue;
        };
        for (queue, offsets) in admin.topic_stats(addr, topic).await? {
            let updated = match offsets.last_update_timestamp {
                0 => String::new(),
                ms => time::format_local(ms),
            };
            rows.push([
                queue.broker_name.clone(),
                queue.queue_id.to_string(),
                offsets.min_offset.to_string(),
                offsets.max_offset.to_string(),
                updated,
            ]);
        }
    }
    print_table(&rows);
    Ok(())
}

async fn create_topic(admin: &Admin, args: CreateTopicArgs) -> Result<(), ClientError> {
    let options = CreateTopicOptions {
        read_queue_nums: args.read_queues,
        write_queue_nums: args.write_queues,
        perm: args.perm,
        order: args.order,
        attributes: args.attributes,
        ..CreateTopicOptions::default()
    };
    let addrs = match (&args.broker_addr, &args.cluster) {
        (Some(addr), _) => {
            admin.create_topic(addr, &args.topic, &options).await?;
            vec![addr.clone()]
        }
        (None, Some(cluster)) => {
            admin
                .create_topic_in_cluster(cluster, &args.topic, &options)
                .await?
        }
        (None, None) => {
            let brokers = admin.cluster_brokers().await?;
            let masters: Vec<String> = brokers
                .into_iter()
                .filter(|b| b.broker_id == 0)
                .map(|b| b.addr)
                .collect();
            if masters.is_empty() {
                return Err(ClientError::InvalidArgument(
                    "no master broker is registered with the name server".into(),
                ));
            }
            for addr in &masters {
                admin.create_topic(addr, &args.topic, &options).await?;
            }
            masters
        }
    };
    for addr in addrs {
        println!(
            "created topic {} on {addr} (read queues {}, write queues {}, perm {}{})",
            args.topic,
            options.read_queue_nums,
            options.write_queue_nums,
            options.perm,
            if options.order { ", ordered" } else { "" }
        );
    }
    Ok(())
}

async fn cluster_list(admin: &Admin) -> Result<(), ClientError> {
    let brokers = admin.cluster_brokers().await?;
    let mut rows = vec![[
        "Cluster",
        "Broker name",
        "Id",
        "Role",
        "Address",
        "Version",
        "InTPS",
        "OutTPS",
        "Today in",
        "Behind (bytes)",
    ]
    .map(String::from)];
    let mut facts = Vec::with_capacity(brokers.len());
    for broker in &brokers {
        facts.push(broker_facts(admin, broker).await);
    }
    for (broker, fact) in brokers.iter().zip(&facts) {
        // A slave's lag: its master's CommitLog end minus its own.
        let master_end = brokers
            .iter()
            .zip(&facts)
            .find(|(b, _)| b.broker_id == 0 && b.broker_name == broker.broker_name)
            .and_then(|(_, f)| f.commit_log_end);
        let behind = match (broker.broker_id, master_end, fact.commit_log_end) {
            (0, _, _) => "-".to_string(),
            (_, Some(master), Some(own)) => (master - own).max(0).to_string(),
            _ => "?".to_string(),
        };
        let [version, in_tps, out_tps, today] = fact.figures.clone();
        rows.push([
            broker.cluster.clone(),
            broker.broker_name.clone(),
            broker.broker_id.to_string(),
            fact.role.clone(),
            broker.addr.clone(),
            version,
            in_tps,
            out_tps,
            today,
            behind,
        ]);
    }
    print_table(&rows);
    if brokers.is_empty() {
        println!("(no broker registered)");
    }
    Ok(())
}

/// What one broker's runtime info says, for its `cluster list` row.
struct BrokerFacts {
    role: String,
    figures: [String; 4],
    commit_log_end: Option<i64>,
}

async fn broker_facts(admin: &Admin, broker: &BrokerEntry) -> BrokerFacts {
    let timeout = Duration::from_millis(RUNTIME_INFO_TIMEOUT_MS);
    let info = tokio::time::timeout(timeout, admin.broker_runtime_info(&broker.addr)).await;
    let fallback_role = if broker.broker_id == 0 {
        "MASTER"
    } else {
        "SLAVE"
    };
    match info {
        Ok(Ok(table)) => {
            let get = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| table.get(*k))
                    .and_then(|v| v.split_whitespace().next())
                    .unwrap_or("-")
                    .to_string()
            };
            BrokerFacts {
                role: table
                    .get("brokerRole")
                    .cloned()
                    .unwrap_or_else(|| fallback_role.into()),
                figures: [
                    get(&["brokerVersionDesc"]),
                    get(&["putTps"]),
                    get(&["getTransferredTps", "getTransferedTps"]),
                    get(&["msgPutTotalTodayNow"]),
                ],
                commit_log_end: table.get("commitLogMaxOffset").and_then(|v| v.parse().ok()),
            }
        }
        _ => BrokerFacts {
            role: fallback_role.into(),
            figures: ["unreachable", "-", "-", "-"].map(String::from),
            commit_log_end: None,
        },
    }
}

fn print_table<const N: usize>(rows: &[[String; N]]) {
    let mut widths = [0usize; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
}

/// A message naming what could not be reached, e.g. "cannot reach name
/// server at 127.0.0.1:9876: connection refused".
fn describe_error(admin: &Admin, error: ClientError) -> String {
    let role = |addr: &str| {
        if admin.namesrv().addrs().iter().any(|a| a == addr) {
            "name server"
        } else {
            "broker"
        }
    };
    match &error {
        ClientError::Connect { addr, source } => {
            let reason = match source.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut => source.to_string(),
                _ => source.to_string(),
            };
            format!("cannot reach {} at {addr}: {reason}", role(addr))
        }
        ClientError::Timeout { addr, .. }
        | ClientError::Closed { addr, .. }
        | ClientError::Io { addr, .. } => {
            format!("{} at {addr}: {error}", role(addr))
        }
        _ => error.to_string(),
    }
}

//! A system under test: its name server, the bench topic's queues and the
//! master brokers that serve them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ferrocket_client::route::{write_queues, write_queues_limited};
use ferrocket_client::{
    Admin, BrokerEntry, Connection, ConnectionConfig, CreateTopicOptions, MessageQueue,
};
use ferrocket_protocol::body::TopicRouteData;
use ferrocket_protocol::SerializeType;

use crate::args::{HeaderEncoding, WorkloadArgs};
use crate::error::BenchError;
use crate::message::DEFAULT_TOPIC;
use crate::proc_stat::CpuProbe;

/// How long a freshly created topic may take to show up in the route.
pub const ROUTE_WAIT_MS: u64 = 15_000;
/// Pause between route lookups while waiting.
const ROUTE_POLL_MS: u64 = 200;

/// Who to benchmark, before connecting.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// Given by the user; `None`: named after the broker once connected.
    pub label: Option<String>,
    pub namesrv: String,
    pub broker_pids: Vec<u32>,
    pub broker_pid_children: bool,
    pub broker_config: Option<PathBuf>,
    /// Connect over TLS.
    pub tls: bool,
}

/// A prepared target.
#[derive(Debug)]
pub struct Target {
    pub label: String,
    /// What the first master broker says of itself, for the report.
    pub broker: BrokerFacts,
    pub namesrv: String,
    pub topic: String,
    /// Writable queues, ordered by broker then queue id.
    pub queues: Vec<MessageQueue>,
    /// Master address by broker name.
    pub brokers: BTreeMap<String, String>,
    pub connection_config: ConnectionConfig,
    pub broker_cpu: Option<CpuProbe>,
    pub broker_config: Option<BTreeMap<String, String>>,
}

impl Target {
    /// Opens `count` connections to each broker that serves queues.
    pub async fn connect(&self, count: usize) -> Result<Vec<(String, Connection)>, BenchError> {
        let mut out = Vec::new();
        for (name, addr) in &self.brokers {
            if self.queues.iter().all(|q| &q.broker_name != name) {
                continue;
            }
            for _ in 0..count {
                let connection =
                    Connection::connect(addr, self.connection_config.clone(), None).await?;
                out.push((name.clone(), connection));
            }
        }
        Ok(out)
    }
}

/// What a broker's runtime info says that a report should carry.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BrokerFacts {
    /// `brokerVersionDesc`, e.g. `ferrocket-0.1.0` or `V5_3_0`.
    pub version: Option<String>,
    /// `shardCount` (Ferrocket's own key; other brokers have none).
    pub shards: Option<u32>,
}

impl TargetSpec {
    /// The name in messages before the target is connected.
    fn name(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.namesrv)
    }
}

/// The first master's runtime facts; nothing where it does not answer.
async fn broker_facts(admin: &Admin, masters: &[BrokerEntry]) -> BrokerFacts {
    let Some(master) = masters.first() else {
        return BrokerFacts::default();
    };
    match admin.broker_runtime_info(&master.addr).await {
        Ok(table) => BrokerFacts {
            version: table.get("brokerVersionDesc").cloned(),
            shards: table.get("shardCount").and_then(|v| v.parse().ok()),
        },
        Err(_) => BrokerFacts::default(),
    }
}

/// Connects to the name server, creates the topic (unless told not to),
/// waits until its route lists the queues, and checks the broker pids.
pub async fn prepare(spec: &TargetSpec, workload: &WorkloadArgs) -> Result<Target, BenchError> {
    let connection_config = connection_config(workload, spec.tls)?;
    let admin = Admin::with_config(&spec.namesrv, connection_config.clone())?;
    let masters: Vec<_> = admin
        .cluster_brokers()
        .await?
        .into_iter()
        .filter(|b| b.broker_id == 0)
        .collect();
    if masters.is_empty() {
        return Err(BenchError::Setup(format!(
            "{}: no master broker is registered with name server {}",
            spec.name(),
            spec.namesrv
        )));
    }
    if !workload.no_create_topic {
        create_topic(&admin, &masters, spec, workload).await;
    }
    let (route, queues) = route_and_queues(&admin, spec, workload).await?;
    if queues.is_empty() {
        return Err(BenchError::Setup(format!(
            "{}: topic {} has no writable queue on a master broker",
            spec.name(),
            workload.topic
        )));
    }
    let broker = broker_facts(&admin, &masters).await;
    let label = spec.label.clone().unwrap_or_else(|| match &broker.version {
        Some(version) => format!("{version}@{}", spec.namesrv),
        None => spec.namesrv.clone(),
    });
    Ok(Target {
        label,
        broker,
        namesrv: spec.namesrv.clone(),
        topic: workload.topic.clone(),
        queues,
        brokers: master_addrs(&route),
        connection_config,
        broker_cpu: broker_probe(spec)?,
        broker_config: broker_config(spec)?,
    })
}

fn connection_config(workload: &WorkloadArgs, tls: bool) -> Result<ConnectionConfig, BenchError> {
    let tls = match tls {
        true => {
            let settings = ferrocket_tls::TlsSettings::default();
            let config = ferrocket_tls::client_config(&settings, &[])
                .map_err(|e| BenchError::Setup(format!("TLS: {e}")))?;
            Some(config)
        }
        false => None,
    };
    Ok(ConnectionConfig {
        tls,
        request_timeout_ms: workload.timeout_ms,
        serialize_type: match workload.header_encoding {
            HeaderEncoding::Json => SerializeType::Json,
            HeaderEncoding::Rocketmq => SerializeType::RocketMq,
        },
        credentials: workload.credentials(),
        ..ConnectionConfig::default()
    })
}

/// Creates the bench topic on every master; a failure is only a warning.
async fn create_topic(
    admin: &Admin,
    masters: &[BrokerEntry],
    spec: &TargetSpec,
    workload: &WorkloadArgs,
) {
    let options = CreateTopicOptions {
        read_queue_nums: workload.queues,
        write_queue_nums: workload.queues,
        ..CreateTopicOptions::default()
    };
    for master in masters {
        if let Err(error) = admin
            .create_topic(&master.addr, &workload.topic, &options)
            .await
        {
            eprintln!(
                "warning: {}: creating topic {} on {} failed: {error}",
                spec.name(),
                workload.topic,
                master.addr
            );
        }
    }
}

/// The topic's route and writable queues; without topic creation and
/// without a route, those that auto-creation from the template would make.
async fn route_and_queues(
    admin: &Admin,
    spec: &TargetSpec,
    workload: &WorkloadArgs,
) -> Result<(TopicRouteData, Vec<MessageQueue>), BenchError> {
    match wait_for_route(admin, &workload.topic, workload.queues).await {
        Ok(route) => {
            let queues = write_queues(&workload.topic, &route);
            Ok((route, queues))
        }
        Err(error) if workload.no_create_topic => {
            // Auto-creation: the template topic says which brokers accept it.
            eprintln!(
                "note: {}: no route for {} ({error}); relying on auto-creation from {DEFAULT_TOPIC}",
                spec.name(), workload.topic
            );
            let route = admin.topic_route(DEFAULT_TOPIC).await?;
            let per_broker = usize::try_from(workload.queues).unwrap_or(1);
            let queues = write_queues_limited(&workload.topic, &route, per_broker);
            Ok((route, queues))
        }
        Err(error) => Err(error),
    }
}

/// A CPU probe of the broker pids, checked, where any are given.
fn broker_probe(spec: &TargetSpec) -> Result<Option<CpuProbe>, BenchError> {
    if spec.broker_pids.is_empty() {
        return Ok(None);
    }
    let probe = CpuProbe::new(spec.broker_pids.clone(), spec.broker_pid_children);
    probe.check()?;
    Ok(Some(probe))
}

/// The broker's configuration file, where one is given.
fn broker_config(spec: &TargetSpec) -> Result<Option<BTreeMap<String, String>>, BenchError> {
    let Some(path) = &spec.broker_config else {
        return Ok(None);
    };
    crate::host::read_properties(path)
        .map(Some)
        .map_err(|e| BenchError::io(path.display().to_string(), e))
}

/// Polls the route until every broker lists `queues` write queues (or the
/// wait ends; then whatever route exists is used).
async fn wait_for_route(
    admin: &Admin,
    topic: &str,
    queues: i32,
) -> Result<TopicRouteData, BenchError> {
    let deadline = Instant::now() + Duration::from_millis(ROUTE_WAIT_MS);
    loop {
        let result = admin.topic_route(topic).await;
        let complete = match &result {
            Ok(route) => {
                !route.queue_datas.is_empty()
                    && route
                        .queue_datas
                        .iter()
                        .all(|q| q.write_queue_nums == queues)
            }
            Err(_) => false,
        };
        if complete || Instant::now() >= deadline {
            return match result {
                Ok(route) if !route.queue_datas.is_empty() => {
                    if !complete {
                        eprintln!(
                            "warning: the route of {topic} does not show {queues} write queues on every broker; using it as it is"
                        );
                    }
                    Ok(route)
                }
                Ok(_) => Err(BenchError::Setup(format!(
                    "the route of {topic} lists no queues"
                ))),
                Err(error) => Err(error.into()),
            };
        }
        tokio::time::sleep(Duration::from_millis(ROUTE_POLL_MS)).await;
    }
}

/// Master address of every broker set in `route`.
pub fn master_addrs(route: &TopicRouteData) -> BTreeMap<String, String> {
    route
        .broker_datas
        .iter()
        .filter_map(|b| {
            b.master_addr()
                .map(|a| (b.broker_name.clone(), a.to_string()))
        })
        .collect()
}

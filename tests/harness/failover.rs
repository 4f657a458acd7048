//! Controller mode with real processes: controllers (one or three), brokers
//! of one set in controller mode, and what the tests ask them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ferrocket_protocol::body::{decode_json, encode_json, BrokerReplicasInfo, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use super::requests::{pull_request, send_header, send_request};
use super::{free_port, Broker, BrokerOpts, Namesrv, RemotingConn, ServerProcess};

/// The broker set every failover test uses.
pub const SET: &str = "failover-set";
pub const QUEUES: i32 = 4;

/// Starts `count` controllers as one Raft group (`n0`, `n1`, ...).
pub fn controllers(dir: &Path, count: usize) -> Vec<ServerProcess> {
    controllers_with(dir, count, &[])
}

/// [`controllers`] with more `key=value` settings, the same on each.
pub fn controllers_with(dir: &Path, count: usize, more: &[String]) -> Vec<ServerProcess> {
    let ports: Vec<u16> = (0..count).map(|_| free_port()).collect();
    let peers: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| format!("n{i}-127.0.0.1:{port}"))
        .collect();
    let peers = peers.join(";");
    ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let store = dir.join(format!("controller-n{i}"));
            let args: Vec<String> = [
                "controller".to_string(),
                "--set".into(),
                format!("controllerDLegerPeers={peers}"),
                "--set".into(),
                format!("controllerDLegerSelfId=n{i}"),
                "--set".into(),
                format!("controllerStorePath={}", store.display()),
            ]
            .into_iter()
            .chain(more.iter().flat_map(|s| ["--set".to_string(), s.clone()]))
            .collect();
            ServerProcess::start("controller", &args, dir, *port).unwrap()
        })
        .collect()
}

/// `host:port;host:port` of the controllers still listed.
pub fn controller_addr(controllers: &[ServerProcess]) -> String {
    let addrs: Vec<&str> = controllers.iter().map(|c| c.addr()).collect();
    addrs.join(";")
}

/// A broker of [`SET`] in controller mode, `allAckInSyncStateSet=true`;
/// role and in-sync checks every second, or every `FAILOVER_PERIOD_MS`
/// (Java's default is 5000).
pub fn controller_broker(namesrv: &Namesrv, controller_addr: &str) -> Broker {
    controller_broker_with(namesrv, controller_addr, &[])
}

/// [`controller_broker`] with more `key=value` settings.
pub fn controller_broker_with(namesrv: &Namesrv, controller_addr: &str, more: &[&str]) -> Broker {
    let period = std::env::var("FAILOVER_PERIOD_MS").unwrap_or_else(|_| "1000".into());
    let mut extra = [
        "enableControllerMode=true".to_string(),
        format!("controllerAddr={controller_addr}"),
        format!("haListenPort={}", free_port()),
        "allAckInSyncStateSet=true".into(),
        format!("syncBrokerMetadataPeriod={period}"),
        format!("checkSyncStateSetPeriod={period}"),
        "slaveTimeout=3000".into(),
    ]
    .to_vec();
    extra.extend(more.iter().map(|s| s.to_string()));
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(SET.into()),
            extra_args: extra
                .iter()
                .flat_map(|s| ["--set".to_string(), s.clone()])
                .collect(),
            ..BrokerOpts::default()
        },
    )
}

/// The set as the leading controller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetState {
    pub in_sync: BTreeSet<i64>,
    pub master: Option<i64>,
    pub master_epoch: i32,
    pub master_address: Option<String>,
}

/// Asks each controller in `addrs` (`;`-separated) until the leader answers.
pub fn sync_state(addrs: &str) -> Option<SetState> {
    addrs.split(';').find_map(|addr| {
        let mut conn = RemotingConn::connect(addr).ok()?;
        let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
            .with_body(encode_json(&vec![SET.to_string()]));
        let answer = conn.request(request);
        if answer.code != response_code::SUCCESS {
            return None;
        }
        let info: BrokerReplicasInfo = decode_json(&answer.body).ok()?;
        let set = info.replicas_info_table.get(SET)?;
        Some(SetState {
            in_sync: set.in_sync_replicas.iter().map(|r| r.broker_id).collect(),
            master: set.master_broker_id,
            master_epoch: set.master_epoch,
            master_address: set.master_address.clone(),
        })
    })
}

/// Sends `body` to queue `n % QUEUES` of `topic`, waiting for replicas
/// unless `wait` is false; the answer's code, or -1 when the connection
/// failed (the broker died).
pub fn send(conn: &mut RemotingConn, topic: &str, n: usize, body: String, wait: bool) -> i32 {
    let mut header = send_header("failover-producer", topic, (n % QUEUES as usize) as i32);
    if !wait {
        header.properties = Some("WAIT\u{1}false\u{2}".into());
    }
    conn.try_request(send_request(&header, body))
        .map_or(-1, |answer| answer.code)
}

/// `commitLogMaxOffset` of a broker.
pub fn commit_log_end(broker: &Broker) -> Option<i64> {
    let mut conn = RemotingConn::connect(broker.addr()).ok()?;
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    value["table"]["commitLogMaxOffset"].as_str()?.parse().ok()
}

/// The CommitLog bytes below `end` of the store at `dir` (test segments).
pub fn log_bytes(dir: &Path, end: i64) -> Vec<u8> {
    let seg = super::TEST_COMMIT_LOG_SEGMENT_BYTES as i64;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < end {
        let file = std::fs::read(dir.join("commitlog").join(format!("{pos:020}"))).unwrap();
        let upto = end.min(pos + seg);
        out.extend_from_slice(&file[..(upto - pos) as usize]);
        pos = upto;
    }
    out
}

/// Every body in the topic's queues on `broker`.
pub fn bodies(broker: &Broker, topic: &str) -> BTreeSet<String> {
    let mut conn = broker.connect();
    let mut out = BTreeSet::new();
    for queue_id in 0..QUEUES {
        let mut offset = 0;
        loop {
            let request = pull_request("failover-consumer", topic, queue_id, offset, 32, 0);
            let answer = conn.request(request);
            if answer.code != response_code::SUCCESS {
                break;
            }
            for record in records(&answer.body, true) {
                out.insert(String::from_utf8_lossy(record.unwrap().body).into_owned());
            }
            offset = answer
                .ext_fields
                .get("nextBeginOffset")
                .unwrap()
                .parse()
                .unwrap();
        }
    }
    out
}

/// The set's addresses by broker id in the name server's route for
/// `topic` (`None`: the set is not in the route).
pub fn routed_set(namesrv: &str, topic: &str) -> Option<BTreeMap<i64, String>> {
    let mut request = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC);
    request.ext_fields.insert("topic", topic);
    let answer = RemotingConn::connect_timeout(namesrv, std::time::Duration::from_secs(1))
        .ok()?
        .try_request(request)?;
    if answer.code != response_code::SUCCESS {
        return None;
    }
    let route: TopicRouteData = decode_json(&answer.body).ok()?;
    let broker = route.broker_datas.iter().find(|b| b.broker_name == SET)?;
    Some(broker.broker_addrs.clone())
}

/// The master address the name server routes `topic` to (`None`: no
/// route, or a route without a master).
pub fn routed_master(namesrv: &str, topic: &str) -> Option<String> {
    routed_set(namesrv, topic)?.get(&0).cloned()
}

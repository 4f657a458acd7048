//! The name server binary's KV config across restarts (`kvConfigPath`) and
//! compressed broker registrations, over real processes.

mod harness;

use std::io::Write;

use ferrocket_protocol::body::{decode_json, KvTable, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::{Namesrv, NamesrvOpts, RemotingConn, ServerProcess};

fn put(conn: &mut RemotingConn, namespace: &str, key: &str, value: &str) {
    let response = conn.request(
        RemotingCommand::request(request_code::PUT_KV_CONFIG)
            .with_ext("namespace", namespace)
            .with_ext("key", key)
            .with_ext("value", value),
    );
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
}

fn delete(conn: &mut RemotingConn, namespace: &str, key: &str) {
    let response = conn.request(
        RemotingCommand::request(request_code::DELETE_KV_CONFIG)
            .with_ext("namespace", namespace)
            .with_ext("key", key),
    );
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
}

fn get(conn: &mut RemotingConn, namespace: &str, key: &str) -> RemotingCommand {
    conn.request(
        RemotingCommand::request(request_code::GET_KV_CONFIG)
            .with_ext("namespace", namespace)
            .with_ext("key", key),
    )
}

fn list(conn: &mut RemotingConn, namespace: &str) -> RemotingCommand {
    conn.request(
        RemotingCommand::request(request_code::GET_KVLIST_BY_NAMESPACE)
            .with_ext("namespace", namespace),
    )
}

fn value_of(response: &RemotingCommand) -> Option<&str> {
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    response.ext_fields.get("value")
}

#[test]
fn kv_config_survives_restarts_in_the_default_place() {
    let opts = NamesrvOpts::default();
    let mut namesrv = Namesrv::start_with(opts.clone());
    let mut conn = namesrv.connect();
    put(&mut conn, "ns", "k1", "v1");
    put(&mut conn, "ns", "k2", "v2");
    put(&mut conn, "other", "a", "b");
    delete(&mut conn, "ns", "k2");
    drop(conn);

    // RocketMQ's layout under the home directory.
    let file = namesrv.home().join("namesrv").join("kvConfig.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"configTable": {"ns": {"k1": "v1"}, "other": {"a": "b"}}})
    );

    namesrv.restart_with(&opts);
    let mut conn = namesrv.connect();
    assert_eq!(value_of(&get(&mut conn, "ns", "k1")), Some("v1"));
    let missing = get(&mut conn, "ns", "k2");
    assert_eq!(missing.code, response_code::QUERY_NOT_FOUND);
    assert_eq!(
        missing.remark.as_deref(),
        Some("No config item, Namespace: ns Key: k2")
    );
    let table = list(&mut conn, "ns");
    assert_eq!(table.code, response_code::SUCCESS);
    let table: KvTable = decode_json(&table.body).unwrap();
    assert_eq!(
        table.table.into_iter().collect::<Vec<_>>(),
        [("k1".to_string(), "v1".to_string())]
    );

    // Deleting the last key of a namespace persists too.
    delete(&mut conn, "other", "a");
    drop(conn);
    namesrv.restart_with(&opts);
    let mut conn = namesrv.connect();
    let gone = list(&mut conn, "other");
    assert_eq!(gone.code, response_code::QUERY_NOT_FOUND);
    assert_eq!(
        gone.remark.as_deref(),
        Some("No config item, Namespace: other")
    );
    assert_eq!(value_of(&get(&mut conn, "ns", "k1")), Some("v1"));
}

#[test]
fn kv_config_path_is_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom").join("kv.json");
    let opts = NamesrvOpts {
        extra_args: vec!["--set".into(), format!("kvConfigPath={}", path.display())],
        ..Default::default()
    };
    let mut namesrv = Namesrv::start_with(opts.clone());
    put(&mut namesrv.connect(), "ns", "k", "v");
    assert!(path.exists());
    assert!(!namesrv.home().join("namesrv").exists());

    namesrv.restart_with(&opts);
    assert_eq!(value_of(&get(&mut namesrv.connect(), "ns", "k")), Some("v"));
}

#[test]
fn corrupt_kv_config_stops_the_start_naming_the_file() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("namesrv").join("kvConfig.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"configTable\": [").unwrap();
    let args = harness::namesrv_args(harness::free_port(), &NamesrvOpts::default());
    let mut process = ServerProcess::spawn("namesrv", &args, home.path()).unwrap();
    let status = process
        .wait_exit(harness::ready_timeout())
        .expect("namesrv with a corrupt KV file kept running");
    assert!(!status.success());
    let output = process.output();
    assert!(output.contains(&path.display().to_string()), "{output}");
    assert!(output.contains("corrupt"), "{output}");
    // The file is left as it was for the operator to look at.
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"configTable\": ["
    );
}

/// A REGISTER_BROKER body as a Java broker builds it with `compressed=true`
/// (`RegisterBrokerBody.encode(true)`): zlib over big-endian length-prefixed
/// parts.
fn compressed_body(topics: &[(&str, i32, i32)]) -> Vec<u8> {
    fn item(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    let mut plain = Vec::new();
    item(
        &mut plain,
        br#"{"counter":2,"stateVersion":0,"timestamp":1700000000000}"#,
    );
    plain.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (name, queues, perm) in topics {
        let line = format!("{name} {queues} {queues} {perm} SINGLE_TAG {{}}");
        item(&mut plain, line.as_bytes());
    }
    item(&mut plain, b"[]");
    plain.extend_from_slice(&0i32.to_be_bytes());
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&plain).unwrap();
    encoder.finish().unwrap()
}

fn route(conn: &mut RemotingConn, topic: &str) -> RemotingCommand {
    conn.request(harness::remoting::route_request(topic))
}

#[test]
fn compressed_registration_is_accepted_and_routed() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    let broker_addr = "127.0.0.1:10911";
    let request = RemotingCommand::request(request_code::REGISTER_BROKER)
        .with_ext("brokerName", "broker-z")
        .with_ext("brokerAddr", broker_addr)
        .with_ext("clusterName", "ZipCluster")
        .with_ext("haServerAddr", "")
        .with_ext("brokerId", 0)
        .with_ext("compressed", true)
        .with_ext("bodyCrc32", 0)
        .with_body(compressed_body(&[
            ("ZipTopic", 6, 6),
            ("broker-z", 1, 7),
            ("ZipCluster", 1, 7),
        ]));
    let response = conn.request(request);
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );

    let found = route(&mut conn, "ZipTopic");
    assert_eq!(found.code, response_code::SUCCESS, "{:?}", found.remark);
    let data: TopicRouteData = decode_json(&found.body).unwrap();
    assert_eq!(data.queue_datas.len(), 1);
    let queues = &data.queue_datas[0];
    assert_eq!(queues.broker_name, "broker-z");
    assert_eq!(
        (queues.read_queue_nums, queues.write_queue_nums, queues.perm),
        (6, 6, 6)
    );
    assert_eq!(
        data.broker_datas[0]
            .broker_addrs
            .get(&0)
            .map(String::as_str),
        Some(broker_addr)
    );

    // A compressed body that is not zlib is refused with a clear remark.
    let bad = RemotingCommand::request(request_code::REGISTER_BROKER)
        .with_ext("brokerName", "broker-y")
        .with_ext("brokerAddr", "127.0.0.1:10921")
        .with_ext("clusterName", "ZipCluster")
        .with_ext("brokerId", 0)
        .with_ext("compressed", true)
        .with_body(&b"{\"plain\":\"json\"}"[..]);
    let refused = conn.request(bad);
    assert_eq!(refused.code, response_code::SYSTEM_ERROR);
    let remark = refused.remark.unwrap_or_default();
    assert!(
        remark.contains("Failed to decode RegisterBrokerBody"),
        "{remark}"
    );
    assert_eq!(route(&mut conn, "ZipTopic").code, response_code::SUCCESS);
}

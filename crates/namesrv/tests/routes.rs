//! Name server behaviour over real 127.0.0.1 sockets: registration, routes,
//! cluster info, topic lists, unregistration, expiry, KV config.

mod common;

use common::*;
use ferrocket_namesrv::NamesrvConfig;
use ferrocket_protocol::body::{
    decode_json, encode_json, perm, ClusterInfo, DataVersion, KvTable, TopicList, TopicRouteData,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

const BROKER_A: &str = "127.0.0.1:10911";
const BROKER_B: &str = "127.0.0.1:10921";

#[test]
fn registered_topics_have_routes() {
    let namesrv = start_namesrv();
    let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
    let response = broker.request(register_request(
        "DefaultCluster",
        "broker-a",
        BROKER_A,
        &[
            ("TopicTest", 4, perm::READ_WRITE),
            ("Orders", 8, perm::READ),
        ],
    ));
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    let kv: KvTable = decode_json(&response.body).unwrap();
    assert!(kv.table.is_empty());

    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    let response = client.request(route_request("TopicTest"));
    assert_eq!(response.code, response_code::SUCCESS);
    let json = String::from_utf8(response.body.to_vec()).unwrap();
    assert!(
        json.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#),
        "{json}"
    );
    let route: TopicRouteData = decode_json(&response.body).unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    let queues = &route.queue_datas[0];
    assert_eq!(queues.broker_name, "broker-a");
    assert_eq!((queues.read_queue_nums, queues.write_queue_nums), (4, 4));
    assert_eq!(queues.perm, perm::READ_WRITE);
    assert_eq!(route.broker_datas.len(), 1);
    assert_eq!(route.broker_datas[0].cluster, "DefaultCluster");
    assert_eq!(route.broker_datas[0].broker_addrs, addrs(&[(0, BROKER_A)]));
    assert_eq!(route.order_topic_conf, None);

    let route: TopicRouteData = decode_json(&client.request(route_request("Orders")).body).unwrap();
    assert_eq!(route.queue_datas[0].read_queue_nums, 8);
    assert_eq!(route.queue_datas[0].perm, perm::READ);
}

#[test]
fn unknown_topic_is_topic_not_exist() {
    let namesrv = start_namesrv();
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    let response = client.request(route_request("Nope"));
    assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
    assert_eq!(
        response.remark.as_deref(),
        Some("No topic route info in name server for the topic: Nope")
    );
    assert!(response.body.is_empty());
}

#[test]
fn cluster_info_and_topic_lists() {
    let namesrv = start_namesrv();
    let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
    let rw = perm::READ_WRITE;
    broker.request(register_request(
        "c1",
        "broker-a",
        BROKER_A,
        &[("T1", 4, rw), ("T2", 4, rw)],
    ));
    broker.request(register_request(
        "c2",
        "broker-b",
        BROKER_B,
        &[("T2", 2, rw), ("T3", 2, rw)],
    ));

    let response = broker.request(RemotingCommand::request(
        request_code::GET_BROKER_CLUSTER_INFO,
    ));
    let info: ClusterInfo = decode_json(&response.body).unwrap();
    assert_eq!(info.broker_addr_table.len(), 2);
    assert_eq!(
        info.broker_addr_table["broker-b"].broker_addrs,
        addrs(&[(0, BROKER_B)])
    );
    assert!(info.cluster_addr_table["c1"].contains("broker-a"));
    assert!(info.cluster_addr_table["c2"].contains("broker-b"));

    let all = broker.request(RemotingCommand::request(
        request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    ));
    let all: TopicList = decode_json(&all.body).unwrap();
    assert_eq!(
        all.topic_list.into_iter().collect::<Vec<_>>(),
        ["T1", "T2", "T3"]
    );

    let by_cluster = |client: &mut RemotingConn, cluster: &str| -> Vec<String> {
        let request = RemotingCommand::request(request_code::GET_TOPICS_BY_CLUSTER)
            .with_ext("cluster", cluster);
        let response = client.request(request);
        assert_eq!(response.code, response_code::SUCCESS);
        let list: TopicList = decode_json(&response.body).unwrap();
        list.topic_list.into_iter().collect()
    };
    assert_eq!(by_cluster(&mut broker, "c1"), ["T1", "T2"]);
    assert_eq!(by_cluster(&mut broker, "c2"), ["T2", "T3"]);
    assert!(by_cluster(&mut broker, "c9").is_empty());

    // Deleting a topic in one cluster keeps its other cluster's queues.
    let delete = RemotingCommand::request(request_code::DELETE_TOPIC_IN_NAMESRV)
        .with_ext("topic", "T2")
        .with_ext("clusterName", "c1");
    assert_eq!(broker.request(delete).code, response_code::SUCCESS);
    let route: TopicRouteData = decode_json(&broker.request(route_request("T2")).body).unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "broker-b");
    let delete =
        RemotingCommand::request(request_code::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "T2");
    assert_eq!(broker.request(delete).code, response_code::SUCCESS);
    assert_eq!(
        broker.request(route_request("T2")).code,
        response_code::TOPIC_NOT_EXIST
    );
}

#[test]
fn unregister_removes_routes() {
    let namesrv = start_namesrv();
    let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
    let rw = perm::READ_WRITE;
    broker.request(register_request(
        "c1",
        "broker-a",
        BROKER_A,
        &[("T1", 4, rw), ("T2", 4, rw)],
    ));
    assert_eq!(
        broker.request(route_request("T1")).code,
        response_code::SUCCESS
    );
    let unregister = RemotingCommand::request(request_code::UNREGISTER_BROKER)
        .with_ext("brokerName", "broker-a")
        .with_ext("brokerAddr", BROKER_A)
        .with_ext("clusterName", "c1")
        .with_ext("brokerId", 0);
    assert_eq!(broker.request(unregister).code, response_code::SUCCESS);
    assert_eq!(
        broker.request(route_request("T1")).code,
        response_code::TOPIC_NOT_EXIST
    );
    let info = broker.request(RemotingCommand::request(
        request_code::GET_BROKER_CLUSTER_INFO,
    ));
    let info: ClusterInfo = decode_json(&info.body).unwrap();
    assert!(info.broker_addr_table.is_empty() && info.cluster_addr_table.is_empty());
}

#[test]
fn silent_broker_expires() {
    let namesrv = start_with(NamesrvConfig {
        listen_port: 0,
        broker_expiry_ms: 300,
        scan_interval_ms: 50,
        ..NamesrvConfig::default()
    });
    let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
    let rw = perm::READ_WRITE;
    broker.request(register_request(
        "c1",
        "broker-a",
        BROKER_A,
        &[("T1", 4, rw), ("T2", 4, rw)],
    ));
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    eventually("the silent broker's routes to go", || {
        client.request(route_request("T1")).code == response_code::TOPIC_NOT_EXIST
    });
    let info = client.request(RemotingCommand::request(
        request_code::GET_BROKER_CLUSTER_INFO,
    ));
    let info: ClusterInfo = decode_json(&info.body).unwrap();
    assert!(info.broker_addr_table.is_empty());
}

#[test]
fn closing_the_registration_connection_unregisters() {
    let namesrv = start_namesrv();
    let rw = perm::READ_WRITE;
    {
        let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
        broker.request(register_request(
            "c1",
            "broker-a",
            BROKER_A,
            &[("T1", 4, rw), ("T2", 4, rw)],
        ));
    }
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    eventually("routes of the disconnected broker to go", || {
        client.request(route_request("T1")).code == response_code::TOPIC_NOT_EXIST
    });
}

#[test]
fn kv_config_put_get_delete_and_order_topic_conf() {
    let namesrv = start_namesrv();
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    let get = |client: &mut RemotingConn, ns: &str, key: &str| {
        client.request(kv_request(request_code::GET_KV_CONFIG, ns, key))
    };
    let missing = get(&mut client, "ns", "k");
    assert_eq!(missing.code, response_code::QUERY_NOT_FOUND);
    assert_eq!(
        missing.remark.as_deref(),
        Some("No config item, Namespace: ns Key: k")
    );

    let put = kv_request(request_code::PUT_KV_CONFIG, "ns", "k").with_ext("value", "v1");
    assert_eq!(client.request(put).code, response_code::SUCCESS);
    let found = get(&mut client, "ns", "k");
    assert_eq!(found.code, response_code::SUCCESS);
    assert_eq!(found.ext_fields.get("value"), Some("v1"));

    let list =
        RemotingCommand::request(request_code::GET_KVLIST_BY_NAMESPACE).with_ext("namespace", "ns");
    let table: KvTable = decode_json(&client.request(list.clone()).body).unwrap();
    assert_eq!(table.table.get("k").map(String::as_str), Some("v1"));

    let delete = kv_request(request_code::DELETE_KV_CONFIG, "ns", "k");
    assert_eq!(client.request(delete).code, response_code::SUCCESS);
    assert_eq!(
        get(&mut client, "ns", "k").code,
        response_code::QUERY_NOT_FOUND
    );
    assert_eq!(client.request(list).code, response_code::QUERY_NOT_FOUND);

    // Order topic configs ride along with routes and registrations.
    let put = kv_request(request_code::PUT_KV_CONFIG, "ORDER_TOPIC_CONFIG", "T1")
        .with_ext("value", "broker-a:4");
    client.request(put);
    let rw = perm::READ_WRITE;
    let registered = client.request(register_request(
        "c1",
        "broker-a",
        BROKER_A,
        &[("T1", 4, rw), ("T2", 4, rw)],
    ));
    let table: KvTable = decode_json(&registered.body).unwrap();
    assert_eq!(
        table.table.get("T1").map(String::as_str),
        Some("broker-a:4")
    );
    let route: TopicRouteData = decode_json(&client.request(route_request("T1")).body).unwrap();
    assert_eq!(route.order_topic_conf.as_deref(), Some("broker-a:4"));
}

#[test]
fn data_version_heartbeat_and_write_perm() {
    let namesrv = start_namesrv();
    let mut broker = RemotingConn::connect(namesrv.addr()).unwrap();
    let rw = perm::READ_WRITE;
    broker.request(register_request(
        "c1",
        "broker-a",
        BROKER_A,
        &[("T1", 4, rw), ("T2", 4, rw)],
    ));
    let registered = register_body(&[])
        .topic_config_serialize_wrapper
        .data_version;
    let query = |broker: &mut RemotingConn, version: &DataVersion| {
        let request = RemotingCommand::request(request_code::QUERY_DATA_VERSION)
            .with_ext("brokerName", "broker-a")
            .with_ext("brokerAddr", BROKER_A)
            .with_ext("clusterName", "c1")
            .with_ext("brokerId", 0)
            .with_body(encode_json(version));
        broker.request(request)
    };
    let same = query(&mut broker, &registered);
    assert_eq!(same.ext_fields.get("changed"), Some("false"));
    assert_eq!(decode_json::<DataVersion>(&same.body).unwrap(), registered);
    let newer = DataVersion {
        counter: 2,
        ..registered
    };
    assert_eq!(
        query(&mut broker, &newer).ext_fields.get("changed"),
        Some("true")
    );

    let heartbeat = RemotingCommand::request(request_code::BROKER_HEARTBEAT)
        .with_ext("clusterName", "c1")
        .with_ext("brokerAddr", BROKER_A)
        .with_ext("brokerName", "broker-a");
    assert_eq!(broker.request(heartbeat).code, response_code::SUCCESS);

    let wipe = RemotingCommand::request(request_code::WIPE_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "broker-a");
    assert_eq!(
        broker.request(wipe).ext_fields.get("wipeTopicCount"),
        Some("2")
    );
    let route: TopicRouteData = decode_json(&broker.request(route_request("T1")).body).unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    let add = RemotingCommand::request(request_code::ADD_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "broker-a");
    assert_eq!(
        broker.request(add).ext_fields.get("addTopicCount"),
        Some("2")
    );
    let route: TopicRouteData = decode_json(&broker.request(route_request("T1")).body).unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ_WRITE);
}

#[test]
fn two_name_servers_side_by_side() {
    let first = start_namesrv();
    let second = start_namesrv();
    assert_ne!(first.addr(), second.addr());
    let rw = perm::READ_WRITE;
    let mut brokers: Vec<RemotingConn> = [&first, &second]
        .iter()
        .map(|n| RemotingConn::connect(n.addr()).unwrap())
        .collect();
    for broker in &mut brokers {
        let response = broker.request(register_request(
            "c1",
            "broker-a",
            BROKER_A,
            &[("T1", 4, rw), ("T2", 4, rw)],
        ));
        assert_eq!(response.code, response_code::SUCCESS);
    }
    for namesrv in [&first, &second] {
        let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
        let route: TopicRouteData = decode_json(&client.request(route_request("T1")).body).unwrap();
        assert_eq!(route.broker_datas[0].broker_addrs, addrs(&[(0, BROKER_A)]));
    }
    // Stopping one leaves the other serving.
    first.stop().unwrap();
    let mut client = RemotingConn::connect(second.addr()).unwrap();
    assert_eq!(
        client.request(route_request("T2")).code,
        response_code::SUCCESS
    );
}

#[test]
fn binding_a_busy_port_fails_cleanly() {
    let first = start_namesrv();
    let result = ferrocket_namesrv::start(NamesrvConfig {
        listen_port: first.addr().port(),
        ..NamesrvConfig::default()
    });
    assert!(matches!(
        result,
        Err(ferrocket_namesrv::NamesrvError::Bind { .. })
    ));
}

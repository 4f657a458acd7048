//! `fastListenPortEnable`: the broker also serves on `listenPort - 2`, the
//! Java broker's "fast" (VIP channel) port, where a Java slave asks its
//! master for topics and timer state (`BrokerOuterAPI.getAllTopicConfig`
//! uses `MixAll.brokerVIPChannel(true, addr)`).

mod common;

use std::net::{SocketAddr, TcpListener};

use common::*;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

/// A port P with P - 2 free too.
fn port_with_fast_free() -> u16 {
    loop {
        let port = free_port();
        if port > 2 && TcpListener::bind(("127.0.0.1", port - 2)).is_ok() {
            return port;
        }
    }
}

#[test]
fn the_fast_port_serves_what_the_main_port_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 2);
    config.listen_port = port_with_fast_free();
    config.fast_listen_port_enable = true;
    let broker = Broker::start(config);
    let fast = SocketAddr::new(broker.addr.ip(), broker.addr.port() - 2);

    let mut on_fast = connect(fast);
    on_fast.create_topic("FastT", 2);
    on_fast.send_ok("FastT", 1, b"through the fast port", &props(&[]));
    let answer = on_fast.request(RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG));
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    let table: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(table["topicConfigTable"]["FastT"]["readQueueNums"], 2);

    let pulled = broker.client().pull_all("FastG", "FastT", 1, "*");
    assert_eq!(pulled.len(), 1);
    assert_eq!(pulled[0].body, b"through the fast port");
    broker.stop();
}

#[test]
fn without_the_setting_nothing_listens_on_the_fast_port() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 1);
    config.listen_port = port_with_fast_free();
    let broker = Broker::start(config);
    let fast = SocketAddr::new(broker.addr.ip(), broker.addr.port() - 2);
    assert!(std::net::TcpStream::connect(fast).is_err());
    broker.stop();
}

#[test]
fn a_taken_fast_port_stops_the_start_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 1);
    let port = port_with_fast_free();
    let _taken = TcpListener::bind(("127.0.0.1", port - 2)).unwrap();
    config.listen_port = port;
    config.fast_listen_port_enable = true;
    let error = ferrocket_broker::run(config, Default::default(), Default::default()).unwrap_err();
    assert!(
        error.to_string().contains("fastListenPortEnable"),
        "{error}"
    );
}

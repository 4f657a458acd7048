use std::time::{Duration, Instant};

use ferrocket_protocol::body::{perm, TopicConfig, TopicConfigSerializeWrapper};

use super::*;

const EXPIRY: Duration = Duration::from_secs(120);
const ON: ActingSettings = ActingSettings {
    support_acting_master: true,
    notify_min_broker_id_changed: true,
};

fn reg(addr: &str, id: i64, acting: Option<bool>) -> Registration {
    let mut topics = TopicConfigSerializeWrapper::default();
    // Two topics: a table of one is a single-topic registration.
    for topic in ["T", "U"] {
        (topics.topic_config_table).insert(topic.into(), TopicConfig::new(topic, 4));
    }
    topics.data_version.counter = 1;
    Registration {
        cluster: "c1".into(),
        broker_addr: addr.into(),
        broker_name: "a".into(),
        broker_id: id,
        ha_server_addr: Some(format!("{addr}-ha")),
        topics,
        enable_acting_master: acting,
        ..Registration::default()
    }
}

fn key(addr: &str) -> BrokerAddrKey {
    BrokerAddrKey {
        cluster: "c1".into(),
        addr: addr.into(),
    }
}

/// A master and two slaves of set `a`, all with `enableActingMaster`.
fn set_of_three(settings: ActingSettings) -> RouteTable {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false).with_acting(settings);
    for (addr, id) in [("m:1", 0), ("s:1", 1), ("s:2", 2)] {
        table
            .register_broker(reg(addr, id, Some(true)), now)
            .unwrap();
    }
    table
}

#[test]
fn master_gone_routes_the_lowest_slave_read_only_as_id_0() {
    let mut table = set_of_three(ON);
    let route = table.topic_route("T").unwrap();
    assert!(route.broker_datas[0].enable_acting_master);
    assert_eq!(route.queue_datas[0].perm, perm::READ_WRITE);
    assert!(
        table.take_notices().is_empty(),
        "no change of the lowest id yet"
    );

    table.remove_broker_process(&key("m:1"));
    let route = table.topic_route("T").unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    let addrs = &route.broker_datas[0].broker_addrs;
    assert_eq!(addrs.get(&0).map(String::as_str), Some("s:1"));
    assert_eq!(addrs.get(&2).map(String::as_str), Some("s:2"));
    assert!(!addrs.contains_key(&1));
    let group = table.member_group("c1", "a");
    assert_eq!(
        group.broker_addrs.keys().copied().collect::<Vec<_>>(),
        [1, 2]
    );

    let notices = table.take_notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].targets, ["s:1", "s:2"]);
    assert_eq!(notices[0].header.min_broker_id, Some(1));
    assert_eq!(notices[0].header.min_broker_addr.as_deref(), Some("s:1"));
    assert_eq!(
        notices[0].header.offline_broker_addr.as_deref(),
        Some("m:1")
    );
}

#[test]
fn master_back_restores_writes_and_tells_the_slaves() {
    let mut table = set_of_three(ON);
    table.remove_broker_process(&key("m:1"));
    table.take_notices();
    // The prime slave's own registration keeps the set read-only.
    table
        .register_broker(reg("s:1", 1, Some(true)), Instant::now())
        .unwrap();
    assert_eq!(
        table.topic_route("T").unwrap().queue_datas[0].perm,
        perm::READ
    );

    table
        .register_broker(reg("m:1", 0, Some(true)), Instant::now())
        .unwrap();
    let route = table.topic_route("T").unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ_WRITE);
    assert_eq!(route.broker_datas[0].master_addr(), Some("m:1"));
    let notices = table.take_notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].targets, ["s:1", "s:2"], "all but the new lowest");
    assert_eq!(notices[0].header.min_broker_id, Some(0));
    assert_eq!(notices[0].header.ha_broker_addr.as_deref(), Some("m:1-ha"));
}

#[test]
fn without_the_keys_nothing_is_rewritten_or_sent() {
    let mut table = set_of_three(ActingSettings::default());
    table.remove_broker_process(&key("m:1"));
    let route = table.topic_route("T").unwrap();
    assert_eq!(
        route.queue_datas[0].perm,
        perm::READ,
        "Java wipes writes whatever the keys"
    );
    assert!(!route.broker_datas[0].broker_addrs.contains_key(&0));
    assert!(table.take_notices().is_empty());
}

#[test]
fn a_set_without_the_flag_keeps_its_route() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false).with_acting(ON);
    table
        .register_broker(reg("m:1", 0, Some(false)), now)
        .unwrap();
    table.register_broker(reg("s:1", 1, None), now).unwrap();
    table.remove_broker_process(&key("m:1"));
    let route = table.topic_route("T").unwrap();
    assert!(!route.broker_datas[0].enable_acting_master);
    assert_eq!(route.queue_datas[0].perm, perm::READ_WRITE);
    assert!(!route.broker_datas[0].broker_addrs.contains_key(&0));
    assert!(table.take_notices().is_empty());
}

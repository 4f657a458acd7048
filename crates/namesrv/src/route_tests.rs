use std::time::{Duration, Instant};

use ferrocket_protocol::body::{perm, TopicConfig};

use super::*;

const EXPIRY: Duration = Duration::from_secs(120);

fn registration(name: &str, addr: &str, id: i64, topics: &[(&str, i32)]) -> Registration {
    let mut wrapper = TopicConfigSerializeWrapper::default();
    for (topic, queues) in topics {
        wrapper
            .topic_config_table
            .insert(topic.to_string(), TopicConfig::new(topic, *queues));
    }
    wrapper.data_version.counter = 1;
    Registration {
        cluster: "c1".into(),
        broker_addr: addr.into(),
        broker_name: name.into(),
        broker_id: id,
        ha_server_addr: Some(format!("{addr}-ha")),
        topics: wrapper,
        conn_id: Some(7),
        ..Registration::default()
    }
}

fn key(addr: &str) -> BrokerAddrKey {
    BrokerAddrKey {
        cluster: "c1".into(),
        addr: addr.into(),
    }
}

#[test]
fn register_then_route_and_lists() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    let outcome = table
        .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 8)]), now)
        .unwrap();
    assert_eq!(outcome, RegisterOutcome::default());
    table
        .register_broker(registration("b", "h:2", 0, &[("T", 2), ("Z", 1)]), now)
        .unwrap();
    let route = table.topic_route("T").unwrap();
    assert_eq!(route.queue_datas.len(), 2);
    assert_eq!(route.queue_datas[0].broker_name, "a");
    assert_eq!(route.queue_datas[0].write_queue_nums, 4);
    assert_eq!(route.queue_datas[1].read_queue_nums, 2);
    assert_eq!(route.broker_datas[1].master_addr(), Some("h:2"));
    assert!(table.topic_route("nope").is_none());
    assert_eq!(table.all_topics().topic_list.len(), 3);
    assert_eq!(table.topics_by_cluster("c1").topic_list.len(), 3);
    assert!(table.topics_by_cluster("c2").topic_list.is_empty());
    let info = table.cluster_info();
    assert_eq!(info.cluster_addr_table["c1"].len(), 2);
    let system = table.system_topics();
    assert!(system.topic_list.contains("c1") && system.topic_list.contains("a"));
    assert_eq!(system.broker_addr.as_deref(), Some("h:1"));
}

#[test]
fn slave_learns_its_master_and_does_not_register_topics() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 1)]), now)
        .unwrap();
    let outcome = table
        .register_broker(registration("a", "h:3", 1, &[("T", 4), ("X", 1)]), now)
        .unwrap();
    assert_eq!(outcome.master_addr.as_deref(), Some("h:1"));
    assert_eq!(outcome.ha_server_addr.as_deref(), Some("h:1-ha"));
    assert!(table.topic_route("X").is_none());
    assert_eq!(
        table.topic_route("T").unwrap().broker_datas[0]
            .broker_addrs
            .len(),
        2
    );
}

#[test]
fn single_topic_registration_needs_a_full_one_first() {
    let mut table = RouteTable::new(EXPIRY, false);
    let err = table
        .register_broker(registration("a", "h:1", 0, &[("T", 4)]), Instant::now())
        .err();
    // One topic in the table and the broker unknown: refused.
    assert!(matches!(err, Some(RegisterError::NotRegisteredYet { .. })));
    assert!(table.cluster_info().broker_addr_table["a"]
        .broker_addrs
        .is_empty());
}

#[test]
fn unregister_removes_broker_and_orphaned_topics() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 1)]), now)
        .unwrap();
    table
        .register_broker(registration("b", "h:2", 0, &[("T", 4), ("V", 1)]), now)
        .unwrap();
    table.unregister_broker(&key("h:1"), "a");
    assert!(table.topic_route("U").is_none());
    let route = table.topic_route("T").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.broker_datas[0].broker_name, "b");
    table.unregister_broker(&key("h:2"), "b");
    assert!(table.cluster_info().cluster_addr_table.is_empty());
    assert!(table.all_topics().topic_list.is_empty());
}

#[test]
fn silent_brokers_expire_and_touched_ones_stay() {
    let start = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 1)]), start)
        .unwrap();
    table
        .register_broker(registration("b", "h:2", 0, &[("V", 4), ("W", 1)]), start)
        .unwrap();
    assert!(table.expire(start + EXPIRY).is_empty());
    assert!(table.touch(&key("h:2"), start + Duration::from_secs(60)));
    let expired = table.expire(start + EXPIRY + Duration::from_millis(1));
    assert_eq!(expired, vec![key("h:1")]);
    assert!(table.topic_route("T").is_none());
    assert!(table.topic_route("V").is_some());
    assert!(!table.touch(&key("h:1"), start));
}

#[test]
fn broker_timeout_from_registration_overrides_the_default() {
    let start = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    let mut reg = registration("a", "h:1", 0, &[("T", 4), ("U", 1)]);
    reg.timeout = Some(Duration::from_secs(10));
    table.register_broker(reg, start).unwrap();
    assert_eq!(
        table.expire(start + Duration::from_secs(11)),
        vec![key("h:1")]
    );
}

#[test]
fn delete_topic_everywhere_or_per_cluster() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 1)]), now)
        .unwrap();
    let mut other = registration("b", "h:2", 0, &[("T", 4), ("U", 1)]);
    other.cluster = "c2".into();
    table.register_broker(other, now).unwrap();
    table.delete_topic("T", Some("c2"));
    assert_eq!(table.topic_route("T").unwrap().queue_datas.len(), 1);
    table.delete_topic("T", Some("missing"));
    assert!(table.topic_route("T").is_some());
    table.delete_topic("T", None);
    assert!(table.topic_route("T").is_none());
}

#[test]
fn wipe_and_add_write_perm() {
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(
            registration("a", "h:1", 0, &[("T", 4), ("U", 1)]),
            Instant::now(),
        )
        .unwrap();
    assert_eq!(table.set_write_perm("a", true), 2);
    assert_eq!(
        table.topic_route("T").unwrap().queue_datas[0].perm,
        perm::READ
    );
    // Re-registering the same version keeps the wiped permission (RocketMQ).
    table
        .register_broker(
            registration("a", "h:1", 0, &[("T", 4), ("U", 1)]),
            Instant::now(),
        )
        .unwrap();
    assert_eq!(
        table.topic_route("T").unwrap().queue_datas[0].perm,
        perm::READ
    );
    assert_eq!(table.set_write_perm("a", false), 2);
    assert_eq!(
        table.topic_route("U").unwrap().queue_datas[0].perm,
        perm::READ_WRITE
    );
    assert_eq!(table.set_write_perm("zzz", true), 0);
}

#[test]
fn new_data_version_updates_queues_and_optional_topic_deletion() {
    let now = Instant::now();
    let mut keep = RouteTable::new(EXPIRY, false);
    let mut drop_missing = RouteTable::new(EXPIRY, true);
    for table in [&mut keep, &mut drop_missing] {
        table
            .register_broker(registration("a", "h:1", 0, &[("T", 4), ("U", 1)]), now)
            .unwrap();
        let mut next = registration("a", "h:1", 0, &[("T", 8), ("V", 1)]);
        next.topics.data_version.counter = 2;
        table.register_broker(next, now).unwrap();
        assert_eq!(
            table.topic_route("T").unwrap().queue_datas[0].read_queue_nums,
            8
        );
    }
    assert!(keep.topic_route("U").is_some());
    assert!(drop_missing.topic_route("U").is_none());
}

#[test]
fn connection_lookup_and_process_removal() {
    let mut table = RouteTable::new(EXPIRY, false);
    table
        .register_broker(
            registration("a", "h:1", 0, &[("T", 4), ("U", 1)]),
            Instant::now(),
        )
        .unwrap();
    assert_eq!(table.brokers_of_conn(7), vec![key("h:1")]);
    assert!(table.brokers_of_conn(8).is_empty());
    assert!(table.remove_broker_process(&key("h:1")));
    assert!(table.topic_route("T").is_none());
    assert!(!table.remove_broker_process(&key("h:1")));
}

#[test]
fn a_deposed_master_with_an_older_state_version_never_takes_the_route_back() {
    let now = Instant::now();
    let mut table = RouteTable::new(EXPIRY, false);
    let with_state = |addr: &str, id: i64, state: i64| {
        let mut reg = registration("a", addr, id, &[("T", 4), ("U", 4)]);
        reg.topics.data_version.state_version = state;
        reg
    };
    // The old master (epoch 1), then the master elected at epoch 2.
    table.register_broker(with_state("h:1", 0, 1), now).unwrap();
    table.register_broker(with_state("h:3", 0, 2), now).unwrap();
    let master = |table: &RouteTable| {
        let route = table.topic_route("T").unwrap();
        route.broker_datas[0].master_addr().map(str::to_string)
    };
    assert_eq!(master(&table).as_deref(), Some("h:3"));
    // The old master wakes (a pause, a healed partition) and registers as
    // id 0 with its old epoch: ignored, the route keeps the live master.
    let zombie = table.register_broker(with_state("h:1", 0, 1), now).unwrap();
    assert_eq!(zombie, RegisterOutcome::default());
    assert_eq!(master(&table).as_deref(), Some("h:3"));
    // Once it follows the new master it registers as a slave of epoch 2,
    // and is told the live master's addresses.
    let slave = table.register_broker(with_state("h:1", 2, 2), now).unwrap();
    assert_eq!(slave.master_addr.as_deref(), Some("h:3"));
    assert_eq!(slave.ha_server_addr.as_deref(), Some("h:3-ha"));
    assert_eq!(master(&table).as_deref(), Some("h:3"));
}

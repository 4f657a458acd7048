//! A config change that cannot be written is not answered SUCCESS, and is
//! not kept in memory; a consumer offset whose write failed is written by a
//! later round once the disk takes writes again.
//!
//! A write is made to fail, even for root, by putting a directory where the
//! broker writes its temporary file (`config/NAME.tmp`).

mod harness;

use std::path::Path;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::create_topic;
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv};

fn block_writes(store: &Path, file: &str) -> std::path::PathBuf {
    let blocker = store.join("config").join(format!("{file}.tmp"));
    std::fs::create_dir_all(&blocker).unwrap();
    blocker
}

fn create_request(topic: &str, queues: i32) -> RemotingCommand {
    harness::requests::create_topic_request(topic, queues)
}

#[test]
fn a_topic_or_group_change_that_cannot_be_persisted_is_refused_and_not_kept() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("Unwritten");

    let blocker = block_writes(broker.store_dir(), "topics.json");
    let answer = conn.request(create_request(&topic, 2));
    assert_eq!(answer.code, response_code::SYSTEM_ERROR, "{answer:?}");
    let remark = answer.remark.unwrap_or_default();
    assert!(remark.contains("topics.json"), "{remark}");
    let config = conn.request(
        RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", &topic),
    );
    assert_ne!(config.code, response_code::SUCCESS, "kept: {config:?}");

    let group = unique_name("UnwrittenGroup");
    let blocker_groups = block_writes(broker.store_dir(), "subscriptionGroup.json");
    let update = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(format!("{{\"groupName\":\"{group}\"}}"));
    let answer = conn.request(update.clone());
    assert_eq!(answer.code, response_code::SYSTEM_ERROR, "{answer:?}");

    // Writable again: both changes go through.
    std::fs::remove_dir(&blocker).unwrap();
    std::fs::remove_dir(&blocker_groups).unwrap();
    create_topic(&mut conn, &topic, 2);
    assert_eq!(conn.request(update).code, response_code::SUCCESS);
    let stored = std::fs::read_to_string(broker.store_dir().join("config/topics.json")).unwrap();
    assert!(stored.contains(&topic));
}

#[test]
fn a_failed_offset_persist_is_retried_on_the_next_round() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec!["--set".into(), "flushConsumerOffsetInterval=200".into()],
            ..Default::default()
        },
    );
    let mut conn = broker.connect();
    let topic = unique_name("OffsetRetry");
    create_topic(&mut conn, &topic, 1);
    let offsets = broker.store_dir().join("config/consumerOffset.json");
    let blocker = block_writes(broker.store_dir(), "consumerOffset.json");
    let commit = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", "OffsetRetryGroup")
        .with_ext("topic", &topic)
        .with_ext("queueId", 0)
        .with_ext("commitOffset", 0);
    assert_eq!(conn.request(commit).code, response_code::SUCCESS);
    // Several persist rounds fail while the blocker is there.
    std::thread::sleep(Duration::from_millis(1_000));
    let written = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    assert!(!written(&offsets).contains(&topic));
    std::fs::remove_dir(&blocker).unwrap();
    let saved = wait_for(Duration::from_secs(10), || {
        written(&offsets).contains(&topic).then_some(())
    });
    assert!(
        saved.is_some(),
        "the offset was never written after the disk recovered: {}",
        written(&offsets)
    );
}

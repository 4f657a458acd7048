//! Transactional messages from `rocketmq-client-rust` 1.0.0 (a
//! Java-compatible client nobody here wrote) against a real ferrocket
//! broker with short check intervals:
//!
//! - COMMIT from the local transaction: delivered exactly once;
//! - ROLLBACK: never delivered;
//! - UNKNOW, then COMMIT when the broker checks back: delivered once;
//! - UNKNOW forever: checked `transactionCheckMax` times, then rolled back
//!   (never delivered, and no further checks).
//!
//! Delivery is observed with ferrocket's own pull client.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrocket_client::{PullConsumer, PullConsumerConfig, PullStatus};
use ferrocket_interop_rust::Cluster;
use rocketmq_client_rust::{
    ClientRuntime, LocalTransactionState, TransactionListener, TransactionMQProducer,
};
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;

/// Broker settings: check every 500 ms anything older than 500 ms, roll
/// back after 3 checks.
const BROKER_SETTINGS: [&str; 3] = [
    "transactionCheckInterval=500",
    "transactionTimeOut=500",
    "transactionCheckMax=3",
];
const CHECK_MAX: usize = 3;
const TOPIC: &str = "TxnTopic";
const GROUP: &str = "txn_producer_group";

fn client_runtime() -> Arc<ClientRuntime> {
    ferrocket_interop_rust::client_runtime("txn-test")
}

fn body_of(msg: &dyn MessageTrait) -> String {
    msg.get_body()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Decides by the body's prefix; counts check-backs per body.
#[derive(Default)]
struct Listener {
    checks: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl TransactionListener for Listener {
    fn execute_local_transaction(
        &self,
        msg: &dyn MessageTrait,
        _arg: Option<&(dyn Any + Send + Sync)>,
    ) -> LocalTransactionState {
        let body = body_of(msg);
        if body.starts_with("commit") {
            LocalTransactionState::CommitMessage
        } else if body.starts_with("rollback") {
            LocalTransactionState::RollbackMessage
        } else {
            LocalTransactionState::Unknown
        }
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        let body = body_of(msg);
        *self.checks.lock().unwrap().entry(body.clone()).or_default() += 1;
        if body.starts_with("unknown-then-commit") {
            LocalTransactionState::CommitMessage
        } else {
            LocalTransactionState::Unknown
        }
    }
}

/// Bodies delivered to `TOPIC` so far (all queues, from offset 0).
async fn delivered(consumer: &PullConsumer) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let queues = consumer.read_queues(TOPIC).await.unwrap_or_default();
    for queue in queues {
        let mut offset = 0;
        loop {
            let result = consumer.pull(&queue, offset, 32, "*", None).await.unwrap();
            if result.status != PullStatus::Found {
                break;
            }
            for message in &result.messages {
                *out.entry(String::from_utf8_lossy(&message.body).into_owned())
                    .or_default() += 1;
            }
            offset = result.next_begin_offset;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_commit_rollback_and_check_back() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = Cluster::start(&BROKER_SETTINGS);
    let namesrv = cluster.namesrv.addr();
    let listener = Listener::default();
    let checks = Arc::clone(&listener.checks);
    let mut producer = TransactionMQProducer::builder(client_runtime())
        .producer_group(GROUP.to_string())
        .name_server_addr(namesrv.clone())
        .topics(vec![TOPIC])
        .transaction_listener(listener)
        .build();
    producer.start().await.expect("producer starts");

    let bodies = [
        "commit-1",
        "rollback-1",
        "unknown-then-commit-1",
        "silent-1",
    ];
    for body in bodies {
        let message = Message::builder()
            .topic(TOPIC)
            .tags("T")
            .body_slice(body.as_bytes())
            .build_unchecked();
        let result = producer
            .send_message_in_transaction::<(), _>(message, None)
            .await
            .unwrap_or_else(|e| panic!("sending {body}: {e} {e:?}"));
        assert!(result.send_result.is_some(), "{body}: no send result");
    }

    let consumer =
        PullConsumer::new(PullConsumerConfig::new("txn_checker", namesrv.clone())).unwrap();
    // Long enough for: the first check (>= 0.5 s), three checks of the
    // silent one and its rollback (~2.5 s), plus slack on a busy machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = delivered(&consumer).await;
        let silent_checks = checks.lock().unwrap().get("silent-1").copied().unwrap_or(0);
        let done = seen.contains_key("commit-1")
            && seen.contains_key("unknown-then-commit-1")
            && silent_checks >= CHECK_MAX;
        if done || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Past the rollback of the silent one: no more checks may come.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let seen = delivered(&consumer).await;
    let checks = checks.lock().unwrap().clone();

    assert_eq!(seen.get("commit-1"), Some(&1), "commit: {seen:?}");
    assert_eq!(seen.get("rollback-1"), None, "rollback: {seen:?}");
    assert_eq!(
        seen.get("unknown-then-commit-1"),
        Some(&1),
        "check-back commit: {seen:?} checks {checks:?}"
    );
    assert_eq!(seen.get("silent-1"), None, "silent: {seen:?}");
    assert_eq!(
        checks.get("silent-1").copied(),
        Some(CHECK_MAX),
        "the silent one is checked {CHECK_MAX} times, then rolled back: {checks:?}"
    );
    assert!(
        !checks.contains_key("commit-1") && !checks.contains_key("rollback-1"),
        "ended transactions are never checked: {checks:?}"
    );
    consumer.shutdown();
    producer.shutdown().await;
}

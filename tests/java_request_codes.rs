//! Every request code Java's servers handle (Apache RocketMQ 5.5.0) is
//! served by Ferrocket's or refused with a considered reason, never given
//! the generic "request type N not supported".
//!
//! The tables are facts read from the 5.5.0 jars (rocketmq-broker,
//! rocketmq-namesrv, rocketmq-controller): the codes each server registers
//! a processor for (`BrokerController.registerProcessor`,
//! `NamesrvController.registerProcessor`, `ControllerManager.registerProcessor`)
//! and the cases of its default processor's switch (`AdminBrokerProcessor`,
//! `DefaultRequestProcessor`). Each test sends every code of its server,
//! with no header or body, and reads the answer: anything but
//! REQUEST_CODE_NOT_SUPPORTED means a handler ran (bad input is its
//! answer); REQUEST_CODE_NOT_SUPPORTED must carry a considered refusal,
//! " request type N (NAME) not supported by Ferrocket: why".

mod harness;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use harness::{BrokerOpts, RemotingConn};

/// Java's broker: 35 registered codes and AdminBrokerProcessor's 73 cases.
const BROKER: &[(i32, &str)] = &[
    (10, "SEND_MESSAGE"),
    (11, "PULL_MESSAGE"),
    (12, "QUERY_MESSAGE"),
    (14, "QUERY_CONSUMER_OFFSET"),
    (15, "UPDATE_CONSUMER_OFFSET"),
    (17, "UPDATE_AND_CREATE_TOPIC"),
    (18, "UPDATE_AND_CREATE_TOPIC_LIST"),
    (21, "GET_ALL_TOPIC_CONFIG"),
    (25, "UPDATE_BROKER_CONFIG"),
    (26, "GET_BROKER_CONFIG"),
    (28, "GET_BROKER_RUNTIME_INFO"),
    (29, "SEARCH_OFFSET_BY_TIMESTAMP"),
    (30, "GET_MAX_OFFSET"),
    (31, "GET_MIN_OFFSET"),
    (32, "GET_EARLIEST_MSG_STORETIME"),
    (33, "VIEW_MESSAGE_BY_ID"),
    (34, "HEART_BEAT"),
    (35, "UNREGISTER_CLIENT"),
    (36, "CONSUMER_SEND_MSG_BACK"),
    (37, "END_TRANSACTION"),
    (38, "GET_CONSUMER_LIST_BY_GROUP"),
    (41, "LOCK_BATCH_MQ"),
    (42, "UNLOCK_BATCH_MQ"),
    (43, "GET_ALL_CONSUMER_OFFSET"),
    (45, "GET_ALL_DELAY_OFFSET"),
    (46, "CHECK_CLIENT_CONFIG"),
    (60, "GET_TIMER_CHECK_POINT"),
    (61, "GET_TIMER_METRICS"),
    (200, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"),
    (201, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG"),
    (202, "GET_TOPIC_STATS_INFO"),
    (203, "GET_CONSUMER_CONNECTION_LIST"),
    (204, "GET_PRODUCER_CONNECTION_LIST"),
    (207, "DELETE_SUBSCRIPTIONGROUP"),
    (208, "GET_CONSUME_STATS"),
    (215, "DELETE_TOPIC_IN_BROKER"),
    (222, "INVOKE_BROKER_TO_RESET_OFFSET"),
    (223, "INVOKE_BROKER_TO_GET_CONSUMER_STATUS"),
    (225, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST"),
    (300, "QUERY_TOPIC_CONSUME_BY_WHO"),
    (303, "QUERY_CONSUME_TIME_SPAN"),
    (305, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER"),
    (306, "CLEAN_EXPIRED_CONSUMEQUEUE"),
    (307, "GET_CONSUMER_RUNNING_INFO"),
    (308, "QUERY_CORRECTION_OFFSET"),
    (309, "CONSUME_MESSAGE_DIRECTLY"),
    (310, "SEND_MESSAGE_V2"),
    (314, "CLONE_GROUP_OFFSET"),
    (315, "VIEW_BROKER_STATS_DATA"),
    (316, "CLEAN_UNUSED_TOPIC"),
    (317, "GET_BROKER_CONSUME_STATS"),
    (320, "SEND_BATCH_MESSAGE"),
    (321, "QUERY_CONSUME_QUEUE"),
    (323, "RESUME_CHECK_HALF_MESSAGE"),
    (324, "SEND_REPLY_MESSAGE"),
    (325, "SEND_REPLY_MESSAGE_V2"),
    (328, "GET_ALL_PRODUCER_INFO"),
    (329, "DELETE_EXPIRED_COMMITLOG"),
    (343, "QUERY_TOPICS_BY_CONSUMER"),
    (345, "QUERY_SUBSCRIPTION_BY_CONSUMER"),
    (351, "GET_TOPIC_CONFIG"),
    (352, "GET_SUBSCRIPTIONGROUP_CONFIG"),
    (353, "UPDATE_AND_GET_GROUP_FORBIDDEN"),
    (354, "CHECK_ROCKSDB_CQ_WRITE_PROGRESS"),
    (355, "EXPORT_ROCKSDB_CONFIG_TO_JSON"),
    (361, "LITE_PULL_MESSAGE"),
    (370, "RECALL_MESSAGE"),
    (400, "QUERY_ASSIGNMENT"),
    (401, "SET_MESSAGE_REQUEST_MODE"),
    (402, "GET_ALL_MESSAGE_REQUEST_MODE"),
    (513, "UPDATE_AND_CREATE_STATIC_TOPIC"),
    (905, "NOTIFY_MIN_BROKER_ID_CHANGE"),
    (906, "EXCHANGE_BROKER_HA_INFO"),
    (907, "GET_BROKER_HA_STATUS"),
    (908, "RESET_MASTER_FLUSH_OFFSET"),
    (1007, "GET_BROKER_EPOCH_CACHE"),
    (1008, "NOTIFY_BROKER_ROLE_CHANGED"),
    (2001, "UPDATE_COLD_DATA_FLOW_CTR_CONFIG"),
    (2002, "REMOVE_COLD_DATA_FLOW_CTR_CONFIG"),
    (2003, "GET_COLD_DATA_FLOW_CTR_INFO"),
    (2004, "SET_COMMITLOG_READ_MODE"),
    (3001, "AUTH_CREATE_USER"),
    (3002, "AUTH_UPDATE_USER"),
    (3003, "AUTH_DELETE_USER"),
    (3004, "AUTH_GET_USER"),
    (3005, "AUTH_LIST_USER"),
    (3006, "AUTH_CREATE_ACL"),
    (3007, "AUTH_UPDATE_ACL"),
    (3008, "AUTH_DELETE_ACL"),
    (3009, "AUTH_GET_ACL"),
    (3010, "AUTH_LIST_ACL"),
    (5001, "SWITCH_TIMER_ENGINE"),
    (200050, "POP_MESSAGE"),
    (200051, "ACK_MESSAGE"),
    (200052, "PEEK_MESSAGE"),
    (200053, "CHANGE_MESSAGE_INVISIBLETIME"),
    (200054, "NOTIFICATION"),
    (200055, "POLLING_INFO"),
    (200056, "POP_ROLLBACK"),
    (200070, "POP_LITE_MESSAGE"),
    (200071, "LITE_SUBSCRIPTION_CTL"),
    (200074, "GET_BROKER_LITE_INFO"),
    (200075, "GET_PARENT_TOPIC_INFO"),
    (200076, "GET_LITE_TOPIC_INFO"),
    (200077, "GET_LITE_CLIENT_INFO"),
    (200078, "GET_LITE_GROUP_INFO"),
    (200079, "TRIGGER_LITE_DISPATCH"),
    (200151, "BATCH_ACK_MESSAGE"),
];

/// Java's name server: GET_ROUTEINFO_BY_TOPIC's ClientRequestProcessor and
/// DefaultRequestProcessor's 22 cases.
const NAMESRV: &[(i32, &str)] = &[
    (100, "PUT_KV_CONFIG"),
    (101, "GET_KV_CONFIG"),
    (102, "DELETE_KV_CONFIG"),
    (103, "REGISTER_BROKER"),
    (104, "UNREGISTER_BROKER"),
    (105, "GET_ROUTEINFO_BY_TOPIC"),
    (106, "GET_BROKER_CLUSTER_INFO"),
    (205, "WIPE_WRITE_PERM_OF_BROKER"),
    (206, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
    (216, "DELETE_TOPIC_IN_NAMESRV"),
    (217, "REGISTER_TOPIC_IN_NAMESRV"),
    (219, "GET_KVLIST_BY_NAMESPACE"),
    (224, "GET_TOPICS_BY_CLUSTER"),
    (304, "GET_SYSTEM_TOPIC_LIST_FROM_NS"),
    (311, "GET_UNIT_TOPIC_LIST"),
    (312, "GET_HAS_UNIT_SUB_TOPIC_LIST"),
    (313, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST"),
    (318, "UPDATE_NAMESRV_CONFIG"),
    (319, "GET_NAMESRV_CONFIG"),
    (322, "QUERY_DATA_VERSION"),
    (327, "ADD_WRITE_PERM_OF_BROKER"),
    (901, "GET_BROKER_MEMBER_GROUP"),
    (904, "BROKER_HEARTBEAT"),
];

/// Java's controller: the codes ControllerManager registers.
const CONTROLLER: &[(i32, &str)] = &[
    (904, "BROKER_HEARTBEAT"),
    (1001, "CONTROLLER_ALTER_SYNC_STATE_SET"),
    (1002, "CONTROLLER_ELECT_MASTER"),
    (1003, "CONTROLLER_REGISTER_BROKER"),
    (1004, "CONTROLLER_GET_REPLICA_INFO"),
    (1005, "CONTROLLER_GET_METADATA_INFO"),
    (1006, "CONTROLLER_GET_SYNC_STATE_DATA"),
    (1009, "UPDATE_CONTROLLER_CONFIG"),
    (1010, "GET_CONTROLLER_CONFIG"),
    (1011, "CLEAN_BROKER_DATA"),
    (1012, "CONTROLLER_GET_NEXT_BROKER_ID"),
    (1013, "CONTROLLER_APPLY_BROKER_ID"),
];

/// How many of `codes` were served and refused; panics naming every code
/// that got the generic answer.
fn served_or_refused(conn: &mut RemotingConn, codes: &[(i32, &str)]) -> (usize, usize) {
    let (mut served, mut refused, mut generic) = (0, 0, Vec::new());
    for &(code, name) in codes {
        let answer = conn.request(RemotingCommand::request(code));
        let remark = answer.remark.unwrap_or_default();
        if answer.code != response_code::REQUEST_CODE_NOT_SUPPORTED {
            served += 1;
        } else if remark.contains(&format!("({name}) not supported by Ferrocket: ")) {
            refused += 1;
        } else {
            generic.push(format!("{code} {name}: {remark:?}"));
        }
    }
    assert!(
        generic.is_empty(),
        "Java serves these, Ferrocket neither serves nor refuses them with a reason: {generic:#?}"
    );
    (served, refused)
}

#[test]
fn every_java_broker_code_is_served_or_refused() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let (served, refused) = served_or_refused(&mut conn, BROKER);
    println!(
        "broker: {served} served, {refused} refused of {}",
        BROKER.len()
    );
}

#[test]
fn every_java_namesrv_code_is_served_or_refused() {
    let namesrv = harness::Namesrv::start();
    let mut conn = namesrv.connect();
    let (served, refused) = served_or_refused(&mut conn, NAMESRV);
    println!(
        "name server: {served} served, {refused} refused of {}",
        NAMESRV.len()
    );
}

#[test]
fn every_java_controller_code_is_served_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let controllers = harness::failover::controllers(dir.path(), 1);
    let addr = harness::failover::controller_addr(&controllers);
    let mut conn = RemotingConn::connect(&addr).unwrap();
    let (served, refused) = served_or_refused(&mut conn, CONTROLLER);
    println!(
        "controller: {served} served, {refused} refused of {}",
        CONTROLLER.len()
    );
}

#[test]
fn the_tables_list_each_code_once() {
    for table in [BROKER, NAMESRV, CONTROLLER] {
        let mut codes: Vec<i32> = table.iter().map(|(code, _)| *code).collect();
        codes.dedup();
        assert_eq!(codes.len(), table.len(), "sorted, no repeats");
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
    }
    assert_eq!(
        (BROKER.len(), NAMESRV.len(), CONTROLLER.len()),
        (108, 23, 12)
    );
}

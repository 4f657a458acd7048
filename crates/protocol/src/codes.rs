//! Request and response codes (RocketMQ `RequestCode`, `ResponseCode`,
//! `RemotingSysResponseCode`).

/// Request codes: what a request asks for.
pub mod request_code {
    pub const SEND_MESSAGE: i32 = 10;
    pub const PULL_MESSAGE: i32 = 11;
    pub const QUERY_MESSAGE: i32 = 12;
    pub const QUERY_BROKER_OFFSET: i32 = 13;
    pub const QUERY_CONSUMER_OFFSET: i32 = 14;
    pub const UPDATE_CONSUMER_OFFSET: i32 = 15;
    pub const UPDATE_AND_CREATE_TOPIC: i32 = 17;
    pub const GET_ALL_TOPIC_CONFIG: i32 = 21;
    pub const UPDATE_BROKER_CONFIG: i32 = 25;
    pub const GET_BROKER_CONFIG: i32 = 26;
    pub const GET_BROKER_RUNTIME_INFO: i32 = 28;
    pub const SEARCH_OFFSET_BY_TIMESTAMP: i32 = 29;
    pub const GET_MAX_OFFSET: i32 = 30;
    pub const GET_MIN_OFFSET: i32 = 31;
    pub const GET_EARLIEST_MSG_STORETIME: i32 = 32;
    pub const VIEW_MESSAGE_BY_ID: i32 = 33;
    pub const HEART_BEAT: i32 = 34;
    pub const UNREGISTER_CLIENT: i32 = 35;
    pub const CONSUMER_SEND_MSG_BACK: i32 = 36;
    pub const END_TRANSACTION: i32 = 37;
    pub const GET_CONSUMER_LIST_BY_GROUP: i32 = 38;
    pub const CHECK_TRANSACTION_STATE: i32 = 39;
    pub const NOTIFY_CONSUMER_IDS_CHANGED: i32 = 40;
    pub const LOCK_BATCH_MQ: i32 = 41;
    pub const UNLOCK_BATCH_MQ: i32 = 42;
    pub const GET_ALL_CONSUMER_OFFSET: i32 = 43;
    pub const GET_ALL_DELAY_OFFSET: i32 = 45;
    pub const GET_BROKER_HA_STATUS: i32 = 907;
    pub const PUT_KV_CONFIG: i32 = 100;
    pub const GET_KV_CONFIG: i32 = 101;
    pub const DELETE_KV_CONFIG: i32 = 102;
    pub const REGISTER_BROKER: i32 = 103;
    pub const UNREGISTER_BROKER: i32 = 104;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    pub const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: i32 = 200;
    pub const GET_ALL_SUBSCRIPTIONGROUP_CONFIG: i32 = 201;
    pub const GET_TOPIC_STATS_INFO: i32 = 202;
    pub const GET_CONSUMER_CONNECTION_LIST: i32 = 203;
    pub const WIPE_WRITE_PERM_OF_BROKER: i32 = 205;
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
    pub const DELETE_SUBSCRIPTIONGROUP: i32 = 207;
    pub const GET_CONSUME_STATS: i32 = 208;
    pub const DELETE_TOPIC_IN_BROKER: i32 = 215;
    pub const DELETE_TOPIC_IN_NAMESRV: i32 = 216;
    pub const GET_KVLIST_BY_NAMESPACE: i32 = 219;
    pub const RESET_CONSUMER_CLIENT_OFFSET: i32 = 220;
    pub const GET_CONSUMER_STATUS_FROM_CLIENT: i32 = 221;
    pub const INVOKE_BROKER_TO_RESET_OFFSET: i32 = 222;
    pub const GET_TOPICS_BY_CLUSTER: i32 = 224;
    pub const QUERY_TOPIC_CONSUME_BY_WHO: i32 = 300;
    pub const GET_CONSUMER_RUNNING_INFO: i32 = 307;
    pub const CONSUME_MESSAGE_DIRECTLY: i32 = 309;
    pub const SEND_MESSAGE_V2: i32 = 310;
    pub const SEND_BATCH_MESSAGE: i32 = 320;
    pub const QUERY_CONSUME_QUEUE: i32 = 321;
    pub const QUERY_TOPICS_BY_CONSUMER: i32 = 343;
    pub const VIEW_BROKER_STATS_DATA: i32 = 315;
    pub const GET_BROKER_CONSUME_STATS: i32 = 317;
    pub const QUERY_DATA_VERSION: i32 = 322;
    pub const SEND_REPLY_MESSAGE: i32 = 324;
    pub const SEND_REPLY_MESSAGE_V2: i32 = 325;
    pub const PUSH_REPLY_MESSAGE_TO_CLIENT: i32 = 326;
    pub const ADD_WRITE_PERM_OF_BROKER: i32 = 327;
    pub const GET_TOPIC_CONFIG: i32 = 351;
    pub const LITE_PULL_MESSAGE: i32 = 361;
    pub const QUERY_ASSIGNMENT: i32 = 400;
    pub const SET_MESSAGE_REQUEST_MODE: i32 = 401;
    pub const GET_ALL_MESSAGE_REQUEST_MODE: i32 = 402;
    pub const BROKER_HEARTBEAT: i32 = 904;
    pub const POP_MESSAGE: i32 = 200050;
    pub const ACK_MESSAGE: i32 = 200051;
    pub const PEEK_MESSAGE: i32 = 200052;
    pub const CHANGE_MESSAGE_INVISIBLETIME: i32 = 200053;
    pub const NOTIFICATION: i32 = 200054;
    pub const POLLING_INFO: i32 = 200055;
    pub const BATCH_ACK_MESSAGE: i32 = 200151;
}

/// Response codes: how a request went.
pub mod response_code {
    pub const SUCCESS: i32 = 0;
    pub const SYSTEM_ERROR: i32 = 1;
    pub const SYSTEM_BUSY: i32 = 2;
    pub const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
    pub const TRANSACTION_FAILED: i32 = 4;
    pub const FLUSH_DISK_TIMEOUT: i32 = 10;
    pub const SLAVE_NOT_AVAILABLE: i32 = 11;
    pub const FLUSH_SLAVE_TIMEOUT: i32 = 12;
    pub const MESSAGE_ILLEGAL: i32 = 13;
    pub const SERVICE_NOT_AVAILABLE: i32 = 14;
    pub const VERSION_NOT_SUPPORTED: i32 = 15;
    pub const NO_PERMISSION: i32 = 16;
    pub const TOPIC_NOT_EXIST: i32 = 17;
    pub const TOPIC_EXIST_ALREADY: i32 = 18;
    pub const PULL_NOT_FOUND: i32 = 19;
    pub const PULL_RETRY_IMMEDIATELY: i32 = 20;
    pub const PULL_OFFSET_MOVED: i32 = 21;
    pub const QUERY_NOT_FOUND: i32 = 22;
    pub const SUBSCRIPTION_PARSE_FAILED: i32 = 23;
    pub const SUBSCRIPTION_NOT_EXIST: i32 = 24;
    pub const SUBSCRIPTION_NOT_LATEST: i32 = 25;
    pub const SUBSCRIPTION_GROUP_NOT_EXIST: i32 = 26;
    pub const FILTER_DATA_NOT_EXIST: i32 = 27;
    pub const FILTER_DATA_NOT_LATEST: i32 = 28;
    pub const INVALID_PARAMETER: i32 = 29;
    pub const TRANSACTION_SHOULD_COMMIT: i32 = 200;
    pub const TRANSACTION_SHOULD_ROLLBACK: i32 = 201;
    pub const TRANSACTION_STATE_UNKNOW: i32 = 202;
    pub const TRANSACTION_STATE_GROUP_WRONG: i32 = 203;
    pub const NO_BUYER_ID: i32 = 204;
    pub const NOT_IN_CURRENT_UNIT: i32 = 205;
    pub const CONSUMER_NOT_ONLINE: i32 = 206;
    pub const CONSUME_MSG_TIMEOUT: i32 = 207;
    pub const NO_MESSAGE: i32 = 208;
    pub const POLLING_FULL: i32 = 209;
    pub const POLLING_TIMEOUT: i32 = 210;
    pub const FLOW_CONTROL: i32 = 215;
}

/// Request codes and their RocketMQ names, in the order they are looked up.
macro_rules! named_request_codes {
    ($($code:ident),* $(,)?) => {
        &[$((request_code::$code, stringify!($code))),*]
    };
}

const REQUEST_CODE_NAMES: &[(i32, &str)] = named_request_codes![
    SEND_MESSAGE,
    PULL_MESSAGE,
    QUERY_MESSAGE,
    QUERY_BROKER_OFFSET,
    QUERY_CONSUMER_OFFSET,
    UPDATE_CONSUMER_OFFSET,
    UPDATE_AND_CREATE_TOPIC,
    GET_ALL_TOPIC_CONFIG,
    UPDATE_BROKER_CONFIG,
    GET_BROKER_CONFIG,
    GET_BROKER_RUNTIME_INFO,
    SEARCH_OFFSET_BY_TIMESTAMP,
    GET_MAX_OFFSET,
    GET_MIN_OFFSET,
    GET_EARLIEST_MSG_STORETIME,
    VIEW_MESSAGE_BY_ID,
    HEART_BEAT,
    UNREGISTER_CLIENT,
    CONSUMER_SEND_MSG_BACK,
    END_TRANSACTION,
    GET_CONSUMER_LIST_BY_GROUP,
    CHECK_TRANSACTION_STATE,
    NOTIFY_CONSUMER_IDS_CHANGED,
    LOCK_BATCH_MQ,
    UNLOCK_BATCH_MQ,
    GET_ALL_CONSUMER_OFFSET,
    GET_ALL_DELAY_OFFSET,
    GET_BROKER_HA_STATUS,
    PUT_KV_CONFIG,
    GET_KV_CONFIG,
    DELETE_KV_CONFIG,
    REGISTER_BROKER,
    UNREGISTER_BROKER,
    GET_ROUTEINFO_BY_TOPIC,
    GET_BROKER_CLUSTER_INFO,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    GET_TOPIC_STATS_INFO,
    GET_CONSUMER_CONNECTION_LIST,
    WIPE_WRITE_PERM_OF_BROKER,
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    DELETE_SUBSCRIPTIONGROUP,
    GET_CONSUME_STATS,
    DELETE_TOPIC_IN_BROKER,
    DELETE_TOPIC_IN_NAMESRV,
    GET_KVLIST_BY_NAMESPACE,
    RESET_CONSUMER_CLIENT_OFFSET,
    GET_CONSUMER_STATUS_FROM_CLIENT,
    INVOKE_BROKER_TO_RESET_OFFSET,
    GET_TOPICS_BY_CLUSTER,
    QUERY_TOPIC_CONSUME_BY_WHO,
    GET_CONSUMER_RUNNING_INFO,
    CONSUME_MESSAGE_DIRECTLY,
    SEND_MESSAGE_V2,
    SEND_BATCH_MESSAGE,
    QUERY_CONSUME_QUEUE,
    QUERY_TOPICS_BY_CONSUMER,
    QUERY_DATA_VERSION,
    SEND_REPLY_MESSAGE,
    SEND_REPLY_MESSAGE_V2,
    PUSH_REPLY_MESSAGE_TO_CLIENT,
    ADD_WRITE_PERM_OF_BROKER,
    GET_TOPIC_CONFIG,
    LITE_PULL_MESSAGE,
    QUERY_ASSIGNMENT,
    SET_MESSAGE_REQUEST_MODE,
    GET_ALL_MESSAGE_REQUEST_MODE,
    BROKER_HEARTBEAT,
    POP_MESSAGE,
    ACK_MESSAGE,
    PEEK_MESSAGE,
    CHANGE_MESSAGE_INVISIBLETIME,
    NOTIFICATION,
    POLLING_INFO,
    BATCH_ACK_MESSAGE,
];

/// The RocketMQ name of a request code, for logs and error messages.
pub fn request_code_name(code: i32) -> &'static str {
    REQUEST_CODE_NAMES
        .iter()
        .find(|(known, _)| *known == code)
        .map_or("UNKNOWN", |(_, name)| name)
}

/// Response codes and their RocketMQ names.
macro_rules! named_response_codes {
    ($($code:ident),* $(,)?) => {
        &[$((response_code::$code, stringify!($code))),*]
    };
}

const RESPONSE_CODE_NAMES: &[(i32, &str)] = named_response_codes![
    SUCCESS,
    SYSTEM_ERROR,
    SYSTEM_BUSY,
    REQUEST_CODE_NOT_SUPPORTED,
    TRANSACTION_FAILED,
    FLUSH_DISK_TIMEOUT,
    SLAVE_NOT_AVAILABLE,
    FLUSH_SLAVE_TIMEOUT,
    MESSAGE_ILLEGAL,
    SERVICE_NOT_AVAILABLE,
    VERSION_NOT_SUPPORTED,
    NO_PERMISSION,
    TOPIC_NOT_EXIST,
    TOPIC_EXIST_ALREADY,
    PULL_NOT_FOUND,
    PULL_RETRY_IMMEDIATELY,
    PULL_OFFSET_MOVED,
    QUERY_NOT_FOUND,
    SUBSCRIPTION_PARSE_FAILED,
    SUBSCRIPTION_NOT_EXIST,
    SUBSCRIPTION_NOT_LATEST,
    SUBSCRIPTION_GROUP_NOT_EXIST,
    FILTER_DATA_NOT_EXIST,
    FILTER_DATA_NOT_LATEST,
    INVALID_PARAMETER,
    TRANSACTION_SHOULD_COMMIT,
    TRANSACTION_SHOULD_ROLLBACK,
    TRANSACTION_STATE_UNKNOW,
    TRANSACTION_STATE_GROUP_WRONG,
    NO_BUYER_ID,
    NOT_IN_CURRENT_UNIT,
    CONSUMER_NOT_ONLINE,
    CONSUME_MSG_TIMEOUT,
    NO_MESSAGE,
    POLLING_FULL,
    POLLING_TIMEOUT,
    FLOW_CONTROL,
];

/// The RocketMQ name of a response code, for logs and error messages.
pub fn response_code_name(code: i32) -> &'static str {
    RESPONSE_CODE_NAMES
        .iter()
        .find(|(known, _)| *known == code)
        .map_or("UNKNOWN", |(_, name)| name)
}

//! Lite topics' headers (RocketMQ 5.5, RIP-83): POP_LITE_MESSAGE, the
//! lite admin requests and NOTIFY_UNSUBSCRIBE_LITE.

use crate::{ExtFields, ProtocolError};

use super::HeaderField;

header! {
    /// POP_LITE_MESSAGE request (`PopLiteMessageRequestHeader`): the lite
    /// topics popped are the ones `clientId` subscribed with
    /// LITE_SUBSCRIPTION_CTL.
    pub struct PopLiteMessageRequestHeader {
        client_id: String = "clientId",
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        max_msg_num: i32 = "maxMsgNum",
        invisible_time: i64 = "invisibleTime",
        poll_time: i64 = "pollTime",
        born_time: Option<i64> = "bornTime",
        attempt_id: Option<String> = "attemptId",
    }
}

header! {
    /// Response to POP_LITE_MESSAGE (`PopLiteMessageResponseHeader`):
    /// `orderCountInfo` is one delivery count per message, `;`-separated.
    pub struct PopLiteMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        order_count_info: Option<String> = "orderCountInfo",
    }
}

header! {
    /// NOTIFY_UNSUBSCRIBE_LITE, broker to client (`NotifyUnsubscribeLiteRequestHeader`).
    pub struct NotifyUnsubscribeLiteRequestHeader {
        lite_topic: String = "liteTopic",
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
    }
}

header! {
    /// GET_LITE_TOPIC_INFO request (`GetLiteTopicInfoRequestHeader`).
    pub struct GetLiteTopicInfoRequestHeader {
        parent_topic: String = "parentTopic",
        lite_topic: String = "liteTopic",
    }
}

header! {
    /// GET_LITE_CLIENT_INFO request (`GetLiteClientInfoRequestHeader`).
    pub struct GetLiteClientInfoRequestHeader {
        parent_topic: Option<String> = "parentTopic",
        group: Option<String> = "group",
        client_id: String = "clientId",
        max_count: Option<i32> = "maxCount",
    }
}

header! {
    /// GET_LITE_GROUP_INFO request (`GetLiteGroupInfoRequestHeader`).
    pub struct GetLiteGroupInfoRequestHeader {
        group: String = "group",
        lite_topic: Option<String> = "liteTopic",
        top_k: Option<i32> = "topK",
    }
}

header! {
    /// TRIGGER_LITE_DISPATCH request (`TriggerLiteDispatchRequestHeader`).
    pub struct TriggerLiteDispatchRequestHeader {
        group: String = "group",
        client_id: Option<String> = "clientId",
    }
}

//! Pop consumption's headers (RocketMQ 5: `PopMessageRequestHeader` and
//! the ack, change, peek and notification headers).

use crate::{ExtFields, ProtocolError};

use super::HeaderField;

header! {
    /// POP_MESSAGE request (`PopMessageRequestHeader`); a negative queueId
    /// asks for any queue of the topic.
    pub struct PopMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        invisible_time: i64 = "invisibleTime",
        poll_time: i64 = "pollTime",
        born_time: Option<i64> = "bornTime",
        init_mode: i32 = "initMode",
        exp_type: Option<String> = "expType",
        exp: Option<String> = "exp",
        order: bool = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

header! {
    /// Response to a pop (`PopMessageResponseHeader`).
    pub struct PopMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        rest_num: i64 = "restNum",
        start_offset_info: Option<String> = "startOffsetInfo",
        msg_offset_info: Option<String> = "msgOffsetInfo",
        order_count_info: Option<String> = "orderCountInfo",
    }
}

header! {
    /// ACK_MESSAGE request (`AckMessageRequestHeader`): `topic` is the topic
    /// the message was read from (a pop retry topic for a redelivery).
    pub struct AckMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        /// The lite topic of a lite message (RocketMQ 5.5).
        lite_topic: Option<String> = "liteTopic",
    }
}

header! {
    /// CHANGE_MESSAGE_INVISIBLETIME request (`ChangeInvisibleTimeRequestHeader`).
    pub struct ChangeInvisibleTimeRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        invisible_time: i64 = "invisibleTime",
        /// The lite topic of a lite message (RocketMQ 5.5).
        lite_topic: Option<String> = "liteTopic",
    }
}

header! {
    /// Response to CHANGE_MESSAGE_INVISIBLETIME.
    pub struct ChangeInvisibleTimeResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
    }
}

header! {
    /// PEEK_MESSAGE request (`PeekMessageRequestHeader`).
    pub struct PeekMessageRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        consumer_group: String = "consumerGroup",
    }
}

header! {
    /// NOTIFICATION request (`NotificationRequestHeader`).
    pub struct NotificationRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        poll_time: i64 = "pollTime",
        born_time: Option<i64> = "bornTime",
        order: bool = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

header! {
    /// POLLING_INFO request (`PollingInfoRequestHeader`).
    pub struct PollingInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

header! {
    /// Response to POLLING_INFO (`PollingInfoResponseHeader`).
    pub struct PollingInfoResponseHeader {
        polling_num: i32 = "pollingNum",
    }
}

header! {
    /// Response to NOTIFICATION (`NotificationResponseHeader`).
    pub struct NotificationResponseHeader {
        has_msg: bool = "hasMsg",
        polling_full: bool = "pollingFull",
    }
}

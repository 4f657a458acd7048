//! v5 status codes (`apache.rocketmq.v2.Code`) and how Remoting answers map
//! onto them, as RocketMQ's proxy maps them.

use ferrocket_protocol::codes::response_code;

use crate::pb::{Code, Status};

/// A status with `code` and `message`.
pub fn status(code: Code, message: impl Into<String>) -> Status {
    Status {
        code: code as i32,
        message: message.into(),
    }
}

pub fn ok() -> Status {
    status(Code::Ok, "OK")
}

/// The v5 code for a broker's Remoting answer `code`.
pub fn from_remoting(code: i32) -> Code {
    match code {
        response_code::SUCCESS => Code::Ok,
        response_code::FLUSH_DISK_TIMEOUT => Code::MasterPersistenceTimeout,
        response_code::FLUSH_SLAVE_TIMEOUT => Code::SlavePersistenceTimeout,
        response_code::SLAVE_NOT_AVAILABLE => Code::HaNotAvailable,
        response_code::TOPIC_NOT_EXIST => Code::TopicNotFound,
        response_code::SUBSCRIPTION_GROUP_NOT_EXIST => Code::ConsumerGroupNotFound,
        response_code::NO_PERMISSION => Code::Forbidden,
        response_code::MESSAGE_ILLEGAL => Code::BadRequest,
        response_code::SYSTEM_BUSY | response_code::POLLING_FULL => Code::TooManyRequests,
        response_code::SERVICE_NOT_AVAILABLE => Code::InternalServerError,
        response_code::POLLING_TIMEOUT | response_code::PULL_NOT_FOUND => Code::MessageNotFound,
        response_code::NO_MESSAGE => Code::MessageNotFound,
        response_code::INVALID_PARAMETER => Code::BadRequest,
        _ => Code::InternalServerError,
    }
}

/// The status for a broker's Remoting answer.
pub fn from_answer(code: i32, remark: Option<&str>) -> Status {
    let v5 = from_remoting(code);
    match remark {
        Some(remark) if !remark.is_empty() => status(v5, remark),
        _ if v5 == Code::Ok => ok(),
        _ => status(v5, format!("broker answered code {code}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_refusals_keep_their_meaning() {
        assert_eq!(from_remoting(response_code::SUCCESS), Code::Ok);
        assert_eq!(
            from_remoting(response_code::TOPIC_NOT_EXIST),
            Code::TopicNotFound
        );
        assert_eq!(
            from_remoting(response_code::POLLING_FULL),
            Code::TooManyRequests
        );
        let refused = from_answer(response_code::MESSAGE_ILLEGAL, Some("body too large"));
        assert_eq!(refused.code, Code::BadRequest as i32);
        assert_eq!(refused.message, "body too large");
    }
}

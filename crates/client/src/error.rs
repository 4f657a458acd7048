//! Typed client errors. Nothing the network sends makes the client panic:
//! every failure ends up here.

use ferrocket_protocol::codes::{request_code_name, response_code};
use ferrocket_protocol::{ProtocolError, RemotingCommand};

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TCP connection could not be opened.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing an open connection failed.
    #[error("I/O error on the connection to {addr}: {source}")]
    Io {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// No response arrived within the request's timeout.
    #[error("{request} to {addr} timed out after {timeout_ms} ms")]
    Timeout {
        addr: String,
        request: &'static str,
        timeout_ms: u64,
    },
    /// The connection is closed (by the peer, an error, or `close`).
    #[error("connection to {addr} is closed: {reason}")]
    Closed { addr: String, reason: String },
    /// The peer sent bytes we cannot decode, or a body we cannot parse.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// The peer answered with a code other than the one(s) expected.
    #[error("the server answered code {code} ({name}): {remark}", name = response_code_name(*.code))]
    Response { code: i32, remark: String },
    /// The name server knows no route for the topic (and no fallback).
    #[error("no route for topic `{0}`")]
    NoRoute(String),
    /// No master address is known for the broker name.
    #[error("no master address for broker `{0}`")]
    NoBroker(String),
    /// A caller-side mistake (bad address list, bad option, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// What was asked about is not there: no such group or topic, or a
    /// group with no client online. The text says which.
    #[error("{0}")]
    NotFound(String),
    /// A change sent to several servers failed on some; each failure was
    /// reported as it happened, and the text names where.
    #[error("{0}")]
    PartlyFailed(String),
}

impl ClientError {
    /// The error for a response whose code was not expected.
    pub fn from_response(response: &RemotingCommand) -> Self {
        ClientError::Response {
            code: response.code,
            remark: response.remark.clone().unwrap_or_default(),
        }
    }

    /// The response code when the server answered with an error.
    pub fn response_code(&self) -> Option<i32> {
        match self {
            ClientError::Response { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True for failures of the transport (connect, I/O, timeout, closed),
    /// after which another server may be tried.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            ClientError::Connect { .. }
                | ClientError::Io { .. }
                | ClientError::Timeout { .. }
                | ClientError::Closed { .. }
        )
    }

    pub(crate) fn timeout(addr: &str, code: i32, timeout_ms: u64) -> Self {
        ClientError::Timeout {
            addr: addr.to_string(),
            request: request_code_name(code),
            timeout_ms,
        }
    }
}

/// Returns the response when its code is SUCCESS, the typed error otherwise.
pub fn expect_success(response: RemotingCommand) -> Result<RemotingCommand, ClientError> {
    if response.code == response_code::SUCCESS {
        Ok(response)
    } else {
        Err(ClientError::from_response(&response))
    }
}

/// The RocketMQ name of a response code, for messages.
pub fn response_code_name(code: i32) -> &'static str {
    use response_code::*;
    match code {
        SUCCESS => "SUCCESS",
        SYSTEM_ERROR => "SYSTEM_ERROR",
        SYSTEM_BUSY => "SYSTEM_BUSY",
        REQUEST_CODE_NOT_SUPPORTED => "REQUEST_CODE_NOT_SUPPORTED",
        TRANSACTION_FAILED => "TRANSACTION_FAILED",
        FLUSH_DISK_TIMEOUT => "FLUSH_DISK_TIMEOUT",
        SLAVE_NOT_AVAILABLE => "SLAVE_NOT_AVAILABLE",
        FLUSH_SLAVE_TIMEOUT => "FLUSH_SLAVE_TIMEOUT",
        MESSAGE_ILLEGAL => "MESSAGE_ILLEGAL",
        SERVICE_NOT_AVAILABLE => "SERVICE_NOT_AVAILABLE",
        VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
        NO_PERMISSION => "NO_PERMISSION",
        TOPIC_NOT_EXIST => "TOPIC_NOT_EXIST",
        TOPIC_EXIST_ALREADY => "TOPIC_EXIST_ALREADY",
        PULL_NOT_FOUND => "PULL_NOT_FOUND",
        PULL_RETRY_IMMEDIATELY => "PULL_RETRY_IMMEDIATELY",
        PULL_OFFSET_MOVED => "PULL_OFFSET_MOVED",
        QUERY_NOT_FOUND => "QUERY_NOT_FOUND",
        SUBSCRIPTION_PARSE_FAILED => "SUBSCRIPTION_PARSE_FAILED",
        SUBSCRIPTION_NOT_EXIST => "SUBSCRIPTION_NOT_EXIST",
        SUBSCRIPTION_NOT_LATEST => "SUBSCRIPTION_NOT_LATEST",
        SUBSCRIPTION_GROUP_NOT_EXIST => "SUBSCRIPTION_GROUP_NOT_EXIST",
        INVALID_PARAMETER => "INVALID_PARAMETER",
        TRANSACTION_SHOULD_COMMIT => "TRANSACTION_SHOULD_COMMIT",
        TRANSACTION_SHOULD_ROLLBACK => "TRANSACTION_SHOULD_ROLLBACK",
        TRANSACTION_STATE_UNKNOW => "TRANSACTION_STATE_UNKNOW",
        CONSUMER_NOT_ONLINE => "CONSUMER_NOT_ONLINE",
        NO_MESSAGE => "NO_MESSAGE",
        POLLING_FULL => "POLLING_FULL",
        POLLING_TIMEOUT => "POLLING_TIMEOUT",
        FLOW_CONTROL => "FLOW_CONTROL",
        _ => "UNKNOWN",
    }
}

//! Sends NOTIFY_MIN_BROKER_ID_CHANGE (905) one-way to brokers, as Java's
//! name server does with `notifyMinBrokerIdChanged=true`: one short
//! connection per target, written and closed, never awaited by the request
//! that caused it. A broker that cannot be reached learns the same from its
//! own GET_BROKER_MEMBER_GROUP poll.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use futures_lite::{future, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::route::MinBrokerNotice;

/// Longest one notice may take, connect included (Java's is 300 ms).
const NOTIFY_TIMEOUT_MS: u64 = 1_000;

/// Starts sending each notice to each of its targets.
pub(crate) fn send_all(notices: Vec<MinBrokerNotice>) {
    for notice in notices {
        let mut request = RemotingCommand::request(request_code::NOTIFY_MIN_BROKER_ID_CHANGE);
        request.ext_fields = notice.header.to_ext();
        request.mark_oneway();
        let mut frame = BytesMut::new();
        request.encode(&mut frame);
        let frame = frame.freeze();
        for target in notice.targets {
            let frame = frame.clone();
            glommio::spawn_local(async move {
                if let Err(reason) = send_one(&target, &frame).await {
                    tracing::warn!(%target, %reason, "could not notify a broker of its set's lowest id");
                }
            })
            .detach();
        }
    }
}

async fn send_one(target: &str, frame: &[u8]) -> Result<(), String> {
    let addr: SocketAddr = target.parse().map_err(|e| format!("bad address: {e}"))?;
    let write = async {
        let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        stream.write_all(frame).await.map_err(|e| e.to_string())?;
        stream.flush().await.map_err(|e| e.to_string())?;
        stream.close().await.map_err(|e| e.to_string())
    };
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(NOTIFY_TIMEOUT_MS)).await;
        Err(format!("timed out after {NOTIFY_TIMEOUT_MS} ms"))
    };
    future::or(write, timeout).await
}

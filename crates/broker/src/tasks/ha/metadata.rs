//! A slave copies what a consumer needs from its master's broker port
//! (`SlaveSynchronize`): topics (GET_ALL_TOPIC_CONFIG 21) and subscription
//! groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201), replaced when their
//! dataVersion differs; consumer offsets (GET_ALL_CONSUMER_OFFSET 43),
//! merged every time; delay offsets (GET_ALL_DELAY_OFFSET 45), written
//! verbatim to delayOffset.json; request modes (GET_ALL_MESSAGE_REQUEST_MODE
//! 402), replaced when they differ. First after 3 s, then every 10 s (the
//! 4.x schedule; 5.x checks every 3 s and syncs after 60 s).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_protocol::body::decode_json;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::config::parse_host_port;
use crate::error::Reject;
use crate::services::delay_levels::DELAY_OFFSET_FILE;
use crate::services::fastjson::quote_integer_keys;
use crate::services::groups::GroupTable;
use crate::services::offsets::{OffsetFile, OffsetMap};
use crate::services::request_modes::RequestModeTable;
use crate::services::topics::TopicTable;
use crate::shard::Shard;

const FIRST_SYNC_MS: u64 = 3_000;
const SYNC_INTERVAL_MS: u64 = 10_000;

/// Syncs from the master until the shard stops (shard 0 of a slave).
pub(crate) async fn sync_loop(shard: Rc<Shard>) {
    let mut wait_ms = FIRST_SYNC_MS;
    loop {
        if shard
            .stopping()
            .interrupts_sleep(Duration::from_millis(wait_ms))
            .await
        {
            return;
        }
        wait_ms = SYNC_INTERVAL_MS;
        let Some(master) = master_broker_addr(&shard) else {
            continue;
        };
        if let Err(reject) = sync_all(&shard, &master).await {
            tracing::warn!(%master, remark = %reject.remark, "metadata sync from the master failed");
        }
    }
}

fn master_broker_addr(shard: &Shard) -> Option<String> {
    shard.control().ok()?.ha.master.borrow().broker_addr.clone()
}

/// One round: topics, consumer offsets, delay offsets, groups.
pub(crate) async fn sync_all(shard: &Rc<Shard>, master: &str) -> Result<(), Reject> {
    let topics: TopicTable = ask_json(shard, master, request_code::GET_ALL_TOPIC_CONFIG).await?;
    shard
        .change_table::<TopicTable, ()>(|table| {
            let changed = table.data_version != topics.data_version;
            if changed {
                *table = topics;
            }
            Ok(((), changed))
        })
        .await?;
    let offsets: OffsetFile =
        ask_json(shard, master, request_code::GET_ALL_CONSUMER_OFFSET).await?;
    let offsets = Arc::new(offsets.offset_table);
    for reply in shard.call_all(MergeOffsets(offsets)).await {
        reply??;
    }
    let delay = ask(shard, master, request_code::GET_ALL_DELAY_OFFSET).await?;
    if !delay.body.is_empty() {
        shard
            .env()
            .config_dir
            .write_bytes(DELAY_OFFSET_FILE, &delay.body)
            .map_err(|e| Reject::system(e.to_string()))?;
    }
    let modes: RequestModeTable =
        ask_json(shard, master, request_code::GET_ALL_MESSAGE_REQUEST_MODE).await?;
    shard
        .change_table::<RequestModeTable, ()>(|table| {
            let changed = *table != modes;
            if changed {
                *table = modes;
            }
            Ok(((), changed))
        })
        .await?;
    let groups: GroupTable = ask_json(
        shard,
        master,
        request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    )
    .await?;
    shard
        .change_table::<GroupTable, ()>(|table| {
            let changed = table.data_version != groups.data_version;
            if changed {
                *table = groups;
            }
            Ok(((), changed))
        })
        .await?;
    Ok(())
}

async fn ask(shard: &Shard, master: &str, code: i32) -> Result<RemotingCommand, Reject> {
    let addr = parse_host_port(master, "masterAddr").map_err(|e| Reject::system(e.to_string()))?;
    let control = shard.control()?;
    let timeout_ms = shard.config().register_broker_timeout_ms;
    let answer = control
        .namesrv
        .call(addr, RemotingCommand::request(code), timeout_ms)
        .await
        .map_err(|e| Reject::system(format!("asking the master ({code}): {e}")))?;
    if answer.code != response_code::SUCCESS {
        return Err(Reject::system(format!(
            "the master answered {code} with code {}: {}",
            answer.code,
            answer.remark.unwrap_or_default()
        )));
    }
    Ok(answer)
}

async fn ask_json<T: serde::de::DeserializeOwned>(
    shard: &Shard,
    master: &str,
    code: i32,
) -> Result<T, Reject> {
    let answer = ask(shard, master, code).await?;
    decode_master_json(&answer.body)
        .map_err(|e| Reject::system(format!("the master's answer to {code}: {e}")))
}

/// A master's JSON body. A Java master's is fastjson's, which writes
/// integer map keys unquoted: GET_ALL_CONSUMER_OFFSET's `offsetTable` is
/// `{"topic@group":{0:12,1:3}}` (`ConsumerOffsetSerializeWrapper`).
fn decode_master_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    match decode_json(body) {
        Ok(value) => Ok(value),
        Err(first) => {
            let text = std::str::from_utf8(body).map_err(|_| first.to_string())?;
            serde_json::from_str(&quote_integer_keys(text)).map_err(|_| first.to_string())
        }
    }
}

/// On every shard: the master's consumer offsets of the queues it owns.
#[derive(Clone)]
struct MergeOffsets(Arc<OffsetMap>);

impl ShardCall<Shard> for MergeOffsets {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let mut offsets = shard.offsets().borrow_mut();
        for (key, queues) in self.0.iter() {
            let Some((topic, group)) = key.split_once('@') else {
                continue;
            };
            for (queue_id, offset) in queues {
                if shard.owner_of(topic, *queue_id) == shard.index() {
                    offsets.commit(group, topic, *queue_id, *offset);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_java_masters_consumer_offsets() {
        // What a 5.5.0 broker answers to GET_ALL_CONSUMER_OFFSET.
        let body = br#"{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1765000000000},"offsetTable":{"T@G":{0:10,1:12},"%RETRY%G@G":{0:0}}}"#;
        let file: OffsetFile = decode_master_json(body).unwrap();
        assert_eq!(file.offset_table["T@G"][&1], 12);
        assert_eq!(file.offset_table["%RETRY%G@G"][&0], 0);
        let broken = decode_master_json::<OffsetFile>(b"{\"offsetTable\":{0:").unwrap_err();
        assert!(broken.contains("line 1"), "{broken}");
    }
}

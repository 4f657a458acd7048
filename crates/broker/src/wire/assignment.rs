//! Broker-side load balancing (RocketMQ 5's `QueryAssignmentProcessor`):
//! SET_MESSAGE_REQUEST_MODE (401) says a group pops (or pulls) a topic,
//! and QUERY_ASSIGNMENT (400) tells a consumer which of this broker's
//! queues it takes and how: in POP mode every consumer of the group gets
//! every queue (the broker hands messages out); in PULL mode the queues
//! are shared out averagely among the group's live consumers
//! (`AllocateMessageQueueAveragely`), as a client-side rebalance would.
//! Only this broker's queues are assigned. GET_ALL_MESSAGE_REQUEST_MODE
//! (402) answers the whole table.

use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::{Deserialize, Serialize};

use crate::error::Reject;
use crate::services::request_modes::{RequestMode, RequestModeEntry, RequestModeTable};
use crate::services::topics::RETRY_TOPIC_PREFIX;
use crate::shard::Shard;

/// `QueryAssignmentRequestBody`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryAssignment {
    topic: String,
    consumer_group: String,
    client_id: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Queue {
    topic: String,
    broker_name: String,
    queue_id: i32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Assignment {
    message_queue: Queue,
    mode: RequestMode,
    attachments: Option<()>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Assignments {
    message_queue_assignments: Vec<Assignment>,
}

fn bad_body(what: &str, e: serde_json::Error) -> Reject {
    Reject::new(
        response_code::INVALID_PARAMETER,
        format!("{what} body: {e}"),
    )
}

/// SET_MESSAGE_REQUEST_MODE: the JSON body `SetMessageRequestModeRequestBody`.
pub(crate) async fn set_request_mode(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let entry: RequestModeEntry = serde_json::from_slice(&request.body)
        .map_err(|e| bad_body("SET_MESSAGE_REQUEST_MODE", e))?;
    if entry.topic.starts_with(RETRY_TOPIC_PREFIX) {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            "retry topic is not allowed to set mode",
        ));
    }
    if shard.topic(&entry.topic).is_none() {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", entry.topic),
        ));
    }
    shard.call(0, SetRequestMode(entry)).await??;
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

/// On shard 0: the one writer of the request-mode table.
struct SetRequestMode(RequestModeEntry);

impl ShardCall<Shard> for SetRequestMode {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard
            .change_table::<RequestModeTable, ()>(|table| Ok(((), table.set(self.0))))
            .await
    }
}

/// QUERY_ASSIGNMENT: the JSON body `QueryAssignmentRequestBody`.
pub(crate) async fn query_assignment(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let query: QueryAssignment =
        serde_json::from_slice(&request.body).map_err(|e| bad_body("QUERY_ASSIGNMENT", e))?;
    let Some(read_queues) = shard.with_topic(&query.topic, |t| t.read_queue_nums) else {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", query.topic),
        ));
    };
    let mode = shard
        .request_modes
        .with(|t| t.mode(&query.topic, &query.consumer_group));
    let mine: Vec<i32> = match mode {
        RequestMode::Pop => (0..read_queues).collect(),
        RequestMode::Pull => {
            let clients: Vec<String> = shard.clients.with(|c| {
                c.consumers
                    .get(&query.consumer_group)
                    .map(|g| g.clients.keys().cloned().collect())
                    .unwrap_or_default()
            });
            share(read_queues, &clients, &query.client_id)
        }
    };
    let broker_name = shard.config().broker_name.clone();
    let body = Assignments {
        message_queue_assignments: mine
            .into_iter()
            .map(|queue_id| Assignment {
                message_queue: Queue {
                    topic: query.topic.clone(),
                    broker_name: broker_name.clone(),
                    queue_id,
                },
                mode,
                attachments: None,
            })
            .collect(),
    };
    let body = serde_json::to_vec(&body).map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

/// `AllocateMessageQueueAveragely` over queues `0..queues` for the sorted
/// `clients`: the queues of `me` (none when it is not a known consumer).
fn share(queues: i32, clients: &[String], me: &str) -> Vec<i32> {
    let Some(index) = clients.iter().position(|c| c == me) else {
        return Vec::new();
    };
    let (queues, count) = (queues.max(0) as usize, clients.len());
    let modulo = queues % count;
    let size = if queues <= count {
        1
    } else if modulo > 0 && index < modulo {
        queues / count + 1
    } else {
        queues / count
    };
    let start = if modulo > 0 && index < modulo {
        index * size
    } else {
        index * size + modulo
    };
    (start..queues.min(start + size))
        .map(|q| q as i32)
        .collect()
}

/// GET_ALL_MESSAGE_REQUEST_MODE (402): the whole table, as
/// messageRequestMode.json holds it (a slave's metadata sync reads it).
pub(crate) fn all_request_modes(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body = shard
        .request_modes
        .with(serde_json::to_vec)
        .map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn queues_are_shared_as_javas_averagely_strategy_shares_them() {
        let clients: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(share(8, &clients, "a"), vec![0, 1, 2]);
        assert_eq!(share(8, &clients, "b"), vec![3, 4, 5]);
        assert_eq!(share(8, &clients, "c"), vec![6, 7]);
        assert_eq!(share(2, &clients, "c"), Vec::<i32>::new());
        assert_eq!(share(8, &clients, "z"), Vec::<i32>::new());
    }
}

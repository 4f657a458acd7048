//! Broker-side load balancing (RocketMQ 5's `QueryAssignmentProcessor`):
//! SET_MESSAGE_REQUEST_MODE (401) says a group pops (or pulls) a topic,
//! and QUERY_ASSIGNMENT (400) tells a consumer which of the topic's queues,
//! on every broker its route names, it takes and how
//! (`services::assignment`). GET_ALL_MESSAGE_REQUEST_MODE (402) answers the
//! whole table.

use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::{Deserialize, Serialize};

use ferrocket_protocol::body::perm;

use crate::error::Reject;
use crate::services::assignment::{self, Strategy};
use crate::services::request_modes::{RequestMode, RequestModeEntry, RequestModeTable};
use crate::services::topics::RETRY_TOPIC_PREFIX;
use crate::shard::routes::TopicQueues;
use crate::shard::Shard;

/// `QueryAssignmentRequestBody`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryAssignment {
    topic: String,
    consumer_group: String,
    client_id: String,
    #[serde(default)]
    message_model: Option<String>,
    #[serde(default)]
    strategy_name: Option<String>,
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
    let queues = topic_queues(shard, &query.topic).await;
    if queues.is_empty() {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", query.topic),
        ));
    }
    let entry = shard
        .request_modes()
        .with(|t| t.entry(&query.topic, &query.consumer_group).cloned());
    let mode = entry.as_ref().map_or(RequestMode::Pull, |e| e.mode);
    let mine = match query.message_model.as_deref() {
        Some("BROADCASTING") => queues,
        _ => clustering_share(shard, &query, &queues, entry.as_ref()),
    };
    let body = Assignments {
        message_queue_assignments: mine
            .into_iter()
            .map(|queue| Assignment {
                message_queue: Queue {
                    topic: query.topic.clone(),
                    broker_name: queue.broker_name,
                    queue_id: queue.queue_id,
                },
                mode,
                attachments: None,
            })
            .collect(),
    };
    let body = serde_json::to_vec(&body).map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

/// The topic's readable queues on every broker of its route (asked of the
/// name servers through shard 0) and on this broker, sorted.
async fn topic_queues(shard: &Rc<Shard>, topic: &str) -> Vec<assignment::Queue> {
    let ask = TopicQueues {
        topic: topic.to_string(),
    };
    let mut queues = shard.call(0, ask).await.ok().flatten().unwrap_or_default();
    let broker_name = shard.config().broker_name.clone();
    let local = shard.with_topic(topic, |t| {
        (t.perm & perm::READ != 0).then_some(t.read_queue_nums)
    });
    if let Some(Some(read_queues)) = local {
        queues.retain(|q| q.broker_name != broker_name);
        queues.extend((0..read_queues.max(0)).map(|queue_id| assignment::Queue {
            broker_name: broker_name.clone(),
            queue_id,
        }));
        queues.sort();
    }
    queues
}

/// A clustering consumer's share among the group's consumers known here.
fn clustering_share(
    shard: &Shard,
    query: &QueryAssignment,
    queues: &[assignment::Queue],
    entry: Option<&RequestModeEntry>,
) -> Vec<assignment::Queue> {
    let Some(strategy) = Strategy::parse(query.strategy_name.as_deref()) else {
        tracing::warn!(strategy = ?query.strategy_name, "QUERY_ASSIGNMENT: unsupported strategy, no assignment");
        return Vec::new();
    };
    let mut clients: Vec<String> = shard.clients().with(|c| {
        c.consumers
            .get(&query.consumer_group)
            .map(|g| g.clients.keys().cloned().collect())
            .unwrap_or_default()
    });
    clients.sort();
    match entry {
        Some(e) if e.mode == RequestMode::Pop => {
            let share = e.pop_share_queue_num;
            assignment::allocate_for_pop(strategy, queues, &clients, &query.client_id, share)
        }
        _ => strategy.allocate(queues, &clients, &query.client_id),
    }
}

/// GET_ALL_MESSAGE_REQUEST_MODE (402): the whole table, as
/// messageRequestMode.json holds it (a slave's metadata sync reads it).
pub(crate) fn all_request_modes(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body = shard
        .request_modes()
        .with(serde_json::to_vec)
        .map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

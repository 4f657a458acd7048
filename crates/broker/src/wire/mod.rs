//! The Remoting request handler of a shard: dispatches by request code to
//! one module per request family. Anything it does not know gets
//! REQUEST_CODE_NOT_SUPPORTED, with a remark naming it (`unsupported`); a processor's rejection becomes an error
//! response, never a dropped connection.

mod admin_lists;
pub(crate) mod assignment;
mod auth_admin;
pub(crate) mod broker_config;
pub(crate) mod broker_stats;
pub(crate) mod client;
pub(crate) mod consumer_admin;
mod consumer_calls;
pub(crate) mod group_admin;
mod lite;
pub(crate) mod local;
pub(crate) mod locks;
pub(crate) mod offsets;
pub(crate) mod pop;
mod producer_admin;
pub(crate) mod pull;
pub(crate) mod query;
mod recall;
mod refusals;
pub(crate) mod replication;
pub(crate) mod reply;
pub(crate) mod reset;
pub(crate) mod retry;
pub(crate) mod send;
mod store_views;
pub(crate) mod topic_admin;
pub(crate) mod topic_stats;
pub(crate) mod transaction;
mod unsupported;

use std::rc::Rc;
use std::time::Instant;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{Connection, HandlerFuture, RequestHandler};

use crate::error::Reject;
use crate::services::metrics::RpcKey;
use crate::shard::Shard;

/// The requests of a busy producer or consumer, handled inline; every
/// other request is handled by [`dispatch_other`] in a box of its own.
///
/// A request's task holds the future of the largest handler it could run:
/// with every handler inline that was 2,120 bytes (the retry path's), moved
/// into a fresh allocation for each request. Boxing the others keeps that
/// to the hot handlers' size, and only rare requests pay the extra box.
async fn dispatch(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    use request_code::*;
    match request.code {
        SEND_MESSAGE | SEND_MESSAGE_V2 => send::send_message(shard, conn, request).await,
        SEND_BATCH_MESSAGE => send::send_batch(shard, conn, request).await,
        // A lite pull consumer's pull (5.x clients); Java's broker hands
        // both codes to the same processor.
        PULL_MESSAGE | LITE_PULL_MESSAGE => pull::pull_message(shard, conn, request).await,
        POP_MESSAGE => pop::pop_message(shard, conn, request).await,
        ACK_MESSAGE => pop::ack::ack_message(shard, request).await,
        UPDATE_CONSUMER_OFFSET => offsets::update_consumer_offset(shard, request).await,
        _ => Box::pin(dispatch_other(shard, conn, request)).await,
    }
}

async fn dispatch_other(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    use request_code::*;
    match request.code {
        QUERY_CONSUMER_OFFSET => offsets::query_consumer_offset(shard, request).await,
        GET_MAX_OFFSET => offsets::queue_offset(shard, request, true).await,
        GET_MIN_OFFSET => offsets::queue_offset(shard, request, false).await,
        HEART_BEAT => {
            client::on_heartbeat(shard, conn, request).await;
            client::heartbeat(shard, conn, request).await
        }
        UNREGISTER_CLIENT => client::unregister_client(shard, request).await,
        GET_CONSUMER_LIST_BY_GROUP => client::consumer_list(shard, request),
        CHECK_CLIENT_CONFIG => client::check_client_config(shard, request),
        UPDATE_AND_CREATE_TOPIC => topic_admin::update_and_create_topic(shard, request).await,
        GET_ALL_TOPIC_CONFIG => Ok(topic_admin::all_topic_config(shard, request)),
        GET_TOPIC_CONFIG => topic_admin::topic_config(shard, request),
        DELETE_TOPIC_IN_BROKER => topic_admin::delete_topic(shard, request).await,
        GET_BROKER_RUNTIME_INFO => Ok(topic_admin::runtime_info(shard, request).await),
        GET_BROKER_CONFIG => Ok(broker_config::get_broker_config(shard, request)),
        UPDATE_BROKER_CONFIG => broker_config::update_broker_config(shard, request).await,
        QUERY_MESSAGE => query::query_message(shard, conn, request).await,
        VIEW_MESSAGE_BY_ID => query::view_message_by_id(shard, conn, request).await,
        SEARCH_OFFSET_BY_TIMESTAMP => query::queue_time_request(shard, request, true).await,
        GET_EARLIEST_MSG_STORETIME => query::queue_time_request(shard, request, false).await,
        END_TRANSACTION => transaction::end_transaction(shard, conn, request).await,
        RECALL_MESSAGE => recall::recall_message(shard, conn, request).await,
        SEND_REPLY_MESSAGE | SEND_REPLY_MESSAGE_V2 => reply::send_reply(shard, conn, request).await,
        CONSUMER_SEND_MSG_BACK => retry::send_msg_back(shard, conn, request).await,
        LOCK_BATCH_MQ => locks::lock_batch(shard, request).await,
        UNLOCK_BATCH_MQ => locks::unlock_batch(shard, request).await,
        GET_CONSUMER_CONNECTION_LIST => consumer_admin::consumer_connections(shard, request).await,
        GET_CONSUMER_RUNNING_INFO => consumer_calls::consumer_running_info(shard, request).await,
        CONSUME_MESSAGE_DIRECTLY => {
            consumer_calls::consume_message_directly(shard, conn, request).await
        }
        GET_ALL_CONSUMER_OFFSET => consumer_admin::all_consumer_offsets(shard, request).await,
        GET_CONSUME_STATS => consumer_admin::consume_stats(shard, request).await,
        GET_TOPIC_STATS_INFO => topic_stats::topic_stats(shard, request).await,
        QUERY_TOPIC_CONSUME_BY_WHO => topic_stats::topic_consumed_by(shard, request).await,
        QUERY_TOPICS_BY_CONSUMER => topic_stats::topics_consumed(shard, request).await,
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => group_admin::update_and_create(shard, request).await,
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG => Ok(group_admin::all_configs(shard, request)),
        GET_SUBSCRIPTIONGROUP_CONFIG => group_admin::one_config(shard, request).await,
        DELETE_SUBSCRIPTIONGROUP => group_admin::delete(shard, request).await,
        INVOKE_BROKER_TO_RESET_OFFSET => reset::reset_offset(shard, request).await,
        GET_ALL_DELAY_OFFSET => topic_admin::all_delay_offsets(shard, request).await,
        GET_BROKER_HA_STATUS => replication::ha_status(shard, request).await,
        QUERY_ASSIGNMENT => assignment::query_assignment(shard, request).await,
        SET_MESSAGE_REQUEST_MODE => assignment::set_request_mode(shard, request).await,
        GET_ALL_MESSAGE_REQUEST_MODE => assignment::all_request_modes(shard, request),
        BATCH_ACK_MESSAGE => pop::ack::batch_ack(shard, request).await,
        CHANGE_MESSAGE_INVISIBLETIME => pop::ack::change_invisible_time(shard, request).await,
        PEEK_MESSAGE => pop::peek::peek_message(shard, request).await,
        NOTIFICATION => pop::peek::notification(shard, request).await,
        POLLING_INFO => pop::peek::polling_info(shard, request).await,
        POP_LITE_MESSAGE => lite::pop_lite_message(shard, conn, request).await,
        LITE_SUBSCRIPTION_CTL => lite::subscription_ctl(shard, request).await,
        GET_BROKER_LITE_INFO => Ok(lite::admin::broker_lite_info(shard, request)),
        GET_PARENT_TOPIC_INFO => lite::admin::parent_topic_info(shard, request),
        GET_LITE_TOPIC_INFO => lite::admin::lite_topic_info(shard, request),
        GET_LITE_CLIENT_INFO => lite::admin::lite_client_info(shard, request),
        GET_LITE_GROUP_INFO => lite::admin::lite_group_info(shard, request),
        TRIGGER_LITE_DISPATCH => lite::admin::trigger_lite_dispatch(request),
        3001..=3010 => auth_admin::handle(shard, request).await,
        VIEW_BROKER_STATS_DATA => broker_stats::view_broker_stats_data(shard, request).await,
        GET_BROKER_CONSUME_STATS => broker_stats::broker_consume_stats(shard, request).await,
        NOTIFY_BROKER_ROLE_CHANGED => Ok(replication::role_changed(shard, request)),
        NOTIFY_MIN_BROKER_ID_CHANGE => crate::tasks::acting_master::notified(shard, request).await,
        crate::tasks::acting_hand_back::HAND_BACK => {
            crate::tasks::acting_hand_back::answer(shard, request).await
        }
        GET_BROKER_EPOCH_CACHE => replication::epoch_cache(shard, request),
        store_views::GET_TIMER_CHECK_POINT => store_views::timer_check_point(shard, request).await,
        store_views::QUERY_CONSUME_QUEUE => store_views::query_consume_queue(shard, request).await,
        producer_admin::GET_PRODUCER_CONNECTION_LIST => {
            producer_admin::producer_connections(shard, request).await
        }
        producer_admin::GET_ALL_PRODUCER_INFO => {
            producer_admin::all_producer_info(shard, request).await
        }
        topic_admin::GET_SYSTEM_TOPIC_LIST_FROM_BROKER => {
            Ok(topic_admin::system_topics(shard, request))
        }
        admin_lists::UPDATE_AND_CREATE_TOPIC_LIST => {
            admin_lists::update_topics(shard, request).await
        }
        admin_lists::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST => {
            admin_lists::update_groups(shard, request).await
        }
        _ => Ok(unsupported::answer(request)),
    }
}

/// Who sent a request: a Remoting client over a socket, checked against
/// the ACL, or the in-broker front end, which checked its own callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    Remote,
    InProcess,
}

/// The answer to one request, with the ACL check for remote callers,
/// refusals logged and the call's latency recorded.
pub(crate) async fn answer(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
    caller: Caller,
) -> RemotingCommand {
    let started = Instant::now();
    let refusal = match caller {
        Caller::Remote => crate::shard::access::refusal(shard, conn, request),
        Caller::InProcess => None,
    };
    let response = match refusal {
        Some(refusal) => {
            // Sends, pulls and pops are logged below with the rest.
            if !refusals::is_refusal(request.code, refusal.code) {
                let remark = refusal.remark.as_deref().unwrap_or("");
                refusals::log_refusal(conn.peer_addr(), request.code, refusal.code, remark);
            }
            Ok(refusal)
        }
        None => dispatch(shard, conn, request).await,
    };
    let response = response.unwrap_or_else(|reject| {
        tracing::debug!(
            code = request.code,
            answer = reject.code,
            remark = %reject.remark,
            peer = %conn.peer_addr(),
            "request rejected"
        );
        reject.to_response(request)
    });
    if refusals::is_refusal(request.code, response.code) {
        let remark = response.remark.as_deref().unwrap_or("");
        refusals::log_refusal(conn.peer_addr(), request.code, response.code, remark);
    }
    let key = RpcKey {
        request_code: request.code,
        response_code: response.code,
        oneway: request.is_oneway(),
    };
    shard.metrics().observe_rpc(key, started.elapsed());
    response
}

impl RequestHandler for Shard {
    fn handle(self: Rc<Self>, conn: Rc<Connection>, request: RemotingCommand) -> HandlerFuture {
        Box::pin(async move { Some(answer(&self, &conn, &request, Caller::Remote).await) })
    }

    fn handoff(&self) -> Option<&ferrocket_runtime::server::Handoff> {
        // Fixed at start: not an online setting.
        self.env().handles.grpc_handoff.as_ref()
    }

    fn on_open(&self, conn: &Rc<Connection>) {
        self.connection_opened(conn);
    }

    fn on_close(&self, conn: &Connection) {
        Shard::connection_closed(self, conn.id());
        client::connection_closed(self, conn.id());
        client::forget_conn_info(self, conn.id());
    }
}

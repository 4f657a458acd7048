//! The Remoting request handler of a shard: dispatches by request code to
//! one module per request family. Anything it does not know gets
//! REQUEST_CODE_NOT_SUPPORTED; a processor's rejection becomes an error
//! response, never a dropped connection.

use std::rc::Rc;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{Connection, HandlerFuture, RequestHandler};

use crate::error::Reject;
use crate::shard::Shard;
use crate::{admin, client, consume, offsets, pull, send};

async fn dispatch(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    use request_code::*;
    match request.code {
        SEND_MESSAGE | SEND_MESSAGE_V2 => send::send_message(shard, conn, request).await,
        SEND_BATCH_MESSAGE => send::send_batch(shard, conn, request).await,
        PULL_MESSAGE => pull::pull_message(shard, request).await,
        QUERY_CONSUMER_OFFSET => offsets::query_consumer_offset(shard, request).await,
        UPDATE_CONSUMER_OFFSET => offsets::update_consumer_offset(shard, request).await,
        GET_MAX_OFFSET => offsets::queue_offset(shard, request, true).await,
        GET_MIN_OFFSET => offsets::queue_offset(shard, request, false).await,
        HEART_BEAT => {
            crate::consume::on_heartbeat(shard, conn, request).await;
            client::heartbeat(shard, conn, request).await
        }
        UNREGISTER_CLIENT => client::unregister_client(shard, request).await,
        GET_CONSUMER_LIST_BY_GROUP => client::consumer_list(shard, request),
        UPDATE_AND_CREATE_TOPIC => admin::update_and_create_topic(shard, request).await,
        GET_ALL_TOPIC_CONFIG => Ok(admin::all_topic_config(shard, request)),
        GET_TOPIC_CONFIG => admin::topic_config(shard, request),
        DELETE_TOPIC_IN_BROKER => admin::delete_topic(shard, request).await,
        GET_BROKER_RUNTIME_INFO => Ok(admin::runtime_info(shard, request).await),
        QUERY_MESSAGE => crate::query::query_message(shard, request).await,
        VIEW_MESSAGE_BY_ID => crate::query::view_message_by_id(shard, request),
        SEARCH_OFFSET_BY_TIMESTAMP => crate::query::queue_time_request(shard, request, true).await,
        GET_EARLIEST_MSG_STORETIME => crate::query::queue_time_request(shard, request, false).await,
        END_TRANSACTION => crate::transaction::end_transaction(shard, request).await,
        SEND_REPLY_MESSAGE | SEND_REPLY_MESSAGE_V2 => {
            crate::reply::send_reply(shard, conn, request).await
        }
        CONSUMER_SEND_MSG_BACK => consume::retry::send_msg_back(shard, request).await,
        LOCK_BATCH_MQ => consume::locks::lock_batch(shard, request).await,
        UNLOCK_BATCH_MQ => consume::locks::unlock_batch(shard, request).await,
        GET_CONSUMER_CONNECTION_LIST => consume::admin::consumer_connections(shard, request).await,
        GET_ALL_CONSUMER_OFFSET => consume::admin::all_consumer_offsets(shard, request).await,
        GET_CONSUME_STATS => consume::admin::consume_stats(shard, request).await,
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            consume::group_admin::update_and_create(shard, request).await
        }
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG => Ok(consume::group_admin::all_configs(shard, request)),
        DELETE_SUBSCRIPTIONGROUP => consume::group_admin::delete(shard, request).await,
        INVOKE_BROKER_TO_RESET_OFFSET => consume::reset::reset_offset(shard, request).await,
        GET_ALL_DELAY_OFFSET => crate::schedule::all_delay_offsets(shard, request).await,
        _ => Ok(RemotingCommand::not_supported(request)),
    }
}

impl RequestHandler for Shard {
    fn handle(self: Rc<Self>, conn: Rc<Connection>, request: RemotingCommand) -> HandlerFuture {
        Box::pin(async move {
            let response = match dispatch(&self, &conn, &request).await {
                Ok(response) => response,
                Err(reject) => {
                    tracing::debug!(
                        code = request.code,
                        answer = reject.code,
                        remark = %reject.remark,
                        peer = %conn.peer_addr(),
                        "request rejected"
                    );
                    reject.to_response(&request)
                }
            };
            Some(response)
        })
    }

    fn on_open(&self, conn: &Rc<Connection>) {
        self.connection_opened(conn);
    }

    fn on_close(&self, conn: &Connection) {
        Shard::connection_closed(self, conn.id());
        client::connection_closed(self, conn.id());
        consume::connection_closed(self, conn.id());
    }
}

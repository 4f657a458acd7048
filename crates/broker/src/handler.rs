//! The Remoting request handler of a shard: dispatches by request code to
//! one module per request family. Anything it does not know gets
//! REQUEST_CODE_NOT_SUPPORTED; a processor's rejection becomes an error
//! response, never a dropped connection.

use std::rc::Rc;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::{Connection, HandlerFuture, RequestHandler};

use crate::shard::Shard;
use crate::util::Reject;
use crate::{admin, client, offsets, pull, send};

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
        HEART_BEAT => client::heartbeat(shard, conn, request).await,
        UNREGISTER_CLIENT => client::unregister_client(shard, request).await,
        GET_CONSUMER_LIST_BY_GROUP => client::consumer_list(shard, request),
        UPDATE_AND_CREATE_TOPIC => admin::update_and_create_topic(shard, request).await,
        GET_ALL_TOPIC_CONFIG => Ok(admin::all_topic_config(shard, request)),
        GET_TOPIC_CONFIG => admin::topic_config(shard, request),
        DELETE_TOPIC_IN_BROKER => admin::delete_topic(shard, request).await,
        GET_BROKER_RUNTIME_INFO => Ok(admin::runtime_info(shard, request).await),
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
    }
}

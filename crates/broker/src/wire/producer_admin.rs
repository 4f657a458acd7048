//! Producer administration (`AdminBrokerProcessor`): who produces, from
//! the producer groups the clients' heartbeats registered.
//! GET_PRODUCER_CONNECTION_LIST (204, mqadmin's `producerConnection`) and
//! GET_ALL_PRODUCER_INFO (328, mqadmin's `producer`). The registry is read
//! from shard 0's copy, the only one with exact heartbeat times; addresses,
//! languages and versions from the shards holding the connections.

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::encode_json;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use crate::error::Reject;
use crate::services::clients::{ClientChannel, ConnInfo};
use crate::shard::clients::conn_infos;
use crate::shard::Shard;

/// Request codes this module answers (RocketMQ `RequestCode`).
pub(crate) const GET_PRODUCER_CONNECTION_LIST: i32 = 204;
pub(crate) const GET_ALL_PRODUCER_INFO: i32 = 328;

/// The producer groups: group -> client id -> its connection.
type ProducerGroups = BTreeMap<String, BTreeMap<String, ClientChannel>>;

/// One producer connection (`Connection` in `ProducerConnection`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct ConnectionBody {
    client_id: String,
    client_addr: String,
    language: String,
    version: i32,
}

/// GET_PRODUCER_CONNECTION_LIST body (`ProducerConnection`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProducerConnectionBody {
    connection_set: Vec<ConnectionBody>,
}

/// One producer of GET_ALL_PRODUCER_INFO (`ProducerInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProducerInfoBody {
    client_id: String,
    /// Java's `Channel.remoteAddress().toString()`: `/ip:port`.
    #[serde(rename = "remoteIP")]
    remote_ip: String,
    language: String,
    version: i32,
    last_update_timestamp: i64,
}

/// GET_ALL_PRODUCER_INFO body (`ProducerTableInfo`): group -> producers.
#[derive(Debug, Serialize)]
struct ProducerTableBody {
    data: BTreeMap<String, Vec<ProducerInfoBody>>,
}

/// On shard 0: a copy of the producer groups.
struct PeekProducers;

impl ShardCall<Shard> for PeekProducers {
    type Reply = ProducerGroups;

    async fn run(self, shard: Rc<Shard>) -> ProducerGroups {
        shard.clients().with(|clients| clients.producers.clone())
    }
}

/// The producer groups with what each connection said about itself.
async fn producers(shard: &Rc<Shard>) -> Result<(ProducerGroups, BTreeMap<u64, ConnInfo>), Reject> {
    let groups = shard.call(0, PeekProducers).await?;
    let conn_ids: Vec<u64> = groups
        .values()
        .flat_map(|clients| clients.values().map(|c| c.conn_id))
        .collect();
    let known = conn_infos(shard, &conn_ids).await?;
    Ok((groups, known))
}

/// A connection's language as Java's `LanguageCode` names it.
fn language(conn: &ConnInfo) -> String {
    if conn.language.is_empty() {
        "OTHER".into()
    } else {
        conn.language.clone()
    }
}

/// GET_PRODUCER_CONNECTION_LIST (header producerGroup): the group's
/// clients; SYSTEM_ERROR with Java's remark when no client of it is here.
pub(crate) async fn producer_connections(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("producerGroup")?.to_string();
    let (groups, known) = producers(shard).await?;
    let Some(clients) = groups.get(&group).filter(|c| !c.is_empty()) else {
        return Err(Reject::system(format!(
            "the producer group[{group}] not exist"
        )));
    };
    let mut connection_set: Vec<ConnectionBody> = clients
        .iter()
        .map(|(client_id, channel)| {
            let conn = known.get(&channel.conn_id).cloned().unwrap_or_default();
            ConnectionBody {
                client_id: client_id.clone(),
                language: language(&conn),
                client_addr: conn.addr,
                version: conn.version,
            }
        })
        .collect();
    connection_set.sort();
    let body = ProducerConnectionBody { connection_set };
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(encode_json(&body)),
    )
}

/// GET_ALL_PRODUCER_INFO: every producer group's clients.
pub(crate) async fn all_producer_info(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let (groups, known) = producers(shard).await?;
    let data = groups
        .into_iter()
        .map(|(group, clients)| {
            let list = clients
                .into_iter()
                .map(|(client_id, channel)| {
                    let conn = known.get(&channel.conn_id).cloned().unwrap_or_default();
                    ProducerInfoBody {
                        client_id,
                        remote_ip: format!("/{}", conn.addr),
                        language: language(&conn),
                        version: conn.version,
                        last_update_timestamp: channel.last_heartbeat_ms,
                    }
                })
                .collect();
            (group, list)
        })
        .collect();
    let body = ProducerTableBody { data };
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(encode_json(&body)),
    )
}

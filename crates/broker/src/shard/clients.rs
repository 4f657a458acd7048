//! The client registry through shard 0, its one writer: heartbeats,
//! unregistering, closed connections and expiry; and telling a group's
//! members when its membership changed (NOTIFY_CONSUMER_IDS_CHANGED), so
//! they rebalance now rather than at their next periodic rebalance.

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::HeartbeatData;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::shard_of_conn_id;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::clients::{ClientTable, ConnInfo};
use crate::services::topics::{retry_topic, TopicChange};

/// On shard 0: a client's heartbeat enters the registry.
pub(crate) struct Heartbeat {
    pub conn_id: u64,
    pub data: HeartbeatData,
}

impl ShardCall<Shard> for Heartbeat {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.register_heartbeat(self.conn_id, self.data).await
    }
}

/// On shard 0: a client leaves the registry (UNREGISTER_CLIENT).
pub(crate) struct Unregister {
    pub client_id: String,
    pub producer_group: Option<String>,
    pub consumer_group: Option<String>,
}

impl ShardCall<Shard> for Unregister {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let producer = self.producer_group.as_deref();
        let consumer = self.consumer_group.as_deref();
        shard
            .change_clients(|table| table.unregister(&self.client_id, producer, consumer))
            .await
    }
}

/// On shard 0: the clients of a closed connection leave the registry.
pub(crate) struct ConnectionClosed {
    pub conn_id: u64,
}

impl ShardCall<Shard> for ConnectionClosed {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard
            .change_clients(|table| table.connection_closed(self.conn_id))
            .await
    }
}

/// On the shard holding these connections: tell them `group` changed.
struct NotifyConsumerIdsChanged {
    group: String,
    conn_ids: Vec<u64>,
}

impl ShardCall<Shard> for NotifyConsumerIdsChanged {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        for conn_id in &self.conn_ids {
            let Some(conn) = shard.connection(*conn_id) else {
                continue;
            };
            let notice = RemotingCommand::request(request_code::NOTIFY_CONSUMER_IDS_CHANGED)
                .with_ext("consumerGroup", self.group.as_str());
            if let Err(err) = conn.send_oneway(notice) {
                tracing::debug!(conn_id, %err, "consumer change notification dropped");
            }
        }
    }
}

impl Shard {
    /// On shard 0: checks room for the heartbeat's groups, makes missing
    /// retry topics of existing groups, then registers its clients.
    async fn register_heartbeat(&self, conn_id: u64, data: HeartbeatData) -> Result<(), Reject> {
        let config = self.config();
        let control = self.control()?;
        control
            .clients
            .read(|table| {
                table.check_room(
                    &data,
                    config.subscription_group_count_max,
                    config.clients_per_group_max,
                )
            })
            .map_err(Reject::system)?;
        for group in ClientTable::clustering_groups(&data) {
            // A retry topic only for a group that exists (the receiving shard
            // created it when allowed), as Java's heartBeat does.
            let exists = self.groups().with(|t| t.get(group).is_some());
            let retry = retry_topic(group);
            if exists
                && !control
                    .topics
                    .read(|t| t.topic_config_table.contains_key(&retry))
            {
                let group = group.to_string();
                self.apply_topic_change(TopicChange::EnsureRetry { group })
                    .await?;
            }
        }
        let now = now_ms();
        self.change_clients(|table| table.heartbeat(conn_id, &data, now))
            .await
    }

    /// On shard 0: applies `change` to the client registry; when it changed
    /// something, every shard gets the new table and the members of each
    /// group whose membership changed are told so.
    pub async fn change_clients(
        &self,
        change: impl FnOnce(&mut ClientTable) -> bool,
    ) -> Result<(), Reject> {
        let changed_groups = self
            .change_table::<ClientTable, _>(|table| {
                let before = table.group_signatures();
                if !change(table) {
                    return Ok((Vec::new(), false));
                }
                let changed: Vec<String> = table
                    .group_signatures()
                    .into_iter()
                    .filter(|(group, signature)| before.get(group) != Some(signature))
                    .map(|(group, _)| group)
                    .collect();
                Ok((changed, true))
            })
            .await?;
        for group in changed_groups {
            self.notify_group(group);
        }
        Ok(())
    }

    /// Sends NOTIFY_CONSUMER_IDS_CHANGED to every member of `group`, through
    /// the shards holding their connections (`notifyConsumerIdsChanged`).
    fn notify_group(&self, group: String) {
        let Some(mesh) = self.mesh() else {
            return;
        };
        let mut by_shard: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for conn_id in self.clients().with(|table| table.group_connections(&group)) {
            by_shard
                .entry(usize::from(shard_of_conn_id(conn_id)))
                .or_default()
                .push(conn_id);
        }
        for (target, conn_ids) in by_shard {
            if target >= self.count {
                continue;
            }
            let mesh = mesh.clone();
            let notify = NotifyConsumerIdsChanged {
                group: group.clone(),
                conn_ids,
            };
            glommio::spawn_local(async move {
                if let Err(err) = mesh.call(target, notify).await {
                    tracing::debug!(target, %err, "consumer change notification not delivered");
                }
            })
            .detach();
        }
    }
}

/// On the shard holding them: what these connections said about themselves.
struct ConnInfos(Vec<u64>);

impl ShardCall<Shard> for ConnInfos {
    type Reply = Vec<(u64, ConnInfo)>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let conns = shard.conn_infos().borrow();
        self.0
            .into_iter()
            .filter_map(|id| conns.get(&id).map(|info| (id, info.clone())))
            .collect()
    }
}

/// What the connections of `conn_ids` said about themselves, from the
/// shards holding them.
pub(crate) async fn conn_infos(
    shard: &Shard,
    conn_ids: &[u64],
) -> Result<BTreeMap<u64, ConnInfo>, Reject> {
    let mut by_shard: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for &conn_id in conn_ids {
        by_shard
            .entry(usize::from(shard_of_conn_id(conn_id)))
            .or_default()
            .push(conn_id);
    }
    let mut known = BTreeMap::new();
    for (target, ids) in by_shard {
        if target < shard.count {
            known.extend(shard.call(target, ConnInfos(ids)).await?);
        }
    }
    Ok(known)
}

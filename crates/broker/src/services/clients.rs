//! The client registry (`ConsumerManager` / `ProducerManager`): who is in
//! which group, what each consumer group subscribes to, on which connection.
//! Shard 0 keeps the master copy; every shard reads a snapshot. A snapshot
//! is re-sent only when membership or subscriptions change, not on every
//! heartbeat, so last-heartbeat times are exact only in the master copy.

use std::collections::BTreeMap;

use ferrocket_protocol::body::{
    ConsumeFromWhere, ConsumeType, HeartbeatData, MessageModel, SubscriptionData,
};

/// What a connection said about itself in its heartbeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnInfo {
    pub addr: String,
    pub language: String,
    pub version: i32,
}

/// One client's connection in a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientChannel {
    /// The connection id (its shard is in the top bits).
    pub conn_id: u64,
    pub last_heartbeat_ms: i64,
}

/// A consumer group (`ConsumerGroupInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroup {
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub clients: BTreeMap<String, ClientChannel>,
    /// By topic.
    pub subscriptions: BTreeMap<String, SubscriptionData>,
}

/// A consumer group's client ids and (topic, expression) subscriptions.
pub type GroupSignature = (Vec<String>, Vec<(String, String)>);

/// Every group known to the broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientTable {
    pub consumers: BTreeMap<String, ConsumerGroup>,
    pub producers: BTreeMap<String, BTreeMap<String, ClientChannel>>,
}

fn same_subscription(a: &SubscriptionData, b: &SubscriptionData) -> bool {
    a.topic == b.topic && a.sub_string == b.sub_string && a.expression_type == b.expression_type
}

impl ClientTable {
    /// Records a heartbeat; returns whether membership or subscriptions
    /// changed (the snapshot must be re-sent).
    pub fn heartbeat(&mut self, conn_id: u64, data: &HeartbeatData, now_ms: i64) -> bool {
        let mut changed = false;
        let channel = ClientChannel {
            conn_id,
            last_heartbeat_ms: now_ms,
        };
        for consumer in &data.consumer_data_set {
            if consumer.group_name.is_empty() {
                continue;
            }
            let group = self
                .consumers
                .entry(consumer.group_name.clone())
                .or_insert_with(|| {
                    changed = true;
                    ConsumerGroup::default()
                });
            if group.consume_type != consumer.consume_type
                || group.message_model != consumer.message_model
                || group.consume_from_where != consumer.consume_from_where
            {
                group.consume_type = consumer.consume_type;
                group.message_model = consumer.message_model;
                group.consume_from_where = consumer.consume_from_where;
                changed = true;
            }
            match group.clients.get_mut(&data.client_id) {
                Some(existing) if existing.conn_id == conn_id => {
                    existing.last_heartbeat_ms = now_ms;
                }
                _ => {
                    group
                        .clients
                        .insert(data.client_id.clone(), channel.clone());
                    changed = true;
                }
            }
            let subscriptions: BTreeMap<String, SubscriptionData> = consumer
                .subscription_data_set
                .iter()
                .filter(|s| !s.topic.is_empty())
                .map(|s| (s.topic.clone(), s.clone()))
                .collect();
            let same = subscriptions.len() == group.subscriptions.len()
                && subscriptions.iter().all(|(topic, new)| {
                    group
                        .subscriptions
                        .get(topic)
                        .is_some_and(|old| same_subscription(old, new))
                });
            if !same {
                group.subscriptions = subscriptions;
                changed = true;
            }
        }
        for producer in &data.producer_data_set {
            if producer.group_name.is_empty() {
                continue;
            }
            let group = self
                .producers
                .entry(producer.group_name.clone())
                .or_default();
            match group.get_mut(&data.client_id) {
                Some(existing) if existing.conn_id == conn_id => {
                    existing.last_heartbeat_ms = now_ms
                }
                _ => {
                    group.insert(data.client_id.clone(), channel.clone());
                    changed = true;
                }
            }
        }
        changed
    }

    /// UNREGISTER_CLIENT: removes the client from the named groups.
    pub fn unregister(
        &mut self,
        client_id: &str,
        producer_group: Option<&str>,
        consumer_group: Option<&str>,
    ) -> bool {
        let mut changed = false;
        if let Some(name) = producer_group {
            if let Some(group) = self.producers.get_mut(name) {
                changed |= group.remove(client_id).is_some();
                if group.is_empty() {
                    self.producers.remove(name);
                }
            }
        }
        if let Some(name) = consumer_group {
            if let Some(group) = self.consumers.get_mut(name) {
                changed |= group.clients.remove(client_id).is_some();
                if group.clients.is_empty() {
                    self.consumers.remove(name);
                }
            }
        }
        changed
    }

    /// Drops every client that matches `gone`; returns whether any did.
    fn remove_where(&mut self, gone: impl Fn(&ClientChannel) -> bool) -> bool {
        let mut changed = false;
        self.consumers.retain(|_, group| {
            let before = group.clients.len();
            group.clients.retain(|_, channel| !gone(channel));
            changed |= group.clients.len() != before;
            !group.clients.is_empty()
        });
        self.producers.retain(|_, group| {
            let before = group.len();
            group.retain(|_, channel| !gone(channel));
            changed |= group.len() != before;
            !group.is_empty()
        });
        changed
    }

    /// A connection closed: its clients leave their groups.
    pub fn connection_closed(&mut self, conn_id: u64) -> bool {
        self.remove_where(|channel| channel.conn_id == conn_id)
    }

    /// Drops clients silent for longer than `expiry_ms`.
    pub fn expire(&mut self, now_ms: i64, expiry_ms: u64) -> bool {
        let expiry = i64::try_from(expiry_ms).unwrap_or(i64::MAX);
        self.remove_where(|channel| now_ms.saturating_sub(channel.last_heartbeat_ms) > expiry)
    }

    /// Whether any client lives on this connection.
    pub fn has_connection(&self, conn_id: u64) -> bool {
        self.consumers
            .values()
            .any(|g| g.clients.values().any(|c| c.conn_id == conn_id))
            || self
                .producers
                .values()
                .any(|g| g.values().any(|c| c.conn_id == conn_id))
    }

    /// Whether the table has room for what `data` adds: at most
    /// `groups_max` consumer and producer groups, `clients_max` clients in
    /// each. A client already registered always fits.
    pub fn check_room(
        &self,
        data: &HeartbeatData,
        groups_max: usize,
        clients_max: usize,
    ) -> Result<(), String> {
        let consumers = data.consumer_data_set.iter().map(|c| c.group_name.as_str());
        let producers = data.producer_data_set.iter().map(|p| p.group_name.as_str());
        let room = |kind: &str, total: usize, clients: Option<usize>, group: &str| match clients {
            None if total >= groups_max => Err(format!(
                "the broker has {total} {kind} groups already (subscriptionGroupCountMax); \
                     group {group} refused"
            )),
            Some(count) if count >= clients_max => Err(format!(
                "{kind} group {group} has {count} clients already (clientsPerGroupMax)"
            )),
            _ => Ok(()),
        };
        for group in consumers.filter(|g| !g.is_empty()) {
            let found = self.consumers.get(group);
            if found.is_some_and(|g| g.clients.contains_key(&data.client_id)) {
                continue;
            }
            room(
                "consumer",
                self.consumers.len(),
                found.map(|g| g.clients.len()),
                group,
            )?;
        }
        for group in producers.filter(|g| !g.is_empty()) {
            let found = self.producers.get(group);
            if found.is_some_and(|g| g.contains_key(&data.client_id)) {
                continue;
            }
            room(
                "producer",
                self.producers.len(),
                found.map(BTreeMap::len),
                group,
            )?;
        }
        Ok(())
    }

    /// Clustering consumer groups named in a heartbeat (they get a retry topic).
    pub fn clustering_groups(data: &HeartbeatData) -> impl Iterator<Item = &str> {
        data.consumer_data_set
            .iter()
            .filter(|c| c.message_model == MessageModel::Clustering && !c.group_name.is_empty())
            .map(|c| c.group_name.as_str())
    }

    /// Per consumer group, what its members are told about when it changes:
    /// the client ids and the subscribed topics with their expressions.
    pub fn group_signatures(&self) -> BTreeMap<String, GroupSignature> {
        self.consumers
            .iter()
            .map(|(name, group)| {
                let clients = group.clients.keys().cloned().collect();
                let subscriptions = group
                    .subscriptions
                    .values()
                    .map(|s| (s.topic.clone(), s.sub_string.clone()))
                    .collect();
                (name.clone(), (clients, subscriptions))
            })
            .collect()
    }

    /// Connection ids of a consumer group's clients.
    pub fn group_connections(&self, group: &str) -> Vec<u64> {
        self.consumers
            .get(group)
            .map(|g| g.clients.values().map(|c| c.conn_id).collect())
            .unwrap_or_default()
    }

    /// The consumer group's subscription to `topic`.
    pub fn subscription(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<&SubscriptionData, &'static str> {
        let group = self
            .consumers
            .get(group)
            .ok_or("the consumer's group info not exist")?;
        group
            .subscriptions
            .get(topic)
            .ok_or("the consumer's subscription not exist")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(client: &str, group: &str, topic: &str, sub: &str) -> HeartbeatData {
        let json = format!(
            r#"{{"clientID":"{client}","consumerDataSet":[{{"groupName":"{group}","consumeType":1,
            "messageModel":1,"consumeFromWhere":0,"subscriptionDataSet":[{{"topic":"{topic}","subString":"{sub}"}}]}}],
            "producerDataSet":[{{"groupName":"P"}}]}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn heartbeats_change_the_table_only_when_something_changes() {
        let mut table = ClientTable::default();
        assert!(table.heartbeat(1, &beat("c1", "G", "T", "*"), 10));
        assert!(!table.heartbeat(1, &beat("c1", "G", "T", "*"), 20));
        assert_eq!(table.consumers["G"].clients["c1"].last_heartbeat_ms, 20);
        assert!(table.heartbeat(1, &beat("c1", "G", "T", "a || b"), 30));
        assert_eq!(table.subscription("G", "T").unwrap().sub_string, "a || b");
        assert!(table.subscription("G", "U").is_err());
        assert!(table.subscription("H", "T").is_err());
        let before = table.group_signatures();
        assert!(table.heartbeat(2, &beat("c2", "G", "T", "a || b"), 30));
        assert_ne!(before, table.group_signatures());
        assert_eq!(table.group_connections("G"), vec![1, 2]);
        assert!(table.has_connection(2));
        assert!(table.connection_closed(2));
        assert!(!table.has_connection(2));
        assert_eq!(table.consumers["G"].clients.len(), 1);
        assert!(table.unregister("c1", Some("P"), Some("G")));
        assert!(table.consumers.is_empty() && table.producers.is_empty());
    }

    #[test]
    fn silent_clients_expire() {
        let mut table = ClientTable::default();
        table.heartbeat(1, &beat("c1", "G", "T", "*"), 0);
        assert!(!table.expire(100, 1000));
        assert!(table.expire(2000, 1000));
        assert!(table.consumers.is_empty());
    }
}

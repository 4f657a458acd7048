//! Administrative calls (a subset of Java's `MQAdminExt`): topics, routes,
//! clusters and broker runtime information.

use std::collections::BTreeMap;
use std::time::Duration;

use ferrocket_protocol::body::{
    parse_properties, perm, properties_text, ClusterInfo, KvTable, TopicRouteData,
};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::CreateTopicRequestHeader;
use ferrocket_protocol::limits::validate_topic;
use ferrocket_protocol::RemotingCommand;

use crate::connection::ConnectionConfig;
use crate::error::expect_success;
use crate::json::decode_body;
use crate::namesrv::NameServerClient;
use crate::pool::ConnectionPool;
use crate::ClientError;

/// The template topic auto-created topics are copied from
/// (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";
/// Queues of a topic created without saying how many (mqadmin's default).
pub const TOPIC_QUEUE_NUMS_DEFAULT: i32 = 8;
/// Most queues one topic may have on one broker (sanity bound on input).
pub const TOPIC_QUEUE_NUMS_MAX: i32 = 1024;

/// How a topic is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicOptions {
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    /// Permission bits: 2 write, 4 read, 6 both.
    pub perm: i32,
    pub order: bool,
    pub topic_sys_flag: i32,
    /// `SINGLE_TAG` or `MULTI_TAG`.
    pub topic_filter_type: String,
    /// Java attribute string ("+key=value,..."); empty for none.
    pub attributes: String,
}

impl Default for CreateTopicOptions {
    fn default() -> Self {
        Self {
            read_queue_nums: TOPIC_QUEUE_NUMS_DEFAULT,
            write_queue_nums: TOPIC_QUEUE_NUMS_DEFAULT,
            perm: perm::READ_WRITE,
            order: false,
            topic_sys_flag: 0,
            topic_filter_type: "SINGLE_TAG".to_string(),
            attributes: String::new(),
        }
    }
}

impl CreateTopicOptions {
    fn validate(&self, topic: &str) -> Result<(), ClientError> {
        validate_topic(topic)?;
        let queues_ok = |n: i32| (1..=TOPIC_QUEUE_NUMS_MAX).contains(&n);
        if !queues_ok(self.read_queue_nums) || !queues_ok(self.write_queue_nums) {
            return Err(ClientError::InvalidArgument(format!(
                "queue counts must be within 1..={TOPIC_QUEUE_NUMS_MAX} (read {}, write {})",
                self.read_queue_nums, self.write_queue_nums
            )));
        }
        if self.perm & !(perm::READ_WRITE | perm::INHERIT) != 0 {
            return Err(ClientError::InvalidArgument(format!(
                "perm {} has bits other than 1 (inherit), 2 (write), 4 (read)",
                self.perm
            )));
        }
        Ok(())
    }
}

/// One broker of a cluster, as the name server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEntry {
    pub cluster: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub addr: String,
}

/// Admin client over a set of name servers and the brokers they know.
#[derive(Debug, Clone)]
pub struct Admin {
    namesrv: NameServerClient,
    pool: ConnectionPool,
}

impl Admin {
    /// `namesrv_addr` is "host:port;host:port".
    pub fn new(namesrv_addr: &str) -> Result<Self, ClientError> {
        Self::with_config(namesrv_addr, ConnectionConfig::default())
    }

    pub fn with_config(namesrv_addr: &str, config: ConnectionConfig) -> Result<Self, ClientError> {
        let pool = ConnectionPool::new(config, None);
        let namesrv = NameServerClient::with_route_ttl(namesrv_addr, pool.clone(), Duration::ZERO)?;
        Ok(Self { namesrv, pool })
    }

    pub fn namesrv(&self) -> &NameServerClient {
        &self.namesrv
    }

    pub fn pool(&self) -> &ConnectionPool {
        &self.pool
    }

    /// UPDATE_AND_CREATE_TOPIC on one broker.
    pub async fn create_topic(
        &self,
        broker_addr: &str,
        topic: &str,
        options: &CreateTopicOptions,
    ) -> Result<(), ClientError> {
        options.validate(topic)?;
        let header = CreateTopicRequestHeader {
            topic: topic.to_string(),
            default_topic: Some(DEFAULT_TOPIC.to_string()),
            read_queue_nums: options.read_queue_nums,
            write_queue_nums: options.write_queue_nums,
            perm: options.perm,
            topic_filter_type: Some(options.topic_filter_type.clone()),
            topic_sys_flag: Some(options.topic_sys_flag),
            order: options.order,
            attributes: Some(options.attributes.clone()),
        };
        let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
        request.ext_fields = header.to_ext();
        expect_success(self.pool.invoke(broker_addr, request).await?)?;
        Ok(())
    }

    /// Creates the topic on the master of every broker set of `cluster`;
    /// returns the addresses it was created on.
    pub async fn create_topic_in_cluster(
        &self,
        cluster: &str,
        topic: &str,
        options: &CreateTopicOptions,
    ) -> Result<Vec<String>, ClientError> {
        options.validate(topic)?;
        let info = self.namesrv.cluster_info().await?;
        let addrs = cluster_master_addrs(&info, cluster)?;
        for addr in &addrs {
            self.create_topic(addr, topic, options).await?;
        }
        Ok(addrs)
    }

    /// Deletes `topic` from the master of every broker set of `cluster`
    /// (DELETE_TOPIC_IN_BROKER), then from every name server's route for
    /// that cluster (DELETE_TOPIC_IN_NAMESRV), as mqadmin's `deleteTopic
    /// -c`; returns the broker addresses it was deleted on.
    pub async fn delete_topic_in_cluster(
        &self,
        cluster: &str,
        topic: &str,
    ) -> Result<Vec<String>, ClientError> {
        validate_topic(topic)?;
        let info = self.namesrv.cluster_info().await?;
        let addrs = cluster_master_addrs(&info, cluster)?;
        for addr in &addrs {
            let request = RemotingCommand::request(request_code::DELETE_TOPIC_IN_BROKER)
                .with_ext("topic", topic);
            expect_success(self.pool.invoke(addr, request).await?)?;
        }
        for namesrv in self.namesrv.addrs() {
            let request = RemotingCommand::request(request_code::DELETE_TOPIC_IN_NAMESRV)
                .with_ext("topic", topic)
                .with_ext("clusterName", cluster);
            expect_success(self.pool.invoke(namesrv, request).await?)?;
        }
        Ok(addrs)
    }

    /// Every topic the name servers know.
    pub async fn topic_list(&self) -> Result<Vec<String>, ClientError> {
        let list = self.namesrv.topic_list().await?;
        Ok(list.topic_list.into_iter().collect())
    }

    /// The current route of `topic` (never cached).
    pub async fn topic_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        self.namesrv.fetch_route(topic).await
    }

    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        self.namesrv.cluster_info().await
    }

    /// Every registered broker, sorted by cluster, broker name and id.
    pub async fn cluster_brokers(&self) -> Result<Vec<BrokerEntry>, ClientError> {
        Ok(broker_entries(&self.namesrv.cluster_info().await?))
    }

    /// GET_BROKER_CONFIG: the broker's settings in force, as (key, value)
    /// pairs in the order it sent them (sorted by key).
    pub async fn broker_config(
        &self,
        broker_addr: &str,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CONFIG);
        let response = expect_success(self.pool.invoke(broker_addr, request).await?)?;
        Ok(parse_properties(&String::from_utf8_lossy(&response.body)))
    }

    /// UPDATE_BROKER_CONFIG: sets `pairs` on the broker, all or none.
    pub async fn update_broker_config(
        &self,
        broker_addr: &str,
        pairs: &[(String, String)],
    ) -> Result<(), ClientError> {
        let body = properties_text(pairs).into_bytes();
        let request = RemotingCommand::request(request_code::UPDATE_BROKER_CONFIG).with_body(body);
        expect_success(self.pool.invoke(broker_addr, request).await?)?;
        Ok(())
    }

    /// GET_BROKER_RUNTIME_INFO: the broker's statistics table.
    pub async fn broker_runtime_info(
        &self,
        broker_addr: &str,
    ) -> Result<BTreeMap<String, String>, ClientError> {
        let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
        let response = expect_success(self.pool.invoke(broker_addr, request).await?)?;
        let table: KvTable = decode_body(&response.body)?;
        Ok(table.table)
    }
}

/// Master addresses of the broker sets of `cluster`.
pub fn cluster_master_addrs(info: &ClusterInfo, cluster: &str) -> Result<Vec<String>, ClientError> {
    let Some(names) = info.cluster_addr_table.get(cluster) else {
        let known: Vec<&str> = info.cluster_addr_table.keys().map(String::as_str).collect();
        return Err(ClientError::InvalidArgument(format!(
            "cluster `{cluster}` is not registered (known: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let addrs: Vec<String> = names
        .iter()
        .filter_map(|name| info.broker_addr_table.get(name))
        .filter_map(|data| data.master_addr().map(str::to_string))
        .collect();
    if addrs.is_empty() {
        return Err(ClientError::InvalidArgument(format!(
            "cluster `{cluster}` has no master broker"
        )));
    }
    Ok(addrs)
}

/// Flattens cluster info into one entry per broker address.
pub fn broker_entries(info: &ClusterInfo) -> Vec<BrokerEntry> {
    let mut entries = Vec::new();
    for data in info.broker_addr_table.values() {
        let cluster = if data.cluster.is_empty() {
            info.cluster_addr_table
                .iter()
                .find(|(_, names)| names.contains(&data.broker_name))
                .map(|(cluster, _)| cluster.clone())
                .unwrap_or_default()
        } else {
            data.cluster.clone()
        };
        for (id, addr) in &data.broker_addrs {
            entries.push(BrokerEntry {
                cluster: cluster.clone(),
                broker_name: data.broker_name.clone(),
                broker_id: *id,
                addr: addr.clone(),
            });
        }
    }
    entries.sort_by(|a, b| {
        (&a.cluster, &a.broker_name, a.broker_id).cmp(&(&b.cluster, &b.broker_name, b.broker_id))
    });
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ClusterInfo {
        crate::json::decode_body(
            br#"{"brokerAddrTable":{
                "b2":{"cluster":"c1","brokerName":"b2","brokerAddrs":{"0":"h:2","1":"h:3"}},
                "b1":{"cluster":"c1","brokerName":"b1","brokerAddrs":{"1":"h:9"}},
                "b3":{"brokerName":"b3","brokerAddrs":{"0":"h:4"}}},
              "clusterAddrTable":{"c1":["b1","b2"],"c2":["b3"]}}"#,
        )
        .unwrap()
    }

    #[test]
    fn cluster_masters_and_entries() {
        let info = info();
        assert_eq!(
            cluster_master_addrs(&info, "c1").unwrap(),
            vec!["h:2".to_string()]
        );
        assert_eq!(
            cluster_master_addrs(&info, "c2").unwrap(),
            vec!["h:4".to_string()]
        );
        let missing = cluster_master_addrs(&info, "zz").unwrap_err().to_string();
        assert!(missing.contains("c1, c2"), "{missing}");
        let entries = broker_entries(&info);
        let flat: Vec<(String, String, i64)> = entries
            .iter()
            .map(|e| (e.cluster.clone(), e.broker_name.clone(), e.broker_id))
            .collect();
        assert_eq!(
            flat,
            vec![
                ("c1".into(), "b1".into(), 1),
                ("c1".into(), "b2".into(), 0),
                ("c1".into(), "b2".into(), 1),
                ("c2".into(), "b3".into(), 0),
            ]
        );
    }

    #[test]
    fn create_options_are_validated() {
        let ok = CreateTopicOptions::default();
        assert!(ok.validate("T").is_ok());
        assert!(ok.validate("bad topic").is_err());
        let zero = CreateTopicOptions {
            write_queue_nums: 0,
            ..CreateTopicOptions::default()
        };
        assert!(zero.validate("T").is_err());
        let perm = CreateTopicOptions {
            perm: 8,
            ..CreateTopicOptions::default()
        };
        assert!(perm.validate("T").is_err());
    }
}

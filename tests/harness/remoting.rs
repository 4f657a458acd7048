//! The blocking Remoting client the tests share (ferrocket-testkit), and
//! requests only these tests send.

use ferrocket_protocol::body::{
    encode_json, DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::RegisterBrokerRequestHeader;
use ferrocket_protocol::{RemotingCommand, SerializeType};
pub use ferrocket_testkit::remoting::{route_request, Outcome, RemotingConn};

/// Same, with the ROCKETMQ binary header the C++ client may use.
pub fn route_request_binary(topic: &str) -> RemotingCommand {
    let mut command = route_request(topic);
    command.serialize_type = SerializeType::RocketMq;
    command
}

/// A broker identity to register with a name server (no process behind it).
#[derive(Debug, Clone)]
pub struct FakeBroker {
    pub cluster: String,
    pub name: String,
    pub addr: String,
    pub id: i64,
    /// `(topic, queue count)`.
    pub topics: Vec<(String, i32)>,
}

impl FakeBroker {
    /// The REGISTER_BROKER request a Java broker would send (uncompressed
    /// JSON body, no CRC), with `topics` and the broker's own topics.
    pub fn register_request(&self) -> RemotingCommand {
        let header = RegisterBrokerRequestHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            ha_server_addr: Some(String::new()),
            broker_id: self.id,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: false,
            body_crc32: Some(0),
        };
        let mut table = TopicConfigSerializeWrapper {
            data_version: DataVersion {
                state_version: 0,
                timestamp: 1,
                counter: 1,
            },
            ..Default::default()
        };
        // Like a Java broker, it also registers topics named after itself
        // and its cluster (a name server refuses a first registration that
        // carries a single topic).
        let own_topics = [(self.name.clone(), 1), (self.cluster.clone(), 1)];
        for (topic, queues) in self.topics.iter().chain(own_topics.iter()) {
            table
                .topic_config_table
                .insert(topic.clone(), TopicConfig::new(topic, *queues));
        }
        let body = RegisterBrokerBody {
            topic_config_serialize_wrapper: table,
            filter_server_list: Vec::new(),
        };
        let mut command =
            RemotingCommand::request(request_code::REGISTER_BROKER).with_body(encode_json(&body));
        command.ext_fields = header.to_ext();
        command
    }

    /// The UNREGISTER_BROKER request for this broker.
    pub fn unregister_request(&self) -> RemotingCommand {
        RemotingCommand::request(request_code::UNREGISTER_BROKER)
            .with_ext("brokerName", &self.name)
            .with_ext("brokerAddr", &self.addr)
            .with_ext("clusterName", &self.cluster)
            .with_ext("brokerId", self.id)
    }
}

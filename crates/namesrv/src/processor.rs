//! Request processing (RocketMQ `DefaultRequestProcessor` and
//! `ClientRequestProcessor`): one synchronous answer per request, from the
//! route table and KV store owned by the name server's single executor.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferrocket_protocol::body::{
    decode_json, encode_json, BrokerMemberGroupBody, DataVersion, KvTable, RegisterBrokerBody,
    TopicRouteData,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    BrokerIdentityHeader, BrokerMemberGroupRequestHeader, ClusterRequestHeader,
    KvConfigRequestHeader, KvConfigResponseHeader, QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, TopicRequestHeader,
};
use ferrocket_protocol::{ExtFields, ProtocolError, RemotingCommand};
use ferrocket_runtime::server::{Connection, HandlerFuture, RequestHandler};

use crate::kv::{KvStore, NAMESPACE_ORDER_TOPIC_CONFIG};
use crate::kv_file::KvFileError;
use crate::route::{BrokerAddrKey, Registration, RouteTable};
use crate::settings::{self, LiveSettings};
use crate::{NamesrvConfig, NamesrvError};
use ferrocket_protocol::body::decode_compressed;

/// Request codes the name server serves that the protocol crate does not
/// name yet (RocketMQ `RequestCode`).
pub mod extra_request_code {
    pub const REGISTER_TOPIC_IN_NAMESRV: i32 = 217;
    pub const GET_SYSTEM_TOPIC_LIST_FROM_NS: i32 = 304;
    pub const UPDATE_NAMESRV_CONFIG: i32 = 318;
    pub const GET_NAMESRV_CONFIG: i32 = 319;
}

/// Start of the remark of a REGISTER_BROKER whose body does not decode
/// (RocketMQ's `Failed to decode RegisterBrokerBody`).
pub const UNDECODABLE_REGISTRATION_REMARK: &str = "Failed to decode RegisterBrokerBody";

type Outcome = Result<RemotingCommand, ProtocolError>;

/// The name server's state and its request handler.
pub struct NamesrvHandler {
    routes: RefCell<RouteTable>,
    kv: RefCell<KvStore>,
    /// The settings it started with, shown by GET_NAMESRV_CONFIG.
    config: NamesrvConfig,
    /// The settings UPDATE_NAMESRV_CONFIG may change (`crate::settings`).
    live: Cell<LiveSettings>,
    /// With `aclEnable=true`: who may change things (`crate::acl`).
    pub(crate) acl: Option<std::sync::Arc<ferrocket_acl::AclStore>>,
    /// Every request's latency, for `/metrics` (served by the metrics module).
    pub(crate) rpc: RefCell<ferrocket_metrics::rpc::RpcLatencies>,
}

impl NamesrvHandler {
    /// Fails when the configured KV config file cannot be loaded.
    pub fn new(config: &NamesrvConfig) -> Result<Self, NamesrvError> {
        let kv = match &config.kv_config_path {
            Some(path) => {
                let kv = KvStore::open(path)?;
                tracing::info!(path = %path.display(), "KV config loaded");
                kv
            }
            None => KvStore::in_memory(),
        };
        let kv = kv.with_limits(config.kv_limits);
        Ok(Self {
            routes: RefCell::new(
                RouteTable::new(
                    Duration::from_millis(config.broker_expiry_ms),
                    config.delete_topic_with_broker_registration,
                )
                .with_acting(config.acting),
            ),
            kv: RefCell::new(kv),
            config: config.clone(),
            live: Cell::new(LiveSettings::of(config)),
            acl: (config.acl.open("write requests")).map_err(NamesrvError::Config)?,
            rpc: RefCell::default(),
        })
    }

    /// Brokers and topics registered now, for `/metrics`.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let routes = self.routes.borrow();
        let brokers = routes
            .cluster_info()
            .broker_addr_table
            .values()
            .map(|b| b.broker_addrs.len())
            .sum();
        (brokers, routes.all_topics().topic_list.len())
    }

    /// Drops brokers silent past their expiry; returns how many.
    pub fn expire_brokers(&self, now: Instant) -> usize {
        let expired = self.routes.borrow_mut().expire(now).len();
        self.send_notices();
        expired
    }

    /// Sends the NOTIFY_MIN_BROKER_ID_CHANGE notices the route table queued.
    fn send_notices(&self) {
        let notices = self.routes.borrow_mut().take_notices();
        if !notices.is_empty() {
            crate::notify::send_all(notices);
        }
    }

    /// Answers one request. `conn_id` is the connection it came over.
    pub fn process(&self, conn_id: Option<u64>, request: &RemotingCommand) -> RemotingCommand {
        let outcome = match request.code {
            request_code::PUT_KV_CONFIG => self.put_kv_config(request),
            request_code::GET_KV_CONFIG => self.get_kv_config(request),
            request_code::DELETE_KV_CONFIG => self.delete_kv_config(request),
            request_code::GET_KVLIST_BY_NAMESPACE => self.kv_list(request),
            request_code::QUERY_DATA_VERSION => self.query_data_version(request),
            request_code::REGISTER_BROKER => self.register_broker(conn_id, request),
            request_code::UNREGISTER_BROKER => self.unregister_broker(request),
            request_code::BROKER_HEARTBEAT => self.broker_heartbeat(request),
            request_code::GET_BROKER_MEMBER_GROUP => self.member_group(request),
            request_code::GET_ROUTEINFO_BY_TOPIC => self.route_by_topic(request),
            request_code::GET_BROKER_CLUSTER_INFO => {
                Ok(success(request).with_body(encode_json(&self.routes.borrow().cluster_info())))
            }
            request_code::WIPE_WRITE_PERM_OF_BROKER => self.write_perm(request, true),
            request_code::ADD_WRITE_PERM_OF_BROKER => self.write_perm(request, false),
            request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => {
                Ok(success(request).with_body(encode_json(&self.routes.borrow().all_topics())))
            }
            request_code::GET_TOPICS_BY_CLUSTER => self.topics_by_cluster(request),
            request_code::DELETE_TOPIC_IN_NAMESRV => self.delete_topic(request),
            extra_request_code::REGISTER_TOPIC_IN_NAMESRV => self.register_topic(request),
            extra_request_code::GET_SYSTEM_TOPIC_LIST_FROM_NS => {
                Ok(success(request).with_body(encode_json(&self.routes.borrow().system_topics())))
            }
            extra_request_code::GET_NAMESRV_CONFIG => Ok(success(request)
                .with_body(settings::show(&self.config, self.live.get()).into_bytes())),
            extra_request_code::UPDATE_NAMESRV_CONFIG => Ok(self.update_settings(request)),
            _ => Ok(crate::unsupported::answer(request)),
        };
        self.send_notices();
        outcome.unwrap_or_else(|e| {
            tracing::debug!(code = request.code, "bad request: {e}");
            RemotingCommand::response_to(request, e.response_code(), Some(e.to_string()))
        })
    }

    /// GET_BROKER_MEMBER_GROUP (901): the set's members by id.
    fn member_group(&self, request: &RemotingCommand) -> Outcome {
        let header = BrokerMemberGroupRequestHeader::from_ext(&request.ext_fields)?;
        let group = (self.routes.borrow()).member_group(&header.cluster_name, &header.broker_name);
        let body = BrokerMemberGroupBody {
            broker_member_group: group,
        };
        Ok(success(request).with_body(encode_json(&body)))
    }

    /// UPDATE_NAMESRV_CONFIG: every line applied, or none.
    fn update_settings(&self, request: &RemotingCommand) -> RemotingCommand {
        match settings::update(&self.config, self.live.get(), &request.body) {
            Ok(next) => {
                self.live.set(next);
                self.routes
                    .borrow_mut()
                    .set_delete_missing_topics(next.delete_topic_with_broker_registration);
                tracing::info!(?next, "name server settings updated");
                success(request)
            }
            Err(refusal) => {
                RemotingCommand::response_to(request, refusal.code, Some(refusal.remark))
            }
        }
    }

    fn put_kv_config(&self, request: &RemotingCommand) -> Outcome {
        let header = KvConfigRequestHeader::from_ext(&request.ext_fields)?;
        let value = header.value.ok_or(ProtocolError::MissingField("value"))?;
        let result = self
            .kv
            .borrow_mut()
            .put(&header.namespace, &header.key, &value);
        Ok(match result {
            Ok(()) => success(request),
            Err(e) => persist_failed(request, &e),
        })
    }

    fn get_kv_config(&self, request: &RemotingCommand) -> Outcome {
        let header = KvConfigRequestHeader::from_ext(&request.ext_fields)?;
        match self.kv.borrow().get(&header.namespace, &header.key) {
            Some(value) => {
                let mut response = success(request);
                response.ext_fields = KvConfigResponseHeader {
                    value: Some(value.to_string()),
                }
                .to_ext();
                Ok(response)
            }
            None => Ok(RemotingCommand::response_to(
                request,
                response_code::QUERY_NOT_FOUND,
                Some(format!(
                    "No config item, Namespace: {} Key: {}",
                    header.namespace, header.key
                )),
            )),
        }
    }

    fn delete_kv_config(&self, request: &RemotingCommand) -> Outcome {
        let header = KvConfigRequestHeader::from_ext(&request.ext_fields)?;
        let result = self.kv.borrow_mut().delete(&header.namespace, &header.key);
        Ok(match result {
            Ok(_) => success(request),
            Err(e) => persist_failed(request, &e),
        })
    }

    fn kv_list(&self, request: &RemotingCommand) -> Outcome {
        let namespace = request.ext_fields.required("namespace")?;
        match self.kv.borrow().list(namespace) {
            Some(table) => Ok(success(request).with_body(encode_json(&table))),
            None => Ok(RemotingCommand::response_to(
                request,
                response_code::QUERY_NOT_FOUND,
                Some(format!("No config item, Namespace: {namespace}")),
            )),
        }
    }

    fn register_broker(&self, conn_id: Option<u64>, request: &RemotingCommand) -> Outcome {
        let header = RegisterBrokerRequestHeader::from_ext(&request.ext_fields)?;
        if let Some(expected) = header.body_crc32.filter(|crc| *crc != 0) {
            let actual = (crc32fast::hash(&request.body) & 0x7FFF_FFFF) as i32;
            if actual != expected {
                tracing::warn!(broker = %header.broker_addr, "registration body crc32 does not match");
                return Ok(system_error(request, "crc32 not match"));
            }
        }
        let body: RegisterBrokerBody = if request.body.is_empty() {
            RegisterBrokerBody::default()
        } else if header.compressed {
            match decode_compressed(&request.body) {
                Ok(body) => body,
                Err(e) => {
                    tracing::warn!(broker = %header.broker_addr, "undecodable compressed registration: {e}");
                    let remark = format!("{UNDECODABLE_REGISTRATION_REMARK} (compressed): {e}");
                    return Ok(system_error(request, &remark));
                }
            }
        } else {
            decode_json(&request.body)?
        };
        let registration = Registration {
            cluster: header.cluster_name,
            broker_addr: header.broker_addr,
            broker_name: header.broker_name,
            broker_id: header.broker_id,
            ha_server_addr: header.ha_server_addr,
            timeout: header
                .heartbeat_timeout_millis
                .filter(|ms| *ms > 0)
                .map(|ms| Duration::from_millis(ms as u64)),
            topics: body.topic_config_serialize_wrapper,
            filter_servers: body.filter_server_list,
            conn_id,
            enable_acting_master: header.enable_acting_master,
        };
        let result = self
            .routes
            .borrow_mut()
            .register_broker(registration, Instant::now());
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) => return Ok(system_error(request, &e.to_string())),
        };
        let mut response = success(request);
        response.ext_fields = RegisterBrokerResponseHeader {
            ha_server_addr: outcome.ha_server_addr,
            master_addr: outcome.master_addr,
        }
        .to_ext();
        let order_topics = self
            .kv
            .borrow()
            .list(NAMESPACE_ORDER_TOPIC_CONFIG)
            .unwrap_or_default();
        Ok(response.with_body(encode_json::<KvTable>(&order_topics)))
    }

    fn unregister_broker(&self, request: &RemotingCommand) -> Outcome {
        let header = BrokerIdentityHeader::from_ext(&request.ext_fields)?;
        let key = BrokerAddrKey {
            cluster: header.cluster_name,
            addr: header.broker_addr,
        };
        self.routes
            .borrow_mut()
            .unregister_broker(&key, &header.broker_name);
        Ok(success(request))
    }

    fn broker_heartbeat(&self, request: &RemotingCommand) -> Outcome {
        let key = broker_key(&request.ext_fields)?;
        self.routes.borrow_mut().touch(&key, Instant::now());
        Ok(success(request))
    }

    fn query_data_version(&self, request: &RemotingCommand) -> Outcome {
        let key = broker_key(&request.ext_fields)?;
        let theirs: Option<DataVersion> = if request.body.is_empty() {
            None
        } else {
            Some(decode_json(&request.body)?)
        };
        let mut routes = self.routes.borrow_mut();
        let changed = match &theirs {
            Some(version) => routes.is_data_version_changed(&key, version),
            None => true,
        };
        routes.touch(&key, Instant::now());
        let mut response = success(request);
        response.ext_fields = QueryDataVersionResponseHeader { changed }.to_ext();
        if let Some(ours) = routes.data_version(&key) {
            response.body = encode_json(&ours).into();
        }
        Ok(response)
    }

    fn route_by_topic(&self, request: &RemotingCommand) -> Outcome {
        let header = TopicRequestHeader::from_ext(&request.ext_fields)?;
        let route: Option<TopicRouteData> = self.routes.borrow().topic_route(&header.topic);
        match route {
            Some(mut route) => {
                route.order_topic_conf = self
                    .kv
                    .borrow()
                    .get(NAMESPACE_ORDER_TOPIC_CONFIG, &header.topic)
                    .map(str::to_string);
                Ok(success(request).with_body(encode_json(&route)))
            }
            None => Ok(RemotingCommand::response_to(
                request,
                response_code::TOPIC_NOT_EXIST,
                Some(format!(
                    "No topic route info in name server for the topic: {}",
                    header.topic
                )),
            )),
        }
    }

    fn write_perm(&self, request: &RemotingCommand, wipe: bool) -> Outcome {
        let broker_name = request.ext_fields.required("brokerName")?;
        let count = self.routes.borrow_mut().set_write_perm(broker_name, wipe);
        tracing::info!(
            broker = broker_name,
            wipe,
            topics = count,
            "write permission changed"
        );
        let field = if wipe {
            "wipeTopicCount"
        } else {
            "addTopicCount"
        };
        Ok(success(request).with_ext(field, count))
    }

    fn topics_by_cluster(&self, request: &RemotingCommand) -> Outcome {
        let header = ClusterRequestHeader::from_ext(&request.ext_fields)?;
        let topics = self.routes.borrow().topics_by_cluster(&header.cluster);
        Ok(success(request).with_body(encode_json(&topics)))
    }

    fn delete_topic(&self, request: &RemotingCommand) -> Outcome {
        let header = TopicRequestHeader::from_ext(&request.ext_fields)?;
        let cluster = header.cluster_name.as_deref().filter(|c| !c.is_empty());
        self.routes
            .borrow_mut()
            .delete_topic(&header.topic, cluster);
        Ok(success(request))
    }

    fn register_topic(&self, request: &RemotingCommand) -> Outcome {
        let topic = request.ext_fields.required("topic")?;
        if !request.body.is_empty() {
            let route: TopicRouteData = decode_json(&request.body)?;
            self.routes
                .borrow_mut()
                .register_topic(topic, route.queue_datas);
        }
        Ok(success(request))
    }
}

impl RequestHandler for NamesrvHandler {
    fn handle(self: Rc<Self>, conn: Rc<Connection>, request: RemotingCommand) -> HandlerFuture {
        let started = std::time::Instant::now();
        let window = self.config.acl.signature_window_ms;
        let refusal = (self.acl.as_deref())
            .and_then(|acl| crate::acl::refusal(acl, &request, conn.peer_addr().ip(), window));
        let response = refusal.unwrap_or_else(|| self.process(Some(conn.id()), &request));
        let key = ferrocket_metrics::rpc::RpcKey {
            request_code: request.code,
            response_code: response.code,
            oneway: request.is_oneway(),
        };
        self.rpc.borrow_mut().observe(key, started.elapsed());
        Box::pin(std::future::ready(Some(response)))
    }

    fn on_close(&self, conn: &Connection) {
        if !self.live.get().unregister_on_disconnect {
            return;
        }
        let mut routes = self.routes.borrow_mut();
        for key in routes.brokers_of_conn(conn.id()) {
            tracing::info!(cluster = %key.cluster, addr = %key.addr, "broker connection closed; unregistering");
            routes.remove_broker_process(&key);
        }
        drop(routes);
        self.send_notices();
    }
}

fn success(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

fn system_error(request: &RemotingCommand, remark: &str) -> RemotingCommand {
    RemotingCommand::response_to(
        request,
        response_code::SYSTEM_ERROR,
        Some(remark.to_string()),
    )
}

/// A KV change that could not be written to disk was not made.
fn persist_failed(request: &RemotingCommand, error: &KvFileError) -> RemotingCommand {
    tracing::error!("KV config change refused: {error}");
    system_error(request, &error.to_string())
}

/// The cluster and address a broker request names.
fn broker_key(fields: &ExtFields) -> Result<BrokerAddrKey, ProtocolError> {
    Ok(BrokerAddrKey {
        cluster: fields.required("clusterName")?.to_string(),
        addr: fields.required("brokerAddr")?.to_string(),
    })
}

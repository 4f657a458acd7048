//! Name server calls and the topic route cache (Java's `MQClientAPIImpl`
//! name server half plus `MQClientInstance`'s route and broker tables).
//!
//! Requests go to one name server of the list until it fails at the
//! transport level, then to the next. Routes are cached and fetched again
//! once older than the TTL; a route that cannot be refreshed because every
//! name server is unreachable keeps being served from the cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferrocket_protocol::body::{ClusterInfo, TopicList, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::TopicRequestHeader;
use ferrocket_protocol::RemotingCommand;

use crate::error::expect_success;
use crate::json::decode_body;
use crate::pool::ConnectionPool;
use crate::route::{self, MessageQueue};
use crate::ClientError;

/// How long a cached route is served before it is fetched again (Java polls
/// the name server every 30 s).
pub const ROUTE_TTL_MS_DEFAULT: u64 = 30_000;

struct CachedRoute {
    route: Arc<TopicRouteData>,
    fetched: Instant,
}

struct Inner {
    addrs: Vec<String>,
    pool: ConnectionPool,
    /// Index of the name server currently used.
    current: AtomicUsize,
    route_ttl: Duration,
    routes: Mutex<HashMap<String, CachedRoute>>,
    /// Broker name -> (broker id -> address), from every route and cluster
    /// info seen.
    brokers: Mutex<HashMap<String, BTreeMap<i64, String>>>,
}

/// A cheap-to-clone client of a set of name servers.
#[derive(Clone)]
pub struct NameServerClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for NameServerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameServerClient")
            .field("addrs", &self.inner.addrs)
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl NameServerClient {
    /// `addr_list` is "host:port;host:port". Connections come from `pool`,
    /// which may be shared with broker connections.
    pub fn new(addr_list: &str, pool: ConnectionPool) -> Result<Self, ClientError> {
        Self::with_route_ttl(addr_list, pool, Duration::from_millis(ROUTE_TTL_MS_DEFAULT))
    }

    /// Same, with a route TTL other than [`ROUTE_TTL_MS_DEFAULT`].
    pub fn with_route_ttl(
        addr_list: &str,
        pool: ConnectionPool,
        route_ttl: Duration,
    ) -> Result<Self, ClientError> {
        let addrs = route::parse_addr_list(addr_list);
        if addrs.is_empty() {
            return Err(ClientError::InvalidArgument(format!(
                "no name server address in `{addr_list}`"
            )));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                addrs,
                pool,
                current: AtomicUsize::new(0),
                route_ttl,
                routes: Mutex::new(HashMap::new()),
                brokers: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn addrs(&self) -> &[String] {
        &self.inner.addrs
    }

    pub fn pool(&self) -> &ConnectionPool {
        &self.inner.pool
    }

    /// Sends `request` to a name server, trying the next one on transport
    /// failures. Any response code is returned as is.
    pub async fn invoke(&self, request: RemotingCommand) -> Result<RemotingCommand, ClientError> {
        let count = self.inner.addrs.len();
        let start = self.inner.current.load(Ordering::Relaxed);
        let mut last_error = None;
        for attempt in 0..count {
            let index = (start + attempt) % count;
            let addr = &self.inner.addrs[index];
            match self.inner.pool.invoke(addr, request.clone()).await {
                Ok(response) if response.code == response_code::REQUEST_CODE_NOT_SUPPORTED => {
                    // What a broker answers to a name server request.
                    return Err(ClientError::InvalidArgument(format!(
                        "{addr} does not support request code {} ({}); if it is a broker, \
                         give the name server instead (-n / namesrvAddr, port 9876 by default)",
                        request.code,
                        // Java's remark starts with a space.
                        response.remark.as_deref().map_or("no remark", str::trim)
                    )));
                }
                Ok(response) => {
                    self.inner.current.store(index, Ordering::Relaxed);
                    return Ok(response);
                }
                Err(error) if error.is_transport() => {
                    tracing::debug!(%addr, %error, "name server unreachable, trying the next");
                    last_error = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| ClientError::InvalidArgument("no name server".into())))
    }

    /// Asks a name server for the route of `topic` (no cache). A topic the
    /// name server does not know is `ClientError::Response` with code
    /// TOPIC_NOT_EXIST (17).
    pub async fn fetch_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let header = TopicRequestHeader {
            topic: topic.to_string(),
            cluster_name: None,
        };
        let mut request = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC);
        request.ext_fields = header.to_ext();
        request.ext_fields.insert("acceptStandardJsonOnly", "true");
        let response = expect_success(self.invoke(request).await?)?;
        let route: TopicRouteData = decode_body(&response.body)?;
        self.remember_brokers(&route);
        lock(&self.inner.routes).insert(
            topic.to_string(),
            CachedRoute {
                route: Arc::new(route.clone()),
                fetched: Instant::now(),
            },
        );
        Ok(route)
    }

    /// The route of `topic`, from the cache while fresh.
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRouteData>, ClientError> {
        let cached = lock(&self.inner.routes)
            .get(topic)
            .map(|c| (c.route.clone(), c.fetched.elapsed() < self.inner.route_ttl));
        match cached {
            Some((route, true)) => Ok(route),
            Some((stale, false)) => match self.fetch_route(topic).await {
                Ok(route) => Ok(Arc::new(route)),
                Err(error) if error.is_transport() => {
                    tracing::warn!(%topic, %error, "cannot refresh route, using the cached one");
                    Ok(stale)
                }
                Err(error) => {
                    self.invalidate(topic);
                    Err(error)
                }
            },
            None => self.fetch_route(topic).await.map(Arc::new),
        }
    }

    /// The cached route, however old, without asking anyone.
    pub fn cached_route(&self, topic: &str) -> Option<Arc<TopicRouteData>> {
        lock(&self.inner.routes).get(topic).map(|c| c.route.clone())
    }

    /// Forgets the cached route of `topic`.
    pub fn invalidate(&self, topic: &str) {
        lock(&self.inner.routes).remove(topic);
    }

    /// Forgets every cached route that names the broker at `addr`, and the
    /// broker sets whose master it was: after a failover the next request
    /// reads the name server's route instead of trying a deposed master
    /// until the routes expire. Returns how many routes were dropped.
    pub fn forget_broker(&self, addr: &str) -> usize {
        let names = |route: &TopicRouteData| {
            route
                .broker_datas
                .iter()
                .any(|b| b.broker_addrs.values().any(|a| a == addr))
        };
        let mut routes = lock(&self.inner.routes);
        let before = routes.len();
        routes.retain(|_, cached| !names(&cached.route));
        let dropped = before - routes.len();
        drop(routes);
        lock(&self.inner.brokers).retain(|_, addrs| addrs.get(&0).is_none_or(|a| a != addr));
        dropped
    }

    /// Queues of `topic` a producer may write to.
    pub async fn write_queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        let route = self.route(topic).await?;
        Ok(route::write_queues(topic, &route))
    }

    /// Queues of `topic` a consumer reads.
    pub async fn read_queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        let route = self.route(topic).await?;
        Ok(route::read_queues(topic, &route))
    }

    fn remember_brokers(&self, route: &TopicRouteData) {
        let mut brokers = lock(&self.inner.brokers);
        for data in &route.broker_datas {
            brokers.insert(data.broker_name.clone(), data.broker_addrs.clone());
        }
    }

    /// The master address of `broker_name` from routes seen so far.
    pub fn master_addr(&self, broker_name: &str) -> Option<String> {
        lock(&self.inner.brokers)
            .get(broker_name)
            .and_then(|addrs| addrs.get(&0))
            .cloned()
    }

    /// Every broker address (all ids) seen so far, by broker name.
    pub fn known_brokers(&self) -> BTreeMap<String, BTreeMap<i64, String>> {
        lock(&self.inner.brokers)
            .iter()
            .map(|(name, addrs)| (name.clone(), addrs.clone()))
            .collect()
    }

    /// The master address of `broker_name`, asking for cluster info when no
    /// route seen so far names it.
    pub async fn find_master_addr(&self, broker_name: &str) -> Result<String, ClientError> {
        if let Some(addr) = self.master_addr(broker_name) {
            return Ok(addr);
        }
        self.cluster_info().await?;
        self.master_addr(broker_name)
            .ok_or_else(|| ClientError::NoBroker(broker_name.to_string()))
    }

    /// GET_BROKER_CLUSTER_INFO: brokers and clusters.
    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
        let response = expect_success(self.invoke(request).await?)?;
        let info: ClusterInfo = decode_body(&response.body)?;
        let mut brokers = lock(&self.inner.brokers);
        for data in info.broker_addr_table.values() {
            brokers.insert(data.broker_name.clone(), data.broker_addrs.clone());
        }
        Ok(info)
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER: every topic name.
    pub async fn topic_list(&self) -> Result<TopicList, ClientError> {
        let request = RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
        let response = expect_success(self.invoke(request).await?)?;
        Ok(decode_body(&response.body)?)
    }
}

/// True when `error` says the name server has no route for the topic.
pub fn is_topic_not_exist(error: &ClientError) -> bool {
    error.response_code() == Some(response_code::TOPIC_NOT_EXIST)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::body::BrokerData;

    fn route_of(broker_name: &str, master: &str) -> TopicRouteData {
        let mut route = TopicRouteData::default();
        route.broker_datas.push(BrokerData {
            cluster: "c".into(),
            broker_name: broker_name.into(),
            broker_addrs: BTreeMap::from([(0, master.to_string())]),
            ..Default::default()
        });
        route
    }

    #[test]
    fn forgetting_a_broker_drops_only_the_routes_that_name_it() {
        let pool = ConnectionPool::new(crate::ConnectionConfig::default(), None);
        let client = NameServerClient::new("127.0.0.1:1", pool).unwrap();
        for (topic, name, master) in [("A", "a", "h:1"), ("B", "a", "h:1"), ("C", "b", "h:2")] {
            let route = route_of(name, master);
            client.remember_brokers(&route);
            let cached = CachedRoute {
                route: Arc::new(route),
                fetched: Instant::now(),
            };
            lock(&client.inner.routes).insert(topic.to_string(), cached);
        }
        assert_eq!(client.forget_broker("h:1"), 2);
        assert!(client.cached_route("A").is_none() && client.cached_route("B").is_none());
        assert!(client.cached_route("C").is_some());
        assert_eq!(client.master_addr("a"), None, "asked again next time");
        assert_eq!(client.master_addr("b").as_deref(), Some("h:2"));
        assert_eq!(client.forget_broker("h:9"), 0);
    }
}

//! Connections by address: one per server, opened on first use and opened
//! again after it closed (Java's `NettyRemotingClient` channel table).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrocket_protocol::RemotingCommand;

use crate::connection::{Connection, ConnectionConfig, RequestHandler};
use crate::ClientError;

struct PooledConn {
    ready: Option<Connection>,
    /// Serialises connecting to one address.
    connecting: Arc<tokio::sync::Mutex<()>>,
}

struct PoolInner {
    config: ConnectionConfig,
    handler: Option<RequestHandler>,
    slots: Mutex<HashMap<String, PooledConn>>,
}

/// A cheap-to-clone table of connections, shared by the parts of one client.
#[derive(Clone)]
pub struct ConnectionPool {
    inner: Arc<PoolInner>,
}

impl std::fmt::Debug for ConnectionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionPool")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl ConnectionPool {
    /// `handler` answers requests any of the pool's servers start.
    pub fn new(config: ConnectionConfig, handler: Option<RequestHandler>) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                config,
                handler,
                slots: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn config(&self) -> &ConnectionConfig {
        &self.inner.config
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, PooledConn>> {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The open connection to `addr`, connecting when there is none.
    pub async fn get(&self, addr: &str) -> Result<Connection, ClientError> {
        let connecting = {
            let mut slots = self.slots();
            let slot = slots.entry(addr.to_string()).or_insert_with(|| PooledConn {
                ready: None,
                connecting: Arc::new(tokio::sync::Mutex::new(())),
            });
            match &slot.ready {
                Some(connection) if !connection.is_closed() => return Ok(connection.clone()),
                _ => slot.connecting.clone(),
            }
        };
        let _connecting = connecting.lock().await;
        // Someone else may have connected while we waited.
        if let Some(connection) = self.ready(addr) {
            return Ok(connection);
        }
        let connection =
            Connection::connect(addr, self.inner.config.clone(), self.inner.handler.clone())
                .await?;
        if let Some(slot) = self.slots().get_mut(addr) {
            slot.ready = Some(connection.clone());
        }
        Ok(connection)
    }

    fn ready(&self, addr: &str) -> Option<Connection> {
        self.slots()
            .get(addr)
            .and_then(|slot| slot.ready.clone())
            .filter(|connection| !connection.is_closed())
    }

    /// Request/response on the connection to `addr`, default timeout.
    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        let timeout = Duration::from_millis(self.inner.config.request_timeout_ms);
        self.invoke_timeout(addr, request, timeout).await
    }

    /// Request/response on the connection to `addr`.
    pub async fn invoke_timeout(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let connection = self.get(addr).await?;
        connection.invoke_timeout(request, timeout).await
    }

    /// Oneway request on the connection to `addr`.
    pub async fn invoke_oneway(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<(), ClientError> {
        let connection = self.get(addr).await?;
        connection.invoke_oneway(request).await
    }

    /// Closes and forgets the connection to `addr`.
    pub fn close(&self, addr: &str) {
        if let Some(slot) = self.slots().get_mut(addr) {
            if let Some(connection) = slot.ready.take() {
                connection.close();
            }
        }
    }

    /// Closes every connection.
    pub fn close_all(&self) {
        for slot in self.slots().values_mut() {
            if let Some(connection) = slot.ready.take() {
                connection.close();
            }
        }
    }
}

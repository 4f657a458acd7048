//! Raft messages between controllers, carried as Remoting requests on the
//! controllers' own port (Ferrocket's private codes RAFT_APPEND_ENTRIES,
//! RAFT_VOTE and RAFT_INSTALL_SNAPSHOT), bodies in JSON. The answer's body
//! is the receiver's `Result`, so a Raft-level refusal travels back as one.

use std::time::Duration;

use ferrocket_client::pool::ConnectionPool;
use ferrocket_client::ClientError;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::TypeConfig;

type NodeId = u64;
type RpcResult<T, E = RaftError<NodeId>> = Result<T, RPCError<NodeId, BasicNode, E>>;

/// Makes a [`PeerClient`] per peer; all share one connection pool.
#[derive(Clone)]
pub struct Network {
    pool: ConnectionPool,
}

impl Network {
    pub fn new(pool: ConnectionPool) -> Self {
        Self { pool }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient {
            pool: self.pool.clone(),
            target,
            addr: node.addr.clone(),
        }
    }
}

/// The sending side towards one peer controller.
pub struct PeerClient {
    pool: ConnectionPool,
    target: NodeId,
    addr: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Garbled(String);

impl PeerClient {
    async fn call<Req, Resp, E>(
        &self,
        code: i32,
        request: &Req,
        timeout: Duration,
    ) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body =
            serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let command = RemotingCommand::request(code).with_body(body);
        let answer = self
            .pool
            .invoke_timeout(&self.addr, command, timeout)
            .await
            .map_err(|e| self.unreachable(e))?;
        if answer.code != response_code::SUCCESS {
            let remark = answer.remark.clone().unwrap_or_default();
            let e = Garbled(format!("peer answered code {}: {remark}", answer.code));
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let body = answer.body.as_ref();
        let result: Result<Resp, E> =
            serde_json::from_slice(body).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    fn unreachable<E: std::error::Error>(&self, e: ClientError) -> RPCError<NodeId, BasicNode, E> {
        // A dead peer is "unreachable": openraft backs off instead of
        // retrying at once.
        self.pool.close(&self.addr);
        RPCError::Unreachable(Unreachable::new(&e))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        self.call(request_code::RAFT_APPEND_ENTRIES, &rpc, option.hard_ttl())
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>> {
        self.call(request_code::RAFT_INSTALL_SNAPSHOT, &rpc, option.hard_ttl())
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.call(request_code::RAFT_VOTE, &rpc, option.hard_ttl())
            .await
    }
}

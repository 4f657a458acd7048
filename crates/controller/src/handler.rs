//! Request dispatch: the ACL first (`crate::auth`), then each controller
//! request code to its rule (through the read or write path) and the Raft
//! messages to openraft.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use ferrocket_protocol::body::{decode_json, SyncStateSet};
use ferrocket_protocol::codes::{request_code as code, response_code as rc};
use ferrocket_protocol::header::controller::*;
use ferrocket_protocol::{ProtocolError, RemotingCommand};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::peers_text;
use crate::node::Controller;
use crate::rules::{self, Reply};
use crate::server::Service;
use crate::settings;

/// Brokers named in one CONTROLLER_GET_SYNC_STATE_DATA at most.
pub const SYNC_STATE_NAMES_MAX: usize = 10_000;

fn invalid(e: ProtocolError) -> Reply {
    Reply::error(rc::CONTROLLER_INVALID_REQUEST, e.to_string())
}

fn into_command(request: &RemotingCommand, reply: Reply) -> RemotingCommand {
    let mut answer = RemotingCommand::response_to(request, reply.code, reply.remark);
    answer.ext_fields = reply.ext;
    if let Some(body) = reply.body {
        answer = answer.with_body(body);
    }
    answer
}

impl Service for Controller {
    async fn handle(
        self: &Arc<Self>,
        request: RemotingCommand,
        connection: u64,
        peer: IpAddr,
    ) -> Option<RemotingCommand> {
        let window = self.config.acl.signature_window_ms;
        if let Some(refused) = crate::auth::refusal(self.acl.as_deref(), &request, peer, window) {
            return Some(refused);
        }
        let reply = match request.code {
            code::RAFT_APPEND_ENTRIES | code::RAFT_VOTE | code::RAFT_INSTALL_SNAPSHOT => {
                self.raft_message(&request).await
            }
            code::BROKER_HEARTBEAT => self.heartbeat(&request, connection),
            code::CONTROLLER_GET_METADATA_INFO => self.metadata(),
            code::GET_CONTROLLER_CONFIG => settings::show(&self.config, &self.settings),
            code::UPDATE_CONTROLLER_CONFIG => {
                settings::update(&self.config, &self.settings, &request.body)
            }
            _ => match self.controller_request(&request).await {
                Some(reply) => reply,
                None => return Some(RemotingCommand::not_supported(&request)),
            },
        };
        Some(into_command(&request, reply))
    }

    fn closed(self: &Arc<Self>, connection: u64) {
        let gone = self.live().on_connection_closed(connection);
        if gone.is_empty() {
            return;
        }
        let controller = self.clone();
        tokio::spawn(async move {
            for key in gone {
                controller.on_broker_inactive(key).await;
            }
        });
    }
}

impl Controller {
    async fn controller_request(self: &Arc<Self>, request: &RemotingCommand) -> Option<Reply> {
        let ext = &request.ext_fields;
        let reply = match request.code {
            code::CONTROLLER_ALTER_SYNC_STATE_SET => {
                let header = AlterSyncStateSetRequestHeader::from_ext(ext);
                let body = decode_json::<SyncStateSet>(&request.body);
                match header.and_then(|h| body.map(|b| (h, b))) {
                    Ok((h, b)) => {
                        self.write(|s, l| rules::alter_sync_state_set(s, l, &h, &b))
                            .await
                    }
                    Err(e) => invalid(e),
                }
            }
            code::CONTROLLER_ELECT_MASTER => match ElectMasterRequestHeader::from_ext(ext) {
                Ok(h) => self.elect(&h).await,
                Err(e) => invalid(e),
            },
            code::CONTROLLER_REGISTER_BROKER => {
                match RegisterBrokerToControllerRequestHeader::from_ext(ext) {
                    Ok(h) => self.write(|s, l| rules::register_broker(s, l, &h)).await,
                    Err(e) => invalid(e),
                }
            }
            code::CONTROLLER_GET_REPLICA_INFO => match GetReplicaInfoRequestHeader::from_ext(ext) {
                Ok(h) => self.read(|s, _| rules::replica_info(s, &h)).await,
                Err(e) => invalid(e),
            },
            code::CONTROLLER_GET_SYNC_STATE_DATA => match decode_json::<Vec<String>>(&request.body)
            {
                Ok(names) if names.len() <= SYNC_STATE_NAMES_MAX => {
                    self.read(|s, l| rules::sync_state_data(s, l, &names)).await
                }
                Ok(names) => invalid(ProtocolError::Body(format!(
                    "{} broker names, at most {SYNC_STATE_NAMES_MAX}",
                    names.len()
                ))),
                Err(e) => invalid(e),
            },
            code::CLEAN_BROKER_DATA => {
                match CleanControllerBrokerDataRequestHeader::from_ext(ext) {
                    Ok(h) => self.write(|s, l| rules::clean_broker_data(s, l, &h)).await,
                    Err(e) => invalid(e),
                }
            }
            code::CONTROLLER_GET_NEXT_BROKER_ID => {
                match GetNextBrokerIdRequestHeader::from_ext(ext) {
                    Ok(h) => self.read(|s, _| rules::next_broker_id(s, &h)).await,
                    Err(e) => invalid(e),
                }
            }
            code::CONTROLLER_APPLY_BROKER_ID => match ApplyBrokerIdRequestHeader::from_ext(ext) {
                Ok(h) => self.write(|s, _| rules::apply_broker_id(s, &h)).await,
                Err(e) => invalid(e),
            },
            _ => return None,
        };
        Some(reply)
    }

    /// ELECT_MASTER from a broker or an admin tool; a new master is pushed
    /// to the set's brokers as Java does.
    async fn elect(self: &Arc<Self>, header: &ElectMasterRequestHeader) -> Reply {
        let unclean = self.settings.elect_unclean_master();
        let reply = self
            .write(|s, l| rules::elect_master(s, l, header, unclean))
            .await;
        if reply.code == rc::SUCCESS {
            let controller = self.clone();
            let (name, elected) = (header.broker_name.clone(), reply.clone());
            tokio::spawn(async move { controller.notify_role_changed(&name, &elected).await });
        }
        reply
    }

    fn heartbeat(&self, request: &RemotingCommand, connection: u64) -> Reply {
        let header = match BrokerHeartbeatRequestHeader::from_ext(&request.ext_fields) {
            Ok(header) => header,
            Err(e) => return invalid(e),
        };
        match self
            .live()
            .on_heartbeat(&header, connection, Instant::now())
        {
            Ok(()) => Reply::ok(Default::default()),
            Err(e) => Reply::error(rc::CONTROLLER_INVALID_REQUEST, e.to_string()),
        }
    }

    /// CONTROLLER_GET_METADATA_INFO: who leads, so brokers know whom to ask.
    fn metadata(&self) -> Reply {
        let leader = self.leader();
        let header = GetMetaDataResponseHeader {
            group: Some(self.config.group.clone()),
            controller_leader_id: leader.map(|p| p.id.clone()),
            controller_leader_address: leader.map(|p| p.addr.clone()),
            is_leader: self.is_leader(),
            peers: Some(peers_text(&self.config.peers)),
        };
        Reply::ok(header.to_ext())
    }

    async fn raft_message(&self, request: &RemotingCommand) -> Reply {
        let body = &request.body;
        let result = match request.code {
            code::RAFT_APPEND_ENTRIES => relay(body, |rpc| self.raft.append_entries(rpc)).await,
            code::RAFT_VOTE => relay(body, |rpc| self.raft.vote(rpc)).await,
            _ => relay(body, |rpc| self.raft.install_snapshot(rpc)).await,
        };
        match result {
            Ok(body) => {
                let mut reply = Reply::ok(Default::default());
                reply.body = Some(body);
                reply
            }
            Err(e) => invalid(e),
        }
    }
}

/// Decodes a Raft message, hands it to openraft, and encodes its result
/// (success or Raft error) as the answer's body.
async fn relay<Req, Resp, E, F>(
    body: &[u8],
    call: impl FnOnce(Req) -> F,
) -> Result<Vec<u8>, ProtocolError>
where
    Req: DeserializeOwned,
    Resp: Serialize,
    E: Serialize,
    F: std::future::Future<Output = Result<Resp, E>>,
{
    let rpc: Req = decode_json(body)?;
    let result = call(rpc).await;
    serde_json::to_vec(&result).map_err(|e| ProtocolError::Body(e.to_string()))
}

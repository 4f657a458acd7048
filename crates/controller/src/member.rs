//! The broker's side of controller mode (RocketMQ's `ReplicasManager`
//! controller calls): find the leading controller, get a broker id with the
//! `brokerIdentity` files, register, heartbeat every controller, ask who
//! the master is and ask to be elected.
//!
//! The id is obtained in three steps that survive a crash between any two
//! (Java's register state machine): GET_NEXT_BROKER_ID and a temp file
//! `"cluster#brokerName#id#checkCode"`; APPLY_BROKER_ID with that check
//! code; then the final file `"cluster#brokerName#id"` replaces the temp.
//! An id once in the final file is this broker's for good.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocket_client::pool::ConnectionPool;
use ferrocket_client::{ClientError, ConnectionConfig};
use ferrocket_protocol::body::{decode_json, SyncStateSet};
use ferrocket_protocol::codes::{request_code as code, response_code as rc};
use ferrocket_protocol::header::controller::*;
use ferrocket_protocol::{ExtFields, RemotingCommand};

/// What went wrong talking to the controllers.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("no controller among {0:?} knows a leader")]
    NoLeader(Vec<String>),
    #[error("controller {addr}: {source}")]
    Call {
        addr: String,
        #[source]
        source: ClientError,
    },
    #[error("controller answered {code}: {remark}")]
    Refused { code: i32, remark: String },
    #[error("broker identity file {path}: {reason}")]
    Identity { path: PathBuf, reason: String },
}

/// The master of a broker set, as the controller says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterInfo {
    pub broker_id: i64,
    pub address: String,
    pub epoch: i32,
    pub sync_state_set: SyncStateSet,
}

/// This broker's identity in its set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub cluster: String,
    pub broker_name: String,
    /// `brokerIP1:listenPort`.
    pub address: String,
}

/// Calls to the controllers: each goes to the leader, found by asking
/// every controller (GET_METADATA_INFO) and found again after a
/// CONTROLLER_NOT_LEADER or a broken connection.
pub struct ControllerClient {
    addrs: Vec<String>,
    pool: ConnectionPool,
    leader: Mutex<Option<String>>,
    timeout: Duration,
}

impl ControllerClient {
    pub fn new(addrs: Vec<String>, timeout: Duration) -> Self {
        Self::with_config(addrs, timeout, ConnectionConfig::default())
    }

    /// Like [`Self::new`], dialing as `base` says: its credentials sign
    /// every request (a controller with `aclEnable=true` wants them), its
    /// TLS configuration is used; its timeouts become `timeout`.
    pub fn with_config(addrs: Vec<String>, timeout: Duration, base: ConnectionConfig) -> Self {
        let config = ConnectionConfig {
            connect_timeout_ms: timeout.as_millis() as u64,
            request_timeout_ms: timeout.as_millis() as u64,
            ..base
        };
        Self {
            addrs,
            pool: ConnectionPool::new(config, None),
            leader: Mutex::new(None),
            timeout,
        }
    }

    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, MemberError> {
        self.pool
            .invoke_timeout(addr, request, self.timeout)
            .await
            .map_err(|source| {
                self.pool.close(addr);
                MemberError::Call {
                    addr: addr.to_string(),
                    source,
                }
            })
    }

    /// Asks every controller who leads. When none says and one refused
    /// (an ACL refusal, say), that refusal is the error.
    pub async fn find_leader(&self) -> Result<String, MemberError> {
        let mut refused = None;
        for addr in &self.addrs {
            let request = RemotingCommand::request(code::CONTROLLER_GET_METADATA_INFO);
            let Ok(answer) = self.invoke(addr, request).await else {
                continue;
            };
            if answer.code != rc::SUCCESS {
                refused = Some(MemberError::Refused {
                    code: answer.code,
                    remark: answer.remark.unwrap_or_default(),
                });
                continue;
            }
            let Ok(meta) = GetMetaDataResponseHeader::from_ext(&answer.ext_fields) else {
                continue;
            };
            if let Some(leader) = meta.controller_leader_address.filter(|a| !a.is_empty()) {
                *self.leader.lock().unwrap_or_else(|p| p.into_inner()) = Some(leader.clone());
                return Ok(leader);
            }
        }
        Err(refused.unwrap_or_else(|| MemberError::NoLeader(self.addrs.clone())))
    }

    /// Sends a request to the leader; a refusal by a non-leader or a broken
    /// connection finds the leader again and retries once.
    pub async fn call(
        &self,
        request_code: i32,
        ext: ExtFields,
        body: Vec<u8>,
    ) -> Result<RemotingCommand, MemberError> {
        for attempt in 0..2 {
            let known = self
                .leader
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let leader = match known {
                Some(leader) if attempt == 0 => leader,
                _ => self.find_leader().await?,
            };
            let mut request = RemotingCommand::request(request_code).with_body(body.clone());
            request.ext_fields = ext.clone();
            match self.invoke(&leader, request).await {
                Ok(answer) if answer.code == rc::CONTROLLER_NOT_LEADER && attempt == 0 => {}
                Ok(answer) => return Ok(answer),
                Err(e) if attempt == 0 => {
                    tracing::debug!("controller call failed, finding the leader again: {e}")
                }
                Err(e) => return Err(e),
            }
            *self.leader.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        Err(MemberError::NoLeader(self.addrs.clone()))
    }

    /// Like [`Self::call`], failing unless the answer is one of `ok_codes`.
    async fn expect(
        &self,
        request_code: i32,
        ext: ExtFields,
        ok_codes: &[i32],
    ) -> Result<RemotingCommand, MemberError> {
        let answer = self.call(request_code, ext, Vec::new()).await?;
        if ok_codes.contains(&answer.code) {
            return Ok(answer);
        }
        Err(MemberError::Refused {
            code: answer.code,
            remark: answer.remark.unwrap_or_default(),
        })
    }

    /// BROKER_HEARTBEAT to every controller (liveness is not replicated);
    /// failures are only logged.
    pub async fn heartbeat_all(&self, header: &BrokerHeartbeatRequestHeader) {
        for addr in &self.addrs {
            let mut request = RemotingCommand::request(code::BROKER_HEARTBEAT);
            request.ext_fields = header.to_ext();
            if let Err(e) = self.invoke(addr, request).await {
                tracing::debug!("heartbeat to controller {addr}: {e}");
            }
        }
    }

    /// CONTROLLER_GET_REPLICA_INFO: the set's master, if it has one.
    pub async fn replica_info(&self, broker_name: &str) -> Result<Option<MasterInfo>, MemberError> {
        let header = GetReplicaInfoRequestHeader {
            broker_name: broker_name.to_string(),
        };
        let answer = self
            .expect(
                code::CONTROLLER_GET_REPLICA_INFO,
                header.to_ext(),
                &[rc::SUCCESS],
            )
            .await?;
        let info = GetReplicaInfoResponseHeader::from_ext(&answer.ext_fields).map_err(refused)?;
        let set: SyncStateSet = decode_json(&answer.body).unwrap_or_default();
        Ok(master_info(
            info.master_broker_id,
            info.master_address,
            info.master_epoch,
            set,
        ))
    }

    /// CONTROLLER_ELECT_MASTER for this broker; the master after it (this
    /// broker or the one still in place).
    pub async fn elect(
        &self,
        member: &Member,
        broker_id: i64,
    ) -> Result<Option<MasterInfo>, MemberError> {
        let header = ElectMasterRequestHeader {
            cluster_name: Some(member.cluster.clone()),
            broker_name: member.broker_name.clone(),
            broker_id: Some(broker_id),
            ..Default::default()
        };
        let ok = [rc::SUCCESS, rc::CONTROLLER_MASTER_STILL_EXIST];
        let answer = self
            .expect(code::CONTROLLER_ELECT_MASTER, header.to_ext(), &ok)
            .await?;
        let info = ElectMasterResponseHeader::from_ext(&answer.ext_fields).map_err(refused)?;
        let body: ferrocket_protocol::body::ElectMasterResponseBody =
            decode_json(&answer.body).unwrap_or_default();
        let set = SyncStateSet {
            sync_state_set: body.sync_state_set,
            sync_state_set_epoch: info.sync_state_set_epoch.unwrap_or_default(),
        };
        Ok(master_info(
            info.master_broker_id,
            info.master_address,
            info.master_epoch,
            set,
        ))
    }

    /// Gets this broker's id (from its identity file, or from the
    /// controller through the three steps), then registers its address.
    /// Returns the id and the live master the controller knows, if any.
    pub async fn register(
        &self,
        member: &Member,
        identity: &Path,
    ) -> Result<(i64, Option<MasterInfo>), MemberError> {
        let id = match read_identity(identity, member)? {
            Some(id) => id,
            None => self.apply_for_id(member, identity).await?,
        };
        let header = RegisterBrokerToControllerRequestHeader {
            cluster_name: member.cluster.clone(),
            broker_name: member.broker_name.clone(),
            broker_id: id,
            broker_address: member.address.clone(),
            invoke_time: Some(now_ms()),
        };
        let answer = self
            .expect(
                code::CONTROLLER_REGISTER_BROKER,
                header.to_ext(),
                &[rc::SUCCESS],
            )
            .await?;
        let info = RegisterBrokerToControllerResponseHeader::from_ext(&answer.ext_fields)
            .map_err(refused)?;
        let set: SyncStateSet = decode_json(&answer.body).unwrap_or_default();
        Ok((
            id,
            master_info(
                info.master_broker_id,
                info.master_address,
                info.master_epoch,
                set,
            ),
        ))
    }

    async fn apply_for_id(&self, member: &Member, identity: &Path) -> Result<i64, MemberError> {
        let temp = temp_path(identity);
        let pending = read_temp(&temp, member)?;
        let (id, check_code) = match pending {
            Some(pending) => pending,
            None => {
                let header = GetNextBrokerIdRequestHeader {
                    cluster_name: member.cluster.clone(),
                    broker_name: member.broker_name.clone(),
                };
                let answer = self
                    .expect(
                        code::CONTROLLER_GET_NEXT_BROKER_ID,
                        header.to_ext(),
                        &[rc::SUCCESS],
                    )
                    .await?;
                let next =
                    GetNextBrokerIdResponseHeader::from_ext(&answer.ext_fields).map_err(refused)?;
                let check_code = format!("{};{}", member.address, now_ms());
                let text = format!(
                    "{}#{}#{}#{check_code}",
                    member.cluster, member.broker_name, next.next_broker_id
                );
                write_file(&temp, &text)?;
                (next.next_broker_id, check_code)
            }
        };
        let header = ApplyBrokerIdRequestHeader {
            cluster_name: member.cluster.clone(),
            broker_name: member.broker_name.clone(),
            applied_broker_id: id,
            register_check_code: check_code,
        };
        if let Err(e) = self
            .expect(
                code::CONTROLLER_APPLY_BROKER_ID,
                header.to_ext(),
                &[rc::SUCCESS],
            )
            .await
        {
            // Taken by another broker: start over with a new id next time.
            if matches!(e, MemberError::Refused { .. }) {
                let _ = fs::remove_file(&temp);
            }
            return Err(e);
        }
        write_file(
            identity,
            &format!("{}#{}#{id}", member.cluster, member.broker_name),
        )?;
        let _ = fs::remove_file(&temp);
        Ok(id)
    }
}

fn refused(e: ferrocket_protocol::ProtocolError) -> MemberError {
    MemberError::Refused {
        code: rc::CONTROLLER_INVALID_REQUEST,
        remark: e.to_string(),
    }
}

fn master_info(
    id: Option<i64>,
    address: Option<String>,
    epoch: Option<i32>,
    set: SyncStateSet,
) -> Option<MasterInfo> {
    Some(MasterInfo {
        broker_id: id?,
        address: address.filter(|a| !a.is_empty())?,
        epoch: epoch.unwrap_or_default(),
        sync_state_set: set,
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The temp file beside the identity file (Java: `-temp` appended).
pub fn temp_path(identity: &Path) -> PathBuf {
    let mut name = identity.as_os_str().to_os_string();
    name.push("-temp");
    PathBuf::from(name)
}

fn identity_error(path: &Path, reason: impl Into<String>) -> MemberError {
    MemberError::Identity {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn read_text(path: &Path) -> Result<Option<String>, MemberError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(identity_error(path, e.to_string())),
    }
}

/// The id in the identity file, which must name this cluster and set.
pub fn read_identity(path: &Path, member: &Member) -> Result<Option<i64>, MemberError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let parts: Vec<&str> = text.split('#').collect();
    let [cluster, name, id] = parts[..] else {
        return Err(identity_error(
            path,
            format!("`{text}` is not cluster#brokerName#id"),
        ));
    };
    if cluster != member.cluster || name != member.broker_name {
        return Err(identity_error(
            path,
            format!(
                "it belongs to {cluster}/{name}, not {}/{}",
                member.cluster, member.broker_name
            ),
        ));
    }
    id.parse()
        .map(Some)
        .map_err(|_| identity_error(path, format!("`{id}` is not a broker id")))
}

/// A pending application: id and check code from the temp file. A temp
/// file of another cluster or set is an error, as in Java.
fn read_temp(path: &Path, member: &Member) -> Result<Option<(i64, String)>, MemberError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let parts: Vec<&str> = text.splitn(4, '#').collect();
    let [cluster, name, id, check_code] = parts[..] else {
        return Err(identity_error(
            path,
            format!("`{text}` is not cluster#brokerName#id#checkCode"),
        ));
    };
    if cluster != member.cluster || name != member.broker_name {
        return Err(identity_error(
            path,
            format!("it belongs to {cluster}/{name}"),
        ));
    }
    let id = id
        .parse()
        .map_err(|_| identity_error(path, format!("`{id}` is not a broker id")))?;
    Ok(Some((id, check_code.to_string())))
}

fn write_file(path: &Path, text: &str) -> Result<(), MemberError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("writing");
        let mut file = File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| identity_error(path, e.to_string()))
}

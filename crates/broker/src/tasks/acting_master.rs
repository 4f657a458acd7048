//! Slave acting master, from shard 0 (`enableSlaveActingMaster` on a
//! slave): asks a name server for this set's members every
//! `syncBrokerMemberGroupPeriod` (GET_BROKER_MEMBER_GROUP, Java's
//! `syncBrokerMemberGroup`) and takes NOTIFY_MIN_BROKER_ID_CHANGE from name
//! servers that send it; either way the lowest id decides whether this
//! slave acts (`services::acting_master`).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use ferrocket_protocol::body::{decode_json, BrokerMemberGroupBody};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    BrokerIdentityHeader, BrokerMemberGroupRequestHeader, NotifyMinBrokerIdChangeRequestHeader,
};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::services::acting_master::Transition;
use crate::shard::Shard;

/// Polls the name servers until the shard stops. Shard 0 of a slave with
/// `enableSlaveActingMaster` only.
pub(crate) async fn member_group_loop(shard: Rc<Shard>) {
    let period = shard
        .config()
        .replication
        .sync_broker_member_group_period_ms;
    loop {
        let stopped = shard
            .stopping()
            .interrupts_sleep(Duration::from_millis(period))
            .await;
        if stopped {
            return;
        }
        if let Some((min_id, min_addr)) = lowest_member(&shard).await {
            apply(&shard, min_id, Some(min_addr));
        }
    }
}

/// BROKER_HEARTBEAT (904) to every name server each
/// `brokerHeartbeatInterval` (Java's `sendHeartbeat` with
/// `enableSlaveActingMaster`): with the 10 s expiry this broker then
/// announces, a hung master leaves the route in seconds, not minutes.
pub(crate) async fn heartbeat_loop(shard: Rc<Shard>) {
    let Some(control) = shard.control_plane() else {
        return;
    };
    let config = shard.config();
    let period = Duration::from_millis(config.controller_mode.broker_heartbeat_interval_ms);
    let header = BrokerIdentityHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: shard.env().broker_addr.clone(),
        cluster_name: config.broker_cluster_name.clone(),
        broker_id: Some(config.broker_id),
    };
    let mut request = RemotingCommand::request(request_code::BROKER_HEARTBEAT);
    request.ext_fields = header.to_ext();
    let timeout_ms = config.register_broker_timeout_ms;
    loop {
        if shard.stopping().interrupts_sleep(period).await {
            return;
        }
        for addr in &shard.env().namesrvs {
            if let Err(err) = control
                .namesrv
                .call(*addr, request.clone(), timeout_ms)
                .await
            {
                tracing::debug!(%addr, %err, "BROKER_HEARTBEAT failed");
            }
        }
    }
}

/// The set's lowest id and address from the first name server that
/// answers with a non-empty group.
async fn lowest_member(shard: &Shard) -> Option<(i64, String)> {
    member_group(shard).await?.into_iter().next()
}

/// The set's members (id -> address) from the first name server that
/// answers with a non-empty group (GET_BROKER_MEMBER_GROUP).
pub(crate) async fn member_group(shard: &Shard) -> Option<BTreeMap<i64, String>> {
    let control = shard.control_plane()?;
    let config = shard.config();
    let header = BrokerMemberGroupRequestHeader {
        cluster_name: config.broker_cluster_name.clone(),
        broker_name: config.broker_name.clone(),
    };
    let mut request = RemotingCommand::request(request_code::GET_BROKER_MEMBER_GROUP);
    request.ext_fields = header.to_ext();
    for addr in &shard.env().namesrvs {
        let timeout_ms = config.register_broker_timeout_ms;
        let answer = match control
            .namesrv
            .call(*addr, request.clone(), timeout_ms)
            .await
        {
            Ok(answer) if answer.code == response_code::SUCCESS => answer,
            Ok(answer) => {
                tracing::debug!(%addr, code = answer.code, "name server refused GET_BROKER_MEMBER_GROUP");
                continue;
            }
            Err(err) => {
                tracing::debug!(%addr, %err, "GET_BROKER_MEMBER_GROUP failed");
                continue;
            }
        };
        let Ok(body) = decode_json::<BrokerMemberGroupBody>(&answer.body) else {
            tracing::warn!(%addr, "undecodable GET_BROKER_MEMBER_GROUP answer");
            continue;
        };
        let group = body.broker_member_group.broker_addrs;
        if !group.is_empty() {
            return Some(group);
        }
    }
    None
}

/// Applies a lowest id learnt by either way (shard 0).
fn apply(shard: &Shard, min_id: i64, min_addr: Option<String>) {
    let acting = &shard.env().acting;
    let Some(transition) = acting.update(min_id, min_addr.as_deref()) else {
        return;
    };
    match transition {
        Transition::Acting => {
            tracing::warn!(
                min_id,
                "the master is gone: this slave acts as master (enableSlaveActingMaster)"
            )
        }
        Transition::HandedBack => {
            tracing::warn!(min_id, addr = ?min_addr, "this slave hands the master's services back")
        }
        Transition::Unchanged => {
            tracing::info!(min_id, addr = ?min_addr, "lowest broker id of the set changed")
        }
    }
    // The next registration learns the returning master's HA address.
    if let Some(control) = shard.control_plane() {
        control.register_now.notify();
    }
}

/// NOTIFY_MIN_BROKER_ID_CHANGE (905), one-way from a name server: applied
/// on shard 0 whichever shard took it.
pub(crate) async fn notified(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = NotifyMinBrokerIdChangeRequestHeader::from_ext(&request.ext_fields)?;
    shard.env().acting.count_notice();
    tracing::info!(min_id = ?header.min_broker_id, min_addr = ?header.min_broker_addr,
        offline = ?header.offline_broker_addr, "the name server says the set's lowest id changed");
    if let Some(min_id) = header.min_broker_id {
        let change = MinBrokerChanged {
            min_id,
            min_addr: header.min_broker_addr,
        };
        if let Err(reject) = shard.call(0, change).await {
            tracing::warn!(remark = %reject.remark, "could not hand the lowest id to shard 0");
        }
    }
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

/// To shard 0: the set's lowest id changed.
struct MinBrokerChanged {
    min_id: i64,
    min_addr: Option<String>,
}

impl ShardCall<Shard> for MinBrokerChanged {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        apply(&shard, self.min_id, self.min_addr);
    }
}

/// A registration soon (shard 0's loop): after a hand-back, so the slave
/// learns the returning master's HA address without waiting a period.
pub(crate) async fn register_soon(shard: &Shard) {
    if let Err(reject) = shard.call(0, RegisterNow).await {
        tracing::debug!(remark = %reject.remark, "could not ask shard 0 to register");
    }
}

struct RegisterNow;

impl ShardCall<Shard> for RegisterNow {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        if let Some(control) = shard.control_plane() {
            control.register_now.notify();
        }
    }
}

//! Slave acting master on the name server (RocketMQ 5.0,
//! `RouteInfoManager`): which broker of a set holds the lowest id, the
//! brokers told when that changes (NOTIFY_MIN_BROKER_ID_CHANGE, with
//! `notifyMinBrokerIdChanged`), a set without its master routed read-only,
//! and, with `supportActingMaster`, its lowest slave routed as id 0.

use std::collections::BTreeMap;

use ferrocket_protocol::body::{perm, BrokerMemberGroup, TopicRouteData};
use ferrocket_protocol::header::NotifyMinBrokerIdChangeRequestHeader;

use super::{BrokerAddrKey, Registration, RouteTable, MASTER_ID};

/// Topics with this prefix are never rewritten (`SYNC_BROKER_MEMBER_GROUP_PREFIX`).
const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "SYNC_BROKER_MEMBER_";

/// The name server's keys for acting masters, both off as in RocketMQ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActingSettings {
    /// `supportActingMaster`: route a masterless set's lowest slave as id 0.
    pub support_acting_master: bool,
    /// `notifyMinBrokerIdChanged`: tell a set's brokers when its lowest id
    /// changes.
    pub notify_min_broker_id_changed: bool,
}

/// One NOTIFY_MIN_BROKER_ID_CHANGE to send, one-way, to each of `targets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinBrokerNotice {
    pub targets: Vec<String>,
    pub header: NotifyMinBrokerIdChangeRequestHeader,
}

impl RouteTable {
    /// The lowest broker id registered under `broker_name`.
    pub(super) fn min_broker_id(&self, broker_name: &str) -> Option<i64> {
        let broker = self.brokers.get(broker_name)?;
        broker.broker_addrs.keys().next().copied()
    }

    /// Whether `addr` holds the lowest id of `broker_name`.
    pub(super) fn is_min_broker(&self, broker_name: &str, addr: &str) -> bool {
        let broker = self.brokers.get(broker_name);
        broker
            .and_then(|b| b.broker_addrs.values().next())
            .is_some_and(|a| a == addr)
    }

    /// Records the registration's `enableActingMaster` on its set; returns
    /// whether it comes from the prime slave (a 5.0 slave holding the
    /// set's lowest id), whose topics the set's route then carries.
    pub(super) fn mark_acting(&mut self, reg: &Registration) -> bool {
        let Some(broker) = self.brokers.get_mut(&reg.broker_name) else {
            return false;
        };
        broker.enable_acting_master = reg.enable_acting_master == Some(true);
        let lowest = broker.broker_addrs.keys().next().copied();
        reg.enable_acting_master.is_some()
            && reg.broker_id != MASTER_ID
            && lowest == Some(reg.broker_id)
    }

    /// A broker registered below the set's lowest id (a master back): the
    /// others are told (Java notifies here whatever the set's flag).
    pub(super) fn notice_lower_id(&mut self, reg: &Registration) {
        let Some(broker) = self.brokers.get(&reg.broker_name) else {
            return;
        };
        let addrs = broker.broker_addrs.clone();
        let key = BrokerAddrKey {
            cluster: reg.cluster.clone(),
            addr: reg.broker_addr.clone(),
        };
        let ha = self.live.get(&key).and_then(|l| l.ha_server_addr.clone());
        self.push_notice(&reg.broker_name, &addrs, None, ha);
    }

    /// A set member left (the set still has others): a set whose lowest
    /// broker left tells the rest, and an acting-master set with no master
    /// loses write permission in every route.
    pub(super) fn on_member_gone(&mut self, broker_name: &str, gone_addr: &str, was_min: bool) {
        let Some(broker) = self.brokers.get(broker_name) else {
            return;
        };
        if !broker.enable_acting_master {
            return;
        }
        let addrs = broker.broker_addrs.clone();
        if !addrs.contains_key(&MASTER_ID) {
            for queues in self.topic_queues.values_mut() {
                if let Some(queue_data) = queues.get_mut(broker_name) {
                    queue_data.perm &= !perm::WRITE;
                }
            }
        }
        if was_min {
            self.push_notice(broker_name, &addrs, Some(gone_addr.to_string()), None);
        }
    }

    /// Queues a notice when `notifyMinBrokerIdChanged` is on. Targets as
    /// Java chooses them: every member after a departure (or when alone),
    /// else every member but the new lowest one.
    fn push_notice(
        &mut self,
        broker_name: &str,
        addrs: &BTreeMap<i64, String>,
        offline: Option<String>,
        ha_addr: Option<String>,
    ) {
        if !self.acting.notify_min_broker_id_changed {
            return;
        }
        let Some((&min_id, min_addr)) = addrs.iter().next() else {
            return;
        };
        let all = offline.is_some() || addrs.len() == 1;
        let targets = addrs
            .iter()
            .filter(|(id, _)| all || **id != min_id)
            .map(|(_, addr)| addr.clone())
            .collect();
        tracing::info!(
            broker = broker_name,
            min_id,
            ?offline,
            "lowest broker id changed"
        );
        self.notices.push(MinBrokerNotice {
            targets,
            header: NotifyMinBrokerIdChangeRequestHeader {
                min_broker_id: Some(min_id),
                broker_name: Some(broker_name.to_string()),
                min_broker_addr: Some(min_addr.clone()),
                offline_broker_addr: offline,
                ha_broker_addr: ha_addr,
            },
        });
    }

    /// The notices queued since the last call.
    pub fn take_notices(&mut self) -> Vec<MinBrokerNotice> {
        std::mem::take(&mut self.notices)
    }

    /// GET_BROKER_MEMBER_GROUP: the set's members (empty when unknown).
    pub fn member_group(&self, cluster: &str, broker_name: &str) -> BrokerMemberGroup {
        BrokerMemberGroup {
            cluster: cluster.to_string(),
            broker_name: broker_name.to_string(),
            broker_addrs: self
                .brokers
                .get(broker_name)
                .map(|b| b.broker_addrs.clone())
                .unwrap_or_default(),
        }
    }

    /// With `supportActingMaster`: in a route where a set with the flag has
    /// no master and read-only queues, its lowest slave is listed as id 0,
    /// so clients that read from the master read from it.
    pub(super) fn route_acting_masters(&self, topic: &str, route: &mut TopicRouteData) {
        if !self.acting.support_acting_master || topic.starts_with(SYNC_BROKER_MEMBER_GROUP_PREFIX)
        {
            return;
        }
        for broker in &mut route.broker_datas {
            let addrs = &mut broker.broker_addrs;
            if addrs.is_empty() || addrs.contains_key(&MASTER_ID) || !broker.enable_acting_master {
                continue;
            }
            let read_only = route
                .queue_datas
                .iter()
                .find(|q| q.broker_name == broker.broker_name)
                .is_some_and(|q| !perm::is_writeable(q.perm));
            if read_only {
                if let Some((_, addr)) = addrs.pop_first() {
                    addrs.insert(MASTER_ID, addr);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "route_acting_tests.rs"]
mod tests;

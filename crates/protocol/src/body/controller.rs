//! Controller mode's JSON bodies (`SyncStateSet`, `ElectMasterResponseBody`,
//! `BrokerMemberGroup`, `BrokerReplicasInfo`, a broker's `EpochEntryCache`). Broker ids are JSON numbers;
//! a map keyed by broker id is written with the id as a string key, which
//! Java's fastjson reads as well.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The in-sync replicas of a broker set and the epoch of that set
/// (`SyncStateSet`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncStateSet {
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

/// A broker set's members: broker id to address (`BrokerMemberGroup`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerMemberGroup {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: BTreeMap<i64, String>,
}

/// Body of CONTROLLER_ELECT_MASTER's answer (`ElectMasterResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ElectMasterResponseBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_member_group: Option<BrokerMemberGroup>,
    pub sync_state_set: BTreeSet<i64>,
}

/// One replica in [`ReplicasInfo`] (`BrokerReplicasInfo.ReplicaIdentity`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaIdentity {
    pub broker_name: String,
    pub broker_id: i64,
    pub broker_address: String,
    pub alive: bool,
}

/// One broker set's replication state (`BrokerReplicasInfo.ReplicasInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicasInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_broker_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_address: Option<String>,
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
}

/// Body of CONTROLLER_GET_SYNC_STATE_DATA's answer (`BrokerReplicasInfo`);
/// the request body is a JSON list of broker names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerReplicasInfo {
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

/// One epoch of a broker's log (`EpochEntry`): from `start_offset` up to
/// `end_offset` (the next epoch's start; the CommitLog's end for the last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochItem {
    pub epoch: i32,
    pub start_offset: i64,
    pub end_offset: i64,
}

/// Body of GET_BROKER_EPOCH_CACHE's answer (`EpochEntryCache`): a broker's
/// epochs, oldest first, and its CommitLog's end.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochEntryCache {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub epoch_list: Vec<EpochItem>,
    pub max_offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_cache_reads_java_json() {
        let text = r#"{"clusterName":"c","brokerName":"b","brokerId":1,
            "epochList":[{"epoch":1,"startOffset":0,"endOffset":100}],"maxOffset":100}"#;
        let cache: EpochEntryCache = serde_json::from_str(text).unwrap();
        assert_eq!(cache.epoch_list.len(), 1);
        assert_eq!(cache.epoch_list[0].end_offset, 100);
        assert_eq!(cache.max_offset, 100);
        let back: EpochEntryCache =
            serde_json::from_str(&serde_json::to_string(&cache).unwrap()).unwrap();
        assert_eq!(back, cache);
    }

    #[test]
    fn sync_state_set_reads_java_json() {
        let set: SyncStateSet =
            serde_json::from_str(r#"{"syncStateSet":[2,1],"syncStateSetEpoch":3}"#).unwrap();
        assert_eq!(set.sync_state_set, BTreeSet::from([1, 2]));
        assert_eq!(set.sync_state_set_epoch, 3);
        let text = serde_json::to_string(&set).unwrap();
        assert_eq!(text, r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#);
    }

    #[test]
    fn member_group_keys_are_broker_ids() {
        let group = BrokerMemberGroup {
            cluster: "c".into(),
            broker_name: "b".into(),
            broker_addrs: BTreeMap::from([(1, "127.0.0.1:10911".into())]),
        };
        let text = serde_json::to_string(&group).unwrap();
        assert_eq!(
            text,
            r#"{"cluster":"c","brokerName":"b","brokerAddrs":{"1":"127.0.0.1:10911"}}"#
        );
        let back: BrokerMemberGroup = serde_json::from_str(&text).unwrap();
        assert_eq!(back, group);
    }
}

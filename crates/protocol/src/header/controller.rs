//! Controller mode's headers (RocketMQ 5: `header/controller/*`): what a
//! broker and an admin tool send to the controller, and what it answers.
//! Broker ids are `Long` in Java and may be absent (no master yet), so they
//! are `Option<i64>` where Java leaves them null.

use crate::{ExtFields, ProtocolError};

use super::HeaderField;

header! {
    /// CONTROLLER_ALTER_SYNC_STATE_SET (`AlterSyncStateSetRequestHeader`);
    /// the body is the proposed [`crate::body::SyncStateSet`].
    pub struct AlterSyncStateSetRequestHeader {
        broker_name: String = "brokerName",
        master_broker_id: Option<i64> = "masterBrokerId",
        master_epoch: Option<i32> = "masterEpoch",
        invoke_time: Option<i64> = "invokeTime",
    }
}

header! {
    /// Response to CONTROLLER_ALTER_SYNC_STATE_SET.
    pub struct AlterSyncStateSetResponseHeader {
        new_sync_state_set_epoch: i32 = "newSyncStateSetEpoch",
    }
}

header! {
    /// CONTROLLER_ELECT_MASTER (`ElectMasterRequestHeader`): `brokerId` -1
    /// (or absent) means the controller itself asks; `designateElect` makes
    /// `brokerId` the only acceptable winner.
    pub struct ElectMasterRequestHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: String = "brokerName",
        broker_id: Option<i64> = "brokerId",
        designate_elect: bool = "designateElect",
        invoke_time: Option<i64> = "invokeTime",
    }
}

header! {
    /// Response to CONTROLLER_ELECT_MASTER and the master part of several
    /// other answers (`ElectMasterResponseHeader`).
    pub struct ElectMasterResponseHeader {
        master_broker_id: Option<i64> = "masterBrokerId",
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        sync_state_set_epoch: Option<i32> = "syncStateSetEpoch",
    }
}

header! {
    /// CONTROLLER_GET_NEXT_BROKER_ID (`GetNextBrokerIdRequestHeader`); also
    /// the request of CONTROLLER_APPLY_BROKER_ID's answer.
    pub struct GetNextBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

header! {
    /// Response to CONTROLLER_GET_NEXT_BROKER_ID.
    pub struct GetNextBrokerIdResponseHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        next_broker_id: i64 = "nextBrokerId",
    }
}

header! {
    /// CONTROLLER_APPLY_BROKER_ID (`ApplyBrokerIdRequestHeader`);
    /// `registerCheckCode` is `"brokerAddress;millis"`.
    pub struct ApplyBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        applied_broker_id: i64 = "appliedBrokerId",
        register_check_code: String = "registerCheckCode",
    }
}

header! {
    /// CONTROLLER_REGISTER_BROKER (`RegisterBrokerToControllerRequestHeader`).
    pub struct RegisterBrokerToControllerRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        broker_address: String = "brokerAddress",
        invoke_time: Option<i64> = "invokeTime",
    }
}

header! {
    /// Response to CONTROLLER_REGISTER_BROKER: the master fields only when a
    /// live master exists.
    pub struct RegisterBrokerToControllerResponseHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        master_broker_id: Option<i64> = "masterBrokerId",
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        sync_state_set_epoch: Option<i32> = "syncStateSetEpoch",
    }
}

header! {
    /// CONTROLLER_GET_REPLICA_INFO (`GetReplicaInfoRequestHeader`).
    pub struct GetReplicaInfoRequestHeader {
        broker_name: String = "brokerName",
    }
}

header! {
    /// Response to CONTROLLER_GET_REPLICA_INFO; the body is the
    /// [`crate::body::SyncStateSet`].
    pub struct GetReplicaInfoResponseHeader {
        master_broker_id: Option<i64> = "masterBrokerId",
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
    }
}

header! {
    /// Response to CONTROLLER_GET_METADATA_INFO (`GetMetaDataResponseHeader`).
    pub struct GetMetaDataResponseHeader {
        group: Option<String> = "group",
        controller_leader_id: Option<String> = "controllerLeaderId",
        controller_leader_address: Option<String> = "controllerLeaderAddress",
        is_leader: bool = "isLeader",
        peers: Option<String> = "peers",
    }
}

header! {
    /// BROKER_HEARTBEAT to a controller (`BrokerHeartbeatRequestHeader`).
    pub struct BrokerHeartbeatRequestHeader {
        cluster_name: String = "clusterName",
        broker_addr: String = "brokerAddr",
        broker_name: String = "brokerName",
        broker_id: Option<i64> = "brokerId",
        epoch: Option<i32> = "epoch",
        max_offset: Option<i64> = "maxOffset",
        confirm_offset: Option<i64> = "confirmOffset",
        heartbeat_timeout_mills: Option<i64> = "heartbeatTimeoutMills",
        election_priority: Option<i32> = "electionPriority",
    }
}

header! {
    /// NOTIFY_BROKER_ROLE_CHANGED, controller to broker, one-way
    /// (`NotifyBrokerRoleChangedRequestHeader`); body: the sync-state set.
    pub struct NotifyBrokerRoleChangedRequestHeader {
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        sync_state_set_epoch: Option<i32> = "syncStateSetEpoch",
        master_broker_id: Option<i64> = "masterBrokerId",
    }
}

header! {
    /// CLEAN_BROKER_DATA (`CleanControllerBrokerDataRequestHeader`):
    /// `brokerControllerIdsToClean` is `;`-separated ids, blank for all.
    pub struct CleanControllerBrokerDataRequestHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: String = "brokerName",
        broker_controller_ids_to_clean: Option<String> = "brokerControllerIdsToClean",
        is_clean_living_broker: bool = "isCleanLivingBroker",
        invoke_time: Option<i64> = "invokeTime",
    }
}

//! The subscription group table (`SubscriptionGroupManager`): each consumer
//! group's settings (consume enabled, retry queues and max retries, ...),
//! the groups a fresh broker knows, the changes shard 0 applies to its
//! master copy, and `config/subscriptionGroup.json`. Pure data: no I/O
//! besides [`load_table`].

use std::collections::BTreeMap;

use ferrocket_protocol::body::DataVersion;
pub use ferrocket_protocol::body::SubscriptionGroupConfig;
use ferrocket_protocol::codes::response_code;
use ferrocket_store::ConfigDir;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::BrokerError;
use crate::error::Reject;

/// File holding the table under `config/`.
pub const GROUPS_FILE: &str = "subscriptionGroup.json";
/// Longest group name (`TopicValidator.CHARACTER_MAX_LENGTH`).
pub const GROUP_NAME_BYTES_MAX: usize = 255;

/// Groups every broker has (`SubscriptionGroupManager.init`).
const SYSTEM_GROUPS: [&str; 7] = [
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
];

/// The table with its version, as in subscriptionGroup.json and the
/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (`SubscriptionGroupWrapper`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupTable {
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    /// group -> topic -> forbidden bits (kept, not enforced).
    pub forbidden_table: BTreeMap<String, Value>,
    pub data_version: DataVersion,
}

impl GroupTable {
    pub fn get(&self, group: &str) -> Option<&SubscriptionGroupConfig> {
        self.subscription_group_table.get(group)
    }
}

/// A change to the table; applied on shard 0 only.
#[derive(Debug, Clone)]
pub(crate) enum GroupChange {
    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
    Upsert(SubscriptionGroupConfig),
    /// First use of an unknown group (`autoCreateSubscriptionGroup`).
    AutoCreate(String),
    /// DELETE_SUBSCRIPTIONGROUP.
    Delete(String),
}

/// Checks a group name as Java's `TopicValidator.validateGroup` does.
pub fn validate_group(group: &str) -> Result<(), String> {
    if group.trim().is_empty() {
        return Err("the specified group is blank".into());
    }
    if group.len() > GROUP_NAME_BYTES_MAX {
        return Err(format!(
            "the specified group is longer than group max length {GROUP_NAME_BYTES_MAX}"
        ));
    }
    let legal = group
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'));
    if !legal {
        return Err(format!(
            "the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    Ok(())
}

/// The table a fresh broker starts with.
pub fn default_table() -> GroupTable {
    let mut table = GroupTable::default();
    for name in SYSTEM_GROUPS {
        table
            .subscription_group_table
            .insert(name.to_string(), SubscriptionGroupConfig::new(name));
    }
    table
}

/// Loads subscriptionGroup.json over the defaults.
pub fn load_table(dir: &ConfigDir) -> Result<GroupTable, BrokerError> {
    let mut table = default_table();
    if let Some(stored) = dir.read_json::<GroupTable>(GROUPS_FILE)? {
        for (name, group) in stored.subscription_group_table {
            if validate_group(&name).is_ok() && name == group.group_name {
                table.subscription_group_table.insert(name, group);
            } else {
                tracing::warn!(group = %name, "ignoring an invalid entry of {GROUPS_FILE}");
            }
        }
        table.forbidden_table = stored.forbidden_table;
        table.data_version = stored.data_version;
    }
    Ok(table)
}

fn invalid(remark: String) -> Reject {
    Reject::new(response_code::INVALID_PARAMETER, remark)
}

/// Applies `change`; returns the group's config (None after a delete) and
/// whether the table changed.
pub(crate) fn apply(
    table: &mut GroupTable,
    change: GroupChange,
    now_ms: i64,
    groups_max: usize,
) -> Result<(Option<SubscriptionGroupConfig>, bool), Reject> {
    let groups = &mut table.subscription_group_table;
    let full = groups.len() >= groups_max;
    let outcome = match change {
        GroupChange::Upsert(config) => {
            validate_group(&config.group_name).map_err(invalid)?;
            if config.retry_queue_nums < 0 || config.retry_max_times < -1 {
                return Err(invalid(format!(
                    "retryQueueNums {} and retryMaxTimes {} must not be negative",
                    config.retry_queue_nums, config.retry_max_times
                )));
            }
            if full && !groups.contains_key(&config.group_name) {
                return Err(Reject::system(format!(
                    "the broker holds {groups_max} subscription groups already (subscriptionGroupCountMax)"
                )));
            }
            let changed = groups.get(&config.group_name) != Some(&config);
            groups.insert(config.group_name.clone(), config.clone());
            (Some(config), changed)
        }
        GroupChange::AutoCreate(name) => {
            if let Some(existing) = groups.get(&name) {
                return Ok((Some(existing.clone()), false));
            }
            validate_group(&name).map_err(invalid)?;
            if full {
                return Err(Reject::system(format!(
                    "the broker holds {groups_max} subscription groups already (subscriptionGroupCountMax)"
                )));
            }
            let created = SubscriptionGroupConfig::new(&name);
            groups.insert(name, created.clone());
            tracing::info!(group = %created.group_name, "auto-created subscription group");
            (Some(created), true)
        }
        GroupChange::Delete(name) => (None, groups.remove(&name).is_some()),
    };
    if outcome.1 {
        table.data_version.next(now_ms);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_apply_and_count_versions() {
        let mut table = default_table();
        assert!(table.get("TOOLS_CONSUMER").is_some());
        let (created, changed) = apply(
            &mut table,
            GroupChange::AutoCreate("G".into()),
            5,
            crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT,
        )
        .unwrap();
        assert!(changed);
        assert_eq!(created.unwrap().retry_max_times, 16);
        assert_eq!(table.data_version.counter, 1);
        let (_, again) = apply(
            &mut table,
            GroupChange::AutoCreate("G".into()),
            6,
            crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT,
        )
        .unwrap();
        assert!(!again);
        let update = SubscriptionGroupConfig {
            retry_max_times: 2,
            ..SubscriptionGroupConfig::new("G")
        };
        assert!(
            apply(
                &mut table,
                GroupChange::Upsert(update.clone()),
                7,
                crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT
            )
            .unwrap()
            .1
        );
        assert!(
            !apply(
                &mut table,
                GroupChange::Upsert(update),
                8,
                crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT
            )
            .unwrap()
            .1
        );
        assert_eq!(table.get("G").unwrap().retry_max_times, 2);
        assert!(
            apply(
                &mut table,
                GroupChange::Delete("G".into()),
                9,
                crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT
            )
            .unwrap()
            .1
        );
        assert!(table.get("G").is_none());
        assert!(
            !apply(
                &mut table,
                GroupChange::Delete("G".into()),
                9,
                crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT
            )
            .unwrap()
            .1
        );
    }

    #[test]
    fn bad_names_and_values_are_refused() {
        let mut table = default_table();
        for bad in ["", "a b", "x/y", &"g".repeat(300)] {
            assert!(
                apply(
                    &mut table,
                    GroupChange::AutoCreate(bad.into()),
                    1,
                    crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT
                )
                .is_err(),
                "{bad}"
            );
        }
        let negative = SubscriptionGroupConfig {
            retry_queue_nums: -1,
            ..SubscriptionGroupConfig::new("G")
        };
        let refused = apply(
            &mut table,
            GroupChange::Upsert(negative),
            1,
            crate::config::SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT,
        )
        .unwrap_err();
        assert_eq!(refused.code, response_code::INVALID_PARAMETER);
        assert!(validate_group("CID_ONS-HTTP-PROXY").is_ok());
        assert!(validate_group("%RETRY%G").is_ok());
    }
}

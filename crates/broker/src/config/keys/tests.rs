use super::*;
use std::collections::BTreeSet;

use ferrocket_runtime::settings::readme_defaults;
use ferrocket_runtime::suggest::closest;

fn setting(value: &str) -> Setting {
    Setting::from_flag(value.into(), "line 7".into())
}

fn apply(config: &mut BrokerConfig, key: &str, setting: &Setting) -> Result<bool, String> {
    BROKER_SETTINGS.apply(config, key, setting)
}

#[test]
fn broker_keys_apply_and_reject() {
    let mut config = BrokerConfig::default();
    assert!(apply(&mut config, "brokerName", &setting("b1")).unwrap());
    assert!(apply(&mut config, "flushDiskType", &setting("SYNC_FLUSH")).unwrap());
    assert!(apply(&mut config, "shardCores", &setting("0, 2")).unwrap());
    assert!(apply(&mut config, "appenderCore", &setting("1")).unwrap());
    assert_eq!(config.appender_core, Some(1));
    assert!(apply(&mut config, "appenderCore", &setting("one")).is_err());
    assert!(apply(&mut config, "appenderInShard", &setting("false")).unwrap());
    assert_eq!(config.appender_in_shard, Some(false));
    assert!(apply(&mut config, "appenderInShard", &setting("auto")).unwrap());
    assert_eq!(config.appender_in_shard, None);
    assert_eq!(config.broker_name, "b1");
    assert_eq!(config.flush_disk_type, FlushDiskType::SyncFlush);
    assert_eq!(config.shard_cores, vec![0, 2]);
    assert!(!apply(&mut config, "noSuchKey", &setting("1")).unwrap());
    let error = apply(&mut config, "listenPort", &setting("70000")).unwrap_err();
    assert!(
        error.contains("listenPort") && error.contains("line 7"),
        "{error}"
    );
    assert!(apply(&mut config, "flushDiskType", &setting("SOMETIMES")).is_err());
    assert!(apply(&mut config, "fileReservedTime", &setting("48")).unwrap());
    assert_eq!(config.file_reserved_time_ms, 48 * 3_600_000);
    assert!(apply(&mut config, "fileReservedTimeMs", &setting("1500")).unwrap());
    assert_eq!(config.file_reserved_time_ms, 1500);
    assert!(apply(&mut config, "deleteWhen", &setting("01;13")).unwrap());
    assert_eq!(config.delete_when, vec![1, 13]);
    assert!(apply(&mut config, "deleteWhen", &setting("25")).is_err());
    assert!(apply(&mut config, "diskMaxUsedSpaceRatio", &setting("101")).is_err());
    apply(&mut config, "diskSpaceWarningLevelRatio", &setting("0.95")).unwrap();
    assert_eq!(config.disk_space_warning_level_ratio, 95);
    apply(&mut config, "diskSpaceWarningLevelRatio", &setting("80")).unwrap();
    assert_eq!(config.disk_space_warning_level_ratio, 80);
    assert!(apply(&mut config, "diskSpaceWarningLevelRatio", &setting("1.5")).is_err());
    assert!(apply(
        &mut config,
        "destroyMapedFileIntervalForcibly",
        &setting("1")
    )
    .unwrap());
}

#[test]
fn replication_keys_apply_with_javas_spellings() {
    let mut config = BrokerConfig::default();
    assert!(apply(&mut config, "brokerRole", &setting("SLAVE")).unwrap());
    assert!(config.replication.broker_role.is_slave());
    assert!(apply(&mut config, "brokerRole", &setting("PRIMARY")).is_err());
    assert!(apply(&mut config, "haListenPort", &setting("-1")).unwrap());
    assert_eq!(config.replication.ha_listen_port, None);
    assert!(apply(&mut config, "haListenPort", &setting("20912")).unwrap());
    assert_eq!(config.replication.ha_listen_port, Some(20912));
    assert!(apply(&mut config, "haSlaveFallbehindMax", &setting("1024")).unwrap());
    assert_eq!(config.replication.ha_max_gap_not_in_sync_bytes, 1024);
    assert!(apply(&mut config, "slaveReadEnable", &setting("true")).unwrap());
    assert!(config.replication.slave_read_enable);
    assert!(apply(&mut config, "fastListenPortEnable", &setting("true")).unwrap());
    assert!(config.fast_listen_port_enable);
    // A slave keeps brokerId 0 only until validation refuses it.
    assert!(config
        .validate()
        .unwrap_err()
        .to_string()
        .contains("brokerId > 0"));
}

#[test]
fn each_key_is_declared_once() {
    let keys = BROKER_SETTINGS.keys();
    let mut seen = BTreeSet::new();
    for key in &keys {
        assert!(seen.insert(*key), "{key} is declared twice");
    }
    for decl in BROKER_SETTINGS.decls() {
        assert!(!decl.doc.is_empty(), "{} has no description", decl.name);
        assert!(
            decl.show.is_some() || !decl.online,
            "{} is online, not printed",
            decl.name
        );
    }
}

/// Each printed key parses back to the same config: GET's output is
/// a valid broker.conf for this broker.
#[test]
fn printed_keys_parse_back_to_the_same_config() {
    let config = BrokerConfig {
        broker_name: "b1".into(),
        trace_on: false,
        delete_when: vec![1, 13],
        ..BrokerConfig::default()
    };
    let mut parsed = BrokerConfig::default();
    for (key, value) in render(&config) {
        assert!(
            apply(&mut parsed, &key, &setting(&value)).unwrap(),
            "{key} unknown"
        );
    }
    assert_eq!(render(&parsed), render(&config));
    assert_eq!(parsed.broker_name, "b1");
    assert!(!parsed.trace_on);
}

/// A declared default written as a value is the value in force by
/// default (words, `1 GiB`, `(none)`, are not checked).
#[test]
fn declared_defaults_are_the_defaults() {
    let default = BrokerConfig::default();
    let mut checked = 0;
    for decl in BROKER_SETTINGS.decls() {
        let (Some(show), text) = (decl.show, decl.default.trim_matches('`')) else {
            continue;
        };
        // A value, not words: `true`, `ASYNC_FLUSH`, 72.
        let numeric = text.chars().all(|c| c.is_ascii_digit() || c == '.');
        let value = decl.default.starts_with('`') || numeric;
        let mut set = BrokerConfig::default();
        let names_a_key = BROKER_SETTINGS.find(text).is_some();
        if !value || names_a_key || text.is_empty() || text.contains([' ', '~']) {
            continue;
        }
        if (decl.apply)(&mut set, decl.name, &setting(text)).is_err() {
            continue;
        }
        assert_eq!(
            show(&set, decl.name),
            show(&default, decl.name),
            "{}: declared default {text}",
            decl.name
        );
        checked += 1;
    }
    assert!(checked > 40, "only {checked} defaults checked");
}

#[test]
fn misspellings_get_the_key_meant() {
    let keys = BROKER_SETTINGS.keys();
    assert_eq!(closest("flushDiskTyp", &keys), Some("flushDiskType"));
    assert_eq!(closest("flushdisktype", &keys), Some("flushDiskType"));
    assert_eq!(closest("namesrvAdr", &keys), Some("namesrvAddr"));
    assert_eq!(closest("someUnknownKeyXyz", &keys), None);
}

/// The README's `| key | default | meaning |` tables say what the
/// declarations say: each row naming a declared key shows its default.
#[test]
fn the_readme_tables_match_the_declarations() {
    let readme = include_str!("../../../../../README.md");
    let mut rows = BTreeSet::new();
    for (key, default) in readme_defaults(readme) {
        if key.ends_with(" (namesrv)") {
            continue;
        }
        let Some(decl) = BROKER_SETTINGS.find(&key) else {
            continue;
        };
        assert_eq!(decl.name, key, "the README names {key} by an alias");
        assert_eq!(default, decl.default, "README default of {key}");
        rows.insert(decl.name);
    }
    assert!(rows.len() > 40, "only {} README rows found", rows.len());
    // The tables of tiering, controller mode, TLS and ACL 2.0 are among
    // those checked.
    for key in [
        "tls.server.mode",
        "tls.client.trustCertPath",
        "authorizationWhitelist",
        "tieredStorageLevel",
        "objectStoreSecretKey",
        "enableControllerMode",
        "storePathBrokerIdentity",
    ] {
        assert!(rows.contains(key), "{key}: no README row checked");
    }
}

/// The README's list of keys that change online is the declared one.
#[test]
fn the_readme_lists_the_online_keys() {
    let readme = include_str!("../../../../../README.md");
    let start = "Keys that change online are those the broker reads at each use:";
    let list = readme
        .split(start)
        .nth(1)
        .expect("the README lists the online keys");
    let list = &list[..list.find(". (").expect("the list ends with `. (`")];
    let listed: BTreeSet<&str> = list.split('`').skip(1).step_by(2).collect();
    let declared: BTreeSet<&str> = BROKER_SETTINGS.online_keys().into_iter().collect();
    assert_eq!(listed, declared);
}

use std::collections::BTreeSet;

use ferrocket_runtime::settings::{readme_defaults, Setting};
use ferrocket_runtime::suggest::closest;

use super::*;

fn setting(value: &str) -> Setting {
    Setting::from_flag(value.into(), "line 7".into())
}

fn apply(config: &mut NamesrvConfig, key: &str, value: &str) -> Result<bool, String> {
    NAMESRV_SETTINGS.apply(config, key, &setting(value))
}

#[test]
fn namesrv_keys_apply() {
    let mut config = NamesrvConfig::default();
    assert!(apply(&mut config, "listenPort", "19876").unwrap());
    assert_eq!(config.listen_port, 19876);
    assert!(apply(&mut config, "brokerExpiryMs", "0").is_err());
    assert!(apply(&mut config, "kvConfigPath", "/x/kv.json").unwrap());
    assert_eq!(config.kv_config_path, Some("/x/kv.json".into()));
    assert!(apply(&mut config, "kvConfigPath", "").unwrap());
    assert_eq!(config.kv_config_path, None);
    assert!(apply(&mut config, "scanIntervalMs", "700").unwrap());
    assert_eq!(config.scan_interval_ms, 700);
    assert!(apply(&mut config, "metricsExporterType", "PROM").unwrap());
    let otlp = apply(&mut config, "metricsExporterType", "OTLP_GRPC").unwrap_err();
    assert!(otlp.contains("PROM only"), "{otlp}");
    assert!(apply(&mut config, "channelMaxIdleTimeSeconds", "3").unwrap());
    assert_eq!(config.limits.idle_timeout_ms, 3000);
    assert!(apply(&mut config, "tls.server.mode", "disabled").unwrap());
    assert!(!apply(&mut config, "brokerName", "b").unwrap());
}

#[test]
fn each_key_is_declared_once_and_the_live_keys_are_the_online_ones() {
    let mut seen = BTreeSet::new();
    for key in NAMESRV_SETTINGS.keys() {
        assert!(seen.insert(key), "{key} is declared twice");
    }
    let keys = NAMESRV_SETTINGS.keys();
    assert_eq!(closest("listenport", &keys), Some("listenPort"));
}

/// The README's `(namesrv)` rows show the declared defaults.
#[test]
fn the_readme_rows_of_the_name_server_match_the_declarations() {
    let readme = include_str!("../../../../README.md");
    let mut rows = 0;
    for (key, default) in readme_defaults(readme) {
        let Some(key) = key.strip_suffix(" (namesrv)") else {
            continue;
        };
        let decl = NAMESRV_SETTINGS
            .find(key)
            .expect("a README row names no key");
        assert_eq!(default, decl.default, "README default of {key}");
        rows += 1;
    }
    assert!(rows >= 2, "only {rows} rows");
}

/// GET_NAMESRV_CONFIG prints the keys it always printed, in that order.
#[test]
fn the_printed_keys_are_the_name_servers_own() {
    let printed: Vec<String> = render_own(&NamesrvConfig::default())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let expected = [
        "listenAddr",
        "listenPort",
        "brokerExpiryMs",
        "scanNotActiveBrokerInterval",
        "unregisterOnDisconnect",
        "deleteTopicWithBrokerRegistration",
        "supportActingMaster",
        "notifyMinBrokerIdChanged",
        "kvConfigPath",
        "kvConfigEntriesMax",
        "kvConfigBytesMax",
        "orderMessageEnable",
        "aclEnable",
        "rocketmqHome",
        "metricsExporterType",
    ];
    assert_eq!(printed, expected);
}

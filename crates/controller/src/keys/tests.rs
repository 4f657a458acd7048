use std::collections::BTreeSet;

use ferrocket_settings::{readme_defaults, suggest::closest};

use super::*;

/// A declared default as a value: no backticks, `~` the home directory.
fn default_value(declared: &str) -> String {
    let text = declared.replace('`', "");
    match text.strip_prefix("~/") {
        Some(rest) => {
            let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
            home.join(rest).display().to_string()
        }
        None => text,
    }
}

/// Each declared default is `ControllerConfig::default()`'s: setting it
/// changes nothing, and a printed key prints it.
#[test]
fn the_declared_defaults_are_the_configs() {
    let default = ControllerConfig::default();
    let mut checked = 0;
    for decl in CONTROLLER_SETTINGS.decls() {
        if matches!(decl.default, "" | "-") || decl.name.starts_with("tls.") {
            continue;
        }
        let value = default_value(decl.default);
        let mut config = ControllerConfig::default();
        let setting = Setting::from_flag(value.clone(), "test".into());
        (decl.apply)(&mut config, decl.name, &setting).unwrap();
        assert_eq!(config, default, "{} = {value}", decl.name);
        if let Some(show) = decl.show {
            assert_eq!(show(&default, decl.name), value, "{}", decl.name);
        }
        checked += 1;
    }
    assert!(checked >= 13, "only {checked} defaults checked");
    let mut unset = ControllerConfig::default();
    for key in ["rocketmqHome", "innerClientAuthenticationCredentials"] {
        assert!(unset.apply(key, "", "test").unwrap());
    }
    assert_eq!(unset, default);
}

#[test]
fn each_key_is_declared_once_and_misspellings_are_caught() {
    let mut seen = BTreeSet::new();
    for key in CONTROLLER_SETTINGS.keys() {
        assert!(seen.insert(key), "{key} is declared twice");
    }
    let keys = CONTROLLER_SETTINGS.keys();
    assert_eq!(
        closest("controllerDLegerPeer", &keys),
        Some("controllerDLegerPeers")
    );
    assert_eq!(closest("tls.server.mod", &keys), Some("tls.server.mode"));
}

#[test]
fn values_are_checked_with_where_they_came_from() {
    let mut config = ControllerConfig::default();
    let error = config
        .apply("scanInactiveMasterInterval", "-1", "controller.conf line 2")
        .unwrap_err();
    assert!(
        error.starts_with(
            "controller.conf line 2: invalid value `-1` for scanInactiveMasterInterval"
        ),
        "{error}"
    );
    let peers = config
        .apply(
            "controllerDLegerPeers",
            "n0",
            "--set controllerDLegerPeers=n0",
        )
        .unwrap_err();
    assert!(
        peers.starts_with("--set controllerDLegerPeers=n0: "),
        "{peers}"
    );
    assert!(config
        .apply("controllerElectionTimeoutMs", "700", "t")
        .unwrap());
    assert_eq!(config.election_timeout_ms, 700);
    assert!(config
        .apply("electMasterMaxRetryCount", "4294967296", "t")
        .is_err());
    assert!(config.apply("mappedFileSize", "1024", "t").unwrap());
}

/// The controller's README table is its declarations: every row a key
/// by its name, with its declared default.
#[test]
fn the_readme_table_matches_the_declarations() {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("Controller keys (")
        .nth(1)
        .expect("the README has the controller's key table");
    let section = &section[..section.find("\nBroker keys:").expect("then the broker's")];
    let mut rows = 0;
    for (key, default) in readme_defaults(section) {
        let decl = CONTROLLER_SETTINGS
            .find(&key)
            .unwrap_or_else(|| panic!("the README's row {key} names no controller key"));
        assert_eq!(decl.name, key, "the README names {key} by an alias");
        assert_eq!(default, decl.default, "README default of {key}");
        rows += 1;
    }
    assert!(rows >= 10, "only {rows} README rows");
    let start = "UPDATE_CONTROLLER_CONFIG";
    let before = &section[..section.find(start).expect("the online keys are listed")];
    let listed = &before[before.rfind("changes ").expect("`changes` starts the list")..];
    let listed: BTreeSet<&str> = listed.split('`').skip(1).step_by(2).collect();
    let online: BTreeSet<&str> = CONTROLLER_SETTINGS.online_keys().into_iter().collect();
    assert_eq!(listed, online);
}

/// GET_CONTROLLER_CONFIG prints the keys it always printed, in that order.
#[test]
fn the_printed_keys_are_unchanged() {
    let printed: Vec<String> = CONTROLLER_SETTINGS
        .render(&ControllerConfig::default())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let expected = [
        "controllerDLegerGroup",
        "controllerDLegerPeers",
        "controllerDLegerSelfId",
        "controllerStorePath",
        "scanNotActiveBrokerInterval",
        "scanInactiveMasterInterval",
        "enableElectUncleanMaster",
        "notifyBrokerRoleChanged",
        "electMasterMaxRetryCount",
        "jRaftElectionTimeoutMs",
        "controllerSnapshotLogs",
    ];
    assert_eq!(printed, expected);
}

//! The controller's settings from a properties file and flags: standalone
//! (`ferrocket controller`) or embedded in the name server
//! (`enableControllerInNamesrv=true` in the name server's file, whose
//! controller keys then configure it, as Java's NamesrvStartup does).

use std::collections::BTreeMap;

use ferrocket_controller::config::Peer;
use ferrocket_controller::ControllerConfig;

use crate::properties::Setting;

/// Builds a controller config from settings; `unknown` hears of each key
/// that is not a controller key.
pub fn from_settings(
    settings: &BTreeMap<String, Setting>,
    unknown: &mut dyn FnMut(&str, &Setting),
) -> Result<ControllerConfig, String> {
    let mut config = ControllerConfig::default();
    for (key, setting) in settings {
        let known = ferrocket_controller::CONTROLLER_SETTINGS.apply(&mut config, key, setting)?;
        if !known {
            unknown(key, setting);
        }
    }
    if !settings.contains_key("controllerDLegerPeers") {
        let host = settings
            .get("listenAddr")
            .map_or("127.0.0.1", |s| s.value.trim());
        let port = settings.get("listenPort").map_or_else(
            || ferrocket_controller::config::LISTEN_PORT_DEFAULT.to_string(),
            |s| s.value.trim().to_string(),
        );
        config.peers = vec![Peer {
            id: config.self_id.clone(),
            addr: format!("{host}:{port}"),
        }];
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Whether the name server's settings ask for an embedded controller.
pub fn embedded_wanted(settings: &BTreeMap<String, Setting>) -> Result<bool, String> {
    match settings.get("enableControllerInNamesrv") {
        None => Ok(false),
        Some(setting) => setting.value.trim().parse::<bool>().map_err(|e| {
            format!(
                "{}: enableControllerInNamesrv=`{}`: {e}",
                setting.origin, setting.value
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> BTreeMap<String, Setting> {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    Setting::from_flag(v.to_string(), "test".into()),
                )
            })
            .collect()
    }

    #[test]
    fn a_lone_controller_listens_on_listen_port_and_peers_win_when_given() {
        let lone = from_settings(&settings(&[("listenPort", "29876")]), &mut |_, _| {}).unwrap();
        assert_eq!(lone.peers[0].addr, "127.0.0.1:29876");
        let group = settings(&[
            (
                "controllerDLegerPeers",
                "n0-127.0.0.1:9877;n1-127.0.0.1:9878",
            ),
            ("controllerDLegerSelfId", "n1"),
            ("listenPort", "1"),
        ]);
        let mut unknown = Vec::new();
        let config = from_settings(&group, &mut |k, _| unknown.push(k.to_string())).unwrap();
        assert_eq!(config.peers.len(), 2);
        assert_eq!(unknown, vec!["listenPort".to_string()]);
        let bad = settings(&[
            ("controllerDLegerPeers", "n0-127.0.0.1:9877"),
            ("controllerDLegerSelfId", "n5"),
        ]);
        assert!(from_settings(&bad, &mut |_, _| {}).is_err());
        assert!(embedded_wanted(&settings(&[("enableControllerInNamesrv", "true")])).unwrap());
        assert!(embedded_wanted(&settings(&[("enableControllerInNamesrv", "yes")])).is_err());
    }
}

//! The settings a running name server shows and changes, as Java's name
//! server does for `mqadmin getNamesrvConfig` / `updateNamesrvConfig`:
//! GET_NAMESRV_CONFIG (319) answers every setting as `key=value` lines (the
//! body Java's `MixAll.string2Properties` reads); UPDATE_NAMESRV_CONFIG
//! (318) takes such lines. A change lasts until the name server restarts
//! (the config file is not rewritten).
//!
//! Only the keys read while running can change: whether a broker's
//! registration drops its missing topics and whether a closed connection
//! unregisters its broker. `orderMessageEnable=true` is accepted and changes
//! nothing (Ferrocket always serves a topic's order config). Java's
//! black-listed keys answer NO_PERMISSION with Java's remark; any other key
//! or a bad value answers INVALID_PARAMETER naming it, and nothing changes.

use ferrocket_protocol::body::show_text;

use ferrocket_runtime::settings::{Online, Refusal};

use crate::keys::{NAMESRV_SETTINGS, ONLINE_ORIGIN};
use crate::NamesrvConfig;

/// Keys no update may touch (Java's name server `configBlackList` default).
pub const BLACK_LIST: &[&str] = &["configBlackList", "configStorePath", "kvConfigPath"];

/// The settings read while running, as an update leaves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSettings {
    pub delete_topic_with_broker_registration: bool,
    pub unregister_on_disconnect: bool,
}

impl LiveSettings {
    pub fn of(config: &NamesrvConfig) -> Self {
        Self {
            delete_topic_with_broker_registration: config.delete_topic_with_broker_registration,
            unregister_on_disconnect: config.unregister_on_disconnect,
        }
    }
}

/// GET_NAMESRV_CONFIG: every setting in force, one `key=value` a line
/// (printed by each key's declaration), the live ones as updates left
/// them.
pub fn show(config: &NamesrvConfig, live: LiveSettings) -> String {
    let mut lines = crate::keys::render_own(&in_force(config, live));
    lines.push(("configBlackList".into(), BLACK_LIST.join(";")));
    let lines: Vec<(&str, String)> = lines.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    show_text(&lines)
}

/// `config` with the live settings as updates left them.
fn in_force(config: &NamesrvConfig, live: LiveSettings) -> NamesrvConfig {
    let mut config = config.clone();
    config.delete_topic_with_broker_registration = live.delete_topic_with_broker_registration;
    config.unregister_on_disconnect = live.unregister_on_disconnect;
    config
}

/// UPDATE_NAMESRV_CONFIG: the settings after every line of `body`, each
/// applied by its declaration (only keys declared online may change), or
/// the refusal of the first bad one (then nothing changes).
pub fn update(
    config: &NamesrvConfig,
    live: LiveSettings,
    body: &[u8],
) -> Result<LiveSettings, Refusal> {
    let to = Online {
        server: "name server",
        file: "the name server's config",
        origin: ONLINE_ORIGIN,
        black_list: BLACK_LIST,
    };
    let (updated, _) = NAMESRV_SETTINGS.update_online(&in_force(config, live), body, &to)?;
    Ok(LiveSettings::of(&updated))
}

#[cfg(test)]
mod tests {
    use ferrocket_protocol::codes::response_code as rc;

    use super::*;

    #[test]
    fn shows_every_setting_as_properties() {
        let config = NamesrvConfig::default();
        let shown = show(&config, LiveSettings::of(&config));
        assert!(shown.contains("listenPort=9876\n"), "{shown}");
        assert!(shown.contains("deleteTopicWithBrokerRegistration=false\n"));
        assert!(shown.contains("supportActingMaster=false\nnotifyMinBrokerIdChanged=false\n"));
        assert!(shown.contains("configBlackList=configBlackList;configStorePath;kvConfigPath\n"));
        assert!(shown.lines().all(|l| l.contains('=')));
    }

    #[test]
    fn live_keys_change_and_the_rest_is_refused_whole() {
        let config = NamesrvConfig::default();
        let live = LiveSettings::of(&config);
        let next = update(
            &config,
            live,
            b"# admin\ndeleteTopicWithBrokerRegistration=true\nunregisterOnDisconnect: false\norderMessageEnable=true\n",
        )
        .unwrap();
        assert!(next.delete_topic_with_broker_registration);
        assert!(!next.unregister_on_disconnect);

        let black = update(&config, live, b"kvConfigPath=/tmp/x\n").unwrap_err();
        assert_eq!(black.code, rc::NO_PERMISSION);
        for bad in [
            &b"unregisterOnDisconnect=false\nlistenPort=1"[..],
            b"noSuchKey=1",
            b"deleteTopicWithBrokerRegistration=maybe",
            b"orderMessageEnable=false",
            b"unregisterOnDisconnect",
            b"\xff=1",
        ] {
            let refused = update(&config, live, bad).unwrap_err();
            assert_eq!(refused.code, rc::INVALID_PARAMETER, "{bad:?}");
            assert!(!refused.remark.is_empty());
        }
        let named = update(&config, live, b"listenPort=1").unwrap_err();
        assert!(named.remark.contains("`listenPort`"), "{}", named.remark);
    }

    #[test]
    fn the_handler_answers_get_and_update() {
        use crate::processor::{extra_request_code as code, NamesrvHandler};
        use ferrocket_protocol::RemotingCommand;
        let handler = NamesrvHandler::new(&NamesrvConfig::default()).unwrap();
        let get = RemotingCommand::request(code::GET_NAMESRV_CONFIG);
        let before = handler.process(None, &get);
        assert_eq!(before.code, rc::SUCCESS);
        let text = String::from_utf8(before.body.to_vec()).unwrap();
        assert!(text.contains("unregisterOnDisconnect=true\n"), "{text}");

        let change = RemotingCommand::request(code::UPDATE_NAMESRV_CONFIG)
            .with_body(&b"unregisterOnDisconnect=false\n"[..]);
        assert_eq!(handler.process(None, &change).code, rc::SUCCESS);
        let after = String::from_utf8(handler.process(None, &get).body.to_vec()).unwrap();
        assert!(after.contains("unregisterOnDisconnect=false\n"), "{after}");

        let black = RemotingCommand::request(code::UPDATE_NAMESRV_CONFIG)
            .with_body(&b"configStorePath=/x"[..]);
        let refused = handler.process(None, &black);
        assert_eq!(refused.code, rc::NO_PERMISSION);
        assert_eq!(
            refused.remark.as_deref(),
            Some("Can not update config in black list.")
        );
    }
}

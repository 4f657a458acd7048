//! The settings a running controller shows and changes, as Java's
//! controller does for `mqadmin getControllerConfig` / `updateControllerConfig`:
//! GET_CONTROLLER_CONFIG (1010) answers every key as `key=value` lines;
//! UPDATE_CONTROLLER_CONFIG (1009) takes such lines. Each controller answers
//! for itself (an admin tool asks each), and a change lasts until the
//! controller restarts (the config file is not rewritten).
//!
//! Only the keys read while running can change: the election and
//! notification switches. Java's black-listed keys answer NO_PERMISSION with
//! Java's remark; a key read only at start, an unknown key or a bad value
//! answers INVALID_PARAMETER naming it, and then nothing changes.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use ferrocket_protocol::body::show_text;

use ferrocket_settings::Online;

use crate::config::ControllerConfig;
use crate::keys::CONTROLLER_SETTINGS;
use crate::rules::Reply;

/// Keys no update may touch (Java's `configBlackList` default, and
/// `rocketmqHome`, which Java adds).
pub const BLACK_LIST: &[&str] = &["configBlackList", "configStorePath", "rocketmqHome"];

/// The settings read while running.
#[derive(Debug)]
pub struct LiveSettings {
    elect_unclean_master: AtomicBool,
    notify_broker_role_changed: AtomicBool,
    elect_master_max_retry_count: AtomicU32,
}

impl LiveSettings {
    pub fn new(config: &ControllerConfig) -> Self {
        Self {
            elect_unclean_master: AtomicBool::new(config.enable_elect_unclean_master),
            notify_broker_role_changed: AtomicBool::new(config.notify_broker_role_changed),
            elect_master_max_retry_count: AtomicU32::new(config.elect_master_max_retry_count),
        }
    }

    /// `enableElectUncleanMaster`.
    pub fn elect_unclean_master(&self) -> bool {
        self.elect_unclean_master.load(Ordering::Acquire)
    }

    /// `notifyBrokerRoleChanged`.
    pub fn notify_broker_role_changed(&self) -> bool {
        self.notify_broker_role_changed.load(Ordering::Acquire)
    }

    /// `electMasterMaxRetryCount`.
    pub fn elect_master_max_retry_count(&self) -> u32 {
        self.elect_master_max_retry_count.load(Ordering::Acquire)
    }

    fn install(&self, from: &ControllerConfig) {
        let release = Ordering::Release;
        self.elect_unclean_master
            .store(from.enable_elect_unclean_master, release);
        self.notify_broker_role_changed
            .store(from.notify_broker_role_changed, release);
        self.elect_master_max_retry_count
            .store(from.elect_master_max_retry_count, release);
    }

    /// `config` with the live values in force.
    fn overlay(&self, config: &ControllerConfig) -> ControllerConfig {
        let mut now = config.clone();
        now.enable_elect_unclean_master = self.elect_unclean_master();
        now.notify_broker_role_changed = self.notify_broker_role_changed();
        now.elect_master_max_retry_count = self.elect_master_max_retry_count();
        now
    }
}

/// GET_CONTROLLER_CONFIG: every setting in force, one `key=value` a line
/// (the declared keys that are printed, in declaration order).
pub fn show(config: &ControllerConfig, live: &LiveSettings) -> Reply {
    let now = live.overlay(config);
    let rendered = CONTROLLER_SETTINGS.render(&now);
    let mut lines: Vec<(&str, String)> = rendered
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    lines.push(("configBlackList", BLACK_LIST[..2].join(";")));
    let mut reply = Reply::ok(Default::default());
    reply.body = Some(show_text(&lines).into_bytes());
    reply
}

/// UPDATE_CONTROLLER_CONFIG: applies every line, or none (only keys
/// declared online may change).
pub fn update(config: &ControllerConfig, live: &LiveSettings, body: &[u8]) -> Reply {
    let to = Online {
        server: "controller",
        file: "the controller's config",
        origin: "UPDATE_CONTROLLER_CONFIG",
        black_list: BLACK_LIST,
    };
    match CONTROLLER_SETTINGS.update_online(&live.overlay(config), body, &to) {
        Ok((next, pairs)) => {
            live.install(&next);
            tracing::info!(?pairs, "controller settings updated");
            Reply::ok(Default::default())
        }
        Err(refusal) => Reply::error(refusal.code, refusal.remark),
    }
}

#[cfg(test)]
mod tests {
    use ferrocket_protocol::codes::response_code as rc;

    use super::*;

    fn text(reply: &Reply) -> String {
        String::from_utf8(reply.body.clone().unwrap()).unwrap()
    }

    #[test]
    fn live_keys_change_and_the_rest_is_refused_whole() {
        let config = ControllerConfig::default();
        let live = LiveSettings::new(&config);
        let shown = text(&show(&config, &live));
        assert!(
            shown.contains("enableElectUncleanMaster=false\n"),
            "{shown}"
        );
        assert!(shown.contains("controllerDLegerPeers=n0-127.0.0.1:19876\n"));

        let ok = update(
            &config,
            &live,
            b"# admin\nenableElectUncleanMaster=true\nelectMasterMaxRetryCount: 5\n",
        );
        assert_eq!(ok.code, rc::SUCCESS, "{:?}", ok.remark);
        assert!(live.elect_unclean_master());
        assert_eq!(live.elect_master_max_retry_count(), 5);
        assert!(text(&show(&config, &live)).contains("electMasterMaxRetryCount=5\n"));

        let black = update(&config, &live, b"configStorePath=/tmp/x\n");
        assert_eq!(black.code, rc::NO_PERMISSION);
        for bad in [
            &b"notifyBrokerRoleChanged=false\njRaftElectionTimeoutMs=10"[..],
            b"notifyBrokerRoleChanged=false\nnoSuchKey=1",
            b"notifyBrokerRoleChanged=maybe",
            b"notifyBrokerRoleChanged",
            b"\xff=1",
        ] {
            let refused = update(&config, &live, bad);
            assert_eq!(refused.code, rc::INVALID_PARAMETER, "{bad:?}");
            assert!(refused.remark.is_some());
        }
        assert!(
            live.notify_broker_role_changed(),
            "a refused update changes nothing"
        );
    }
}

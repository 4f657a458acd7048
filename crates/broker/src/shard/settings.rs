//! Online setting changes (UPDATE_BROKER_CONFIG): shard 0 applies them to
//! its master copy under the writer's lock, writes them into the broker's
//! config file, then installs the new settings on every shard before it
//! answers, as the control-plane tables do.

use std::rc::Rc;
use std::sync::Arc;

use ferrocket_protocol::codes::response_code;
use ferrocket_runtime::shard::{ChangeError, ShardCall, Versioned};

use super::Shard;
use crate::clock::now_ms;
use crate::config::keys::BROKER_SETTINGS;
use crate::config::{apply_online, rewrite_properties, BrokerConfig, Refusal};
use crate::role::switch::RoleOrder;

/// On shard 0: apply `pairs` (key, value) online.
pub(crate) struct UpdateSettings(pub Vec<(String, String)>);

impl ShardCall<Shard> for UpdateSettings {
    type Reply = Result<(), Refusal>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.update_settings(self.0).await
    }
}

/// On every shard: settings of a newer version.
#[derive(Clone)]
struct InstallSettings {
    snapshot: Versioned<BrokerConfig>,
    changed_ms: i64,
}

impl ShardCall<Shard> for InstallSettings {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let InstallSettings {
            snapshot,
            changed_ms,
        } = self;
        shard.install_config(snapshot.version, changed_ms, &snapshot.value);
    }
}

fn system(remark: String) -> Refusal {
    Refusal {
        code: response_code::SYSTEM_ERROR,
        remark,
    }
}

impl Shard {
    async fn update_settings(&self, pairs: Vec<(String, String)>) -> Result<(), Refusal> {
        assert_eq!(self.index, 0, "only shard 0 writes the settings");
        let control = self.control().map_err(|r| system(r.remark))?;
        let Some(keys) = self.env.handles.online_keys.clone() else {
            return Err(Refusal {
                code: response_code::REQUEST_CODE_NOT_SUPPORTED,
                remark: "this broker has no key table for online changes".into(),
            });
        };
        let apply = |config: &mut BrokerConfig| {
            let updated = apply_online(&BROKER_SETTINGS, config, &pairs)?;
            let changed = updated != *config;
            *config = updated;
            Ok(((), changed))
        };
        let file = keys.file.clone();
        let written = pairs.clone();
        let persist = async move |_: Arc<BrokerConfig>| match file {
            Some(path) => write_back(path, written).await,
            None => Ok(()),
        };
        let (_, published) =
            control
                .settings
                .change(apply, persist)
                .await
                .map_err(|err| match err {
                    ChangeError::Closed => system("the broker is stopping".into()),
                    ChangeError::Failed(refusal) => refusal,
                })?;
        let Some(snapshot) = published else {
            return Ok(());
        };
        let version = snapshot.version;
        let install = InstallSettings {
            snapshot,
            changed_ms: now_ms(),
        };
        for reply in self.call_all(install).await {
            if reply.is_err() {
                tracing::warn!(version, "a shard missed a settings update");
            }
        }
        tracing::info!(version, ?pairs, "broker settings changed online");
        // Routes carry the permission and the version: register now.
        control.register_now.notify();
        Ok(())
    }
}

impl Shard {
    /// On shard 0, at a role change in place: the role's settings (not
    /// written to the config file: the controller decides them), installed
    /// on every shard before this answers.
    pub(crate) async fn install_role(&self, order: &RoleOrder) -> Result<(), String> {
        assert_eq!(self.index, 0, "only shard 0 writes the settings");
        let control = self.control().map_err(|r| r.remark)?;
        let apply = |config: &mut BrokerConfig| {
            config.broker_id = order.broker_id;
            config.replication.broker_role = order.role;
            config.replication.ha_master_address = order.master_ha_addr.clone();
            config.controller_mode.master_epoch = order.master_epoch;
            config.controller_mode.state_version = order.state_version;
            Ok::<_, String>(((), true))
        };
        let persist = async |_: Arc<BrokerConfig>| Ok(());
        let (_, published) =
            control
                .settings
                .change(apply, persist)
                .await
                .map_err(|err| match err {
                    ChangeError::Closed => "the broker is stopping".to_string(),
                    ChangeError::Failed(why) => why,
                })?;
        let Some(snapshot) = published else {
            return Ok(());
        };
        let install = InstallSettings {
            snapshot,
            changed_ms: now_ms(),
        };
        for reply in self.call_all(install).await {
            reply.map_err(|r| format!("a shard missed the role change: {}", r.remark))?;
        }
        Ok(())
    }
}

/// Sets `pairs` in the config file (a `.bak` keeps the previous text), on
/// the blocking pool.
async fn write_back(path: std::path::PathBuf, pairs: Vec<(String, String)>) -> Result<(), Refusal> {
    let shown = path.display().to_string();
    let written = glommio::executor()
        .spawn_blocking(move || -> Result<(), String> {
            // A symlinked broker.conf: write the file it points at, and
            // keep its permissions (it may hold credentials).
            let path = std::fs::canonicalize(&path).map_err(|e| e.to_string())?;
            let permissions = std::fs::metadata(&path)
                .map_err(|e| e.to_string())?
                .permissions();
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            let updated = rewrite_properties(&text, &pairs);
            ferrocket_store::write_atomic(&path, updated.as_bytes(), true)
                .map_err(|e| e.to_string())?;
            std::fs::set_permissions(&path, permissions).map_err(|e| e.to_string())
        })
        .await;
    written.map_err(|why| {
        tracing::error!(file = %shown, %why, "writing the online change to the config file failed");
        system(format!(
            "writing the change to {shown} failed ({why}); the change was not made"
        ))
    })
}

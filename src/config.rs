//! Server configuration from RocketMQ-style properties files and flags.
//!
//! Every setting has its RocketMQ key name (`listenPort`, `namesrvAddr`, ...).
//! A flag is sugar for one key, and `--set key=value` sets any key; the file
//! is read first and flags override it. Unknown keys are warned about; bad
//! values are rejected with the key, the value and the line named.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::properties::{self, Setting};

/// Flags shared by both servers.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// RocketMQ-style properties file (`key=value` lines).
    #[arg(short = 'c', long = "config")]
    pub config_file: Option<PathBuf>,
    /// Address to listen on (Ferrocket key `listenAddr`).
    #[arg(long)]
    pub listen_addr: Option<String>,
    /// Port to listen on (`listenPort`).
    #[arg(long)]
    pub listen_port: Option<u16>,
    /// Any setting by its RocketMQ key name, repeatable (`--set KEY=VALUE`;
    /// the README's settings tables list the keys).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct NamesrvArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Drop brokers silent for this long (`brokerExpiryMs`).
    #[arg(long)]
    pub broker_expiry_ms: Option<u64>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BrokerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Name servers, `host:port;host:port` (`namesrvAddr`).
    #[arg(short = 'n', long)]
    pub namesrv_addr: Option<String>,
    /// Store directory (`storePathRootDir`).
    #[arg(long)]
    pub store_path_root_dir: Option<String>,
    /// `brokerName`.
    #[arg(long)]
    pub broker_name: Option<String>,
    /// `brokerClusterName`.
    #[arg(long)]
    pub broker_cluster_name: Option<String>,
    /// Address announced to clients (`brokerIP1`).
    #[arg(long = "broker-ip1")]
    pub broker_ip1: Option<String>,
    /// Number of shards, one pinned executor each (`shardCount`).
    #[arg(long)]
    pub shards: Option<usize>,
    /// ASYNC_FLUSH or SYNC_FLUSH (`flushDiskType`).
    #[arg(long)]
    pub flush_disk_type: Option<String>,
    /// `autoCreateTopicEnable`.
    #[arg(long)]
    pub auto_create_topic_enable: Option<bool>,
    /// CommitLog segment size in bytes (`mappedFileSizeCommitLog`).
    #[arg(long)]
    pub mapped_file_size_commit_log: Option<u64>,
    /// Re-registration period with the name servers (`registerBrokerIntervalMs`).
    #[arg(long)]
    pub register_interval_ms: Option<u64>,
}

/// All settings in force: the file's, then the flags' on top.
/// `ferrocket controller`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The controller's settings for `ferrocket controller`. Without
/// `controllerDLegerPeers` it is a group of one on `listenAddr:listenPort`
/// (default 127.0.0.1:19876).
pub fn controller_config(
    args: &ControllerArgs,
) -> Result<ferrocket_controller::ControllerConfig, String> {
    let settings = collect(&args.common, Vec::new())?;
    let config = crate::config_controller::from_settings(&settings, &mut |key, setting| {
        if !matches!(key, "listenAddr" | "listenPort") {
            warn_unknown(
                key,
                setting,
                &ferrocket_controller::CONTROLLER_SETTINGS.keys(),
            );
        }
    })?;
    Ok(config)
}

/// A flag that sets one key: (key, flag as typed, value if given).
type KeyFlag<'a> = (&'a str, &'a str, Option<String>);

/// All settings in force: the file's, then the flags' on top. Each keeps
/// where it came from, for error messages.
pub(crate) fn collect(
    common: &CommonArgs,
    flags: Vec<KeyFlag<'_>>,
) -> Result<BTreeMap<String, Setting>, String> {
    let mut settings = match &common.config_file {
        Some(path) => properties::load(path)?,
        None => BTreeMap::new(),
    };
    let mut put = |key: &str, value: String, origin: String| {
        settings.insert(key.to_string(), Setting::from_flag(value, origin));
    };
    let common_flags = [
        ("listenAddr", "--listen-addr", common.listen_addr.clone()),
        (
            "listenPort",
            "--listen-port",
            common.listen_port.map(|p| p.to_string()),
        ),
    ];
    for (key, flag, value) in common_flags.into_iter().chain(flags) {
        if let Some(value) = value {
            put(key, value, flag.to_string());
        }
    }
    for entry in &common.settings {
        let (key, value) = entry
            .split_once('=')
            .ok_or_else(|| format!("--set expects KEY=VALUE, found `{entry}`"))?;
        put(
            key.trim(),
            value.trim().to_string(),
            format!("--set {entry}"),
        );
    }
    Ok(settings)
}

/// An unknown key is ignored, as Java ignores it, with a warning that says
/// where it was and which known key it most resembles.
pub(crate) fn warn_unknown(key: &str, setting: &Setting, known: &[&str]) {
    match ferrocket_runtime::suggest::closest(key, known) {
        Some(meant) => tracing::warn!(
            "{}: ignoring unknown setting `{key}`: did you mean `{meant}`?",
            setting.origin
        ),
        None => tracing::warn!("{}: ignoring unknown setting `{key}`", setting.origin),
    }
}

/// The name server's settings, and the embedded controller's when
/// `enableControllerInNamesrv=true`.
pub fn namesrv_config(
    args: &NamesrvArgs,
) -> Result<
    (
        ferrocket_namesrv::NamesrvConfig,
        Option<ferrocket_controller::ControllerConfig>,
    ),
    String,
> {
    let settings = collect(
        &args.common,
        vec![(
            "brokerExpiryMs",
            "--broker-expiry-ms",
            args.broker_expiry_ms.map(|v| v.to_string()),
        )],
    )?;
    // RocketMQ's default: `~/namesrv/kvConfig.json`.
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    let mut config = ferrocket_namesrv::NamesrvConfig {
        kv_config_path: Some(ferrocket_namesrv::kv_config_path_under(&home)),
        ..Default::default()
    };
    let embedded = crate::config_controller::embedded_wanted(&settings)?;
    let controller_keys = &ferrocket_controller::CONTROLLER_SETTINGS;
    for (key, setting) in &settings {
        let ours = ferrocket_namesrv::NAMESRV_SETTINGS.apply(&mut config, key, setting)?;
        let controller_key = controller_keys.find(key).is_some();
        if !(ours || controller_key && embedded) {
            warn_unknown(key, setting, &ferrocket_namesrv::NAMESRV_SETTINGS.keys());
        }
    }
    let controller = match embedded {
        // The embedded controller listens on its own peer address, never on
        // the name server's port.
        true => {
            let mut controller_settings = settings.clone();
            controller_settings.remove("listenPort");
            controller_settings.remove("listenAddr");
            Some(crate::config_controller::from_settings(
                &controller_settings,
                &mut |_, _| {},
            )?)
        }
        false => None,
    };
    Ok((config, controller))
}

/// The broker's settings, and its gRPC endpoint's limits (`grpc*` keys,
/// used with `enableProxy=true`).
pub fn broker_config(
    args: &BrokerArgs,
) -> Result<(ferrocket_broker::BrokerConfig, ferrocket_grpc::GrpcLimits), String> {
    let flags = vec![
        ("namesrvAddr", "--namesrv-addr", args.namesrv_addr.clone()),
        (
            "storePathRootDir",
            "--store-path-root-dir",
            args.store_path_root_dir.clone(),
        ),
        ("brokerName", "--broker-name", args.broker_name.clone()),
        (
            "brokerClusterName",
            "--broker-cluster-name",
            args.broker_cluster_name.clone(),
        ),
        ("brokerIP1", "--broker-ip1", args.broker_ip1.clone()),
        ("shardCount", "--shards", args.shards.map(|v| v.to_string())),
        (
            "flushDiskType",
            "--flush-disk-type",
            args.flush_disk_type.clone(),
        ),
        (
            "autoCreateTopicEnable",
            "--auto-create-topic-enable",
            args.auto_create_topic_enable.map(|v| v.to_string()),
        ),
        (
            "mappedFileSizeCommitLog",
            "--mapped-file-size-commit-log",
            args.mapped_file_size_commit_log.map(|v| v.to_string()),
        ),
        (
            "registerBrokerIntervalMs",
            "--register-interval-ms",
            args.register_interval_ms.map(|v| v.to_string()),
        ),
    ];
    let settings = collect(&args.common, flags)?;
    let mut config = ferrocket_broker::BrokerConfig::default();
    let mut grpc = ferrocket_grpc::GrpcLimits::default();
    for (key, setting) in &settings {
        let grpc_key = ferrocket_grpc::GRPC_SETTINGS.apply(&mut grpc, key, setting)?;
        if !grpc_key && !ferrocket_broker::BROKER_SETTINGS.apply(&mut config, key, setting)? {
            warn_unknown(key, setting, &broker_keys());
        }
    }
    Ok((config, grpc))
}

/// Every key the broker takes: its declarations and its gRPC endpoint's
/// limits (the grpc crate's keys).
fn broker_keys() -> Vec<&'static str> {
    let declared = ferrocket_broker::BROKER_SETTINGS.keys();
    let grpc = ferrocket_grpc::GRPC_SETTINGS.keys();
    declared.into_iter().chain(grpc).collect()
}

#[cfg(test)]
mod tests {
    use super::broker_keys;
    use ferrocket_runtime::suggest::closest;

    /// The broker's "did you mean" knows the gRPC keys too, and no key
    /// is both the broker's and the gRPC endpoint's.
    #[test]
    fn broker_keys_include_the_grpc_keys_once() {
        let keys = broker_keys();
        assert_eq!(closest("flushDiskTyp", &keys), Some("flushDiskType"));
        for key in ferrocket_grpc::GRPC_SETTINGS.keys() {
            assert_eq!(keys.iter().filter(|k| **k == key).count(), 1, "{key}");
        }
    }
}

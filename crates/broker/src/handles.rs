//! What whoever runs the broker hands it beside its [`BrokerConfig`]:
//! live handles made by the runner, not settings (the config holds only
//! what broker.conf and `--set` say).
//!
//! [`BrokerConfig`]: crate::BrokerConfig

use ferrocket_runtime::server::Handoff;

use crate::config::ConfigKeys;
use crate::local_port::LocalPort;

/// The runner's handles; the default: none of them (GET/UPDATE_BROKER_CONFIG
/// answer NOT_SUPPORTED, the port is Remoting only, no in-process calls).
#[derive(Clone, Default)]
pub struct BrokerHandles {
    /// GET/UPDATE_BROKER_CONFIG on, and the file online changes are
    /// written to (the keys are `BROKER_SETTINGS`); `None`: both answer
    /// NOT_SUPPORTED.
    pub online_keys: Option<ConfigKeys>,
    /// Where connections that open with HTTP/2 go: the in-broker gRPC
    /// endpoint (`enableProxy`). `None`: the port is Remoting only.
    pub grpc_handoff: Option<Handoff>,
    /// The in-process door the in-broker endpoint calls in `proxyMode`
    /// `local`. `None`: no in-process calls.
    pub local_port: Option<LocalPort>,
}

//! How a broker dials the servers it reports to as itself (the
//! controllers in controller mode): signed with its
//! `innerClientAuthenticationCredentials`, over TLS when `useTLS` (or
//! `tls.enable`, or an enforcing mode) says so, as its name server
//! registration does.

use ferrocket_broker::BrokerConfig;
use ferrocket_client::{ConnectionConfig, Credentials};

pub(crate) fn connections(config: &BrokerConfig) -> Result<ConnectionConfig, String> {
    let tls = ferrocket_broker::outbound_tls(config).map_err(|e| e.to_string())?;
    let credentials = config.inner_credentials.clone().map(Credentials::from);
    Ok(ConnectionConfig {
        credentials,
        tls,
        ..ConnectionConfig::default()
    })
}

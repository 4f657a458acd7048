//! Every key each server understands, for "did you mean ...?" on an
//! unknown one. A test keeps the name server's list equal to what
//! `config_keys` accepts; the broker's is its declarations'.

/// The Remoting server's limits, keys of the name server.
pub const SERVER_LIMIT_KEYS: &[&str] = &[
    "serverChannelMaxIdleTimeSeconds",
    "channelMaxIdleTimeSeconds",
    "idleTimeoutMs",
    "partialFrameTimeoutMs",
    "writeStallTimeoutMs",
    "connectionInflightBytesMax",
    "connectionWriteQueueBytesMax",
    "shardHeldBytesMax",
    "serverConnectionsMax",
];

/// The name server's own keys (and [`SERVER_LIMIT_KEYS`]).
pub const NAMESRV_KEYS: &[&str] = &[
    "enableControllerInNamesrv",
    "listenAddr",
    "listenPort",
    "brokerExpiryMs",
    "scanNotActiveBrokerInterval",
    "scanIntervalMs",
    "unregisterOnDisconnect",
    "kvConfigEntriesMax",
    "kvConfigBytesMax",
    "deleteTopicWithBrokerRegistration",
    "supportActingMaster",
    "notifyMinBrokerIdChanged",
    "kvConfigPath",
    "aclEnable",
    "aclAdminSignatureWindowMs",
    "rocketmqHome",
    "configStorePath",
    "orderMessageEnable",
    "metricsExporterType",
    "metricsPromExporterHost",
    "metricsPromExporterPort",
    "metricsLabel",
    "metricsInDelta",
];

/// Every key the broker takes (declared in its crate).
pub fn broker_keys() -> Vec<&'static str> {
    let declared = ferrocket_broker::BROKER_SETTINGS.keys();
    let grpc = ferrocket_grpc::GrpcLimits::KEYS.iter().copied();
    declared.into_iter().chain(grpc).collect()
}

/// Every key the name server takes.
pub fn namesrv_keys() -> Vec<&'static str> {
    NAMESRV_KEYS
        .iter()
        .chain(SERVER_LIMIT_KEYS)
        .chain(&ferrocket_tls::KEYS)
        .copied()
        .collect()
}

pub use ferrocket_runtime::suggest::closest;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_keys::apply_namesrv;
    use crate::properties::Setting;

    /// Every quoted word followed by `=>` or `|`, or after `|`, in the
    /// key matchers' source: the keys, and a few values (`auto`).
    fn quoted_in_matchers() -> Vec<String> {
        let source = include_str!("config_keys.rs");
        let source = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        let mut words = Vec::new();
        for (i, part) in source.split('"').enumerate() {
            let is_word = i % 2 == 1 && part.chars().all(|c| c.is_ascii_alphanumeric());
            if is_word && !part.is_empty() {
                words.push(part.to_string());
            }
        }
        words
    }

    #[test]
    fn the_lists_are_exactly_the_keys_the_servers_accept() {
        let probe = Setting::from_flag("\u{1}".into(), "probe".into());
        let broker_knows = |key: &str| {
            let mut config = ferrocket_broker::BrokerConfig::default();
            // The gRPC endpoint's limits are taken beside the broker's config.
            let grpc = ferrocket_grpc::GrpcLimits::default().set(key, &probe.value);
            let broker = ferrocket_broker::BROKER_SETTINGS.apply(&mut config, key, &probe);
            !matches!(broker, Ok(false)) || !matches!(grpc, Ok(false))
        };
        let namesrv_knows = |key: &str| {
            let mut config = ferrocket_namesrv::NamesrvConfig::default();
            !matches!(apply_namesrv(&mut config, key, &probe), Ok(false))
        };
        let (broker, namesrv) = (broker_keys(), namesrv_keys());
        for key in &broker {
            assert!(
                broker_knows(key),
                "{key} is listed but the broker refuses it"
            );
        }
        for key in &namesrv {
            assert!(
                namesrv_knows(key),
                "{key} is listed but the namesrv refuses it"
            );
        }
        for word in quoted_in_matchers() {
            if broker_knows(&word) {
                assert!(broker.contains(&word.as_str()), "{word} missing");
            }
            if namesrv_knows(&word) {
                assert!(namesrv.contains(&word.as_str()), "{word} missing");
            }
        }
    }

    #[test]
    fn misspellings_get_the_key_meant() {
        assert_eq!(
            closest("flushDiskTyp", &broker_keys()),
            Some("flushDiskType")
        );
        assert_eq!(
            closest("flushdisktype", &broker_keys()),
            Some("flushDiskType")
        );
        assert_eq!(closest("namesrvAdr", &broker_keys()), Some("namesrvAddr"));
        assert_eq!(closest("listenport", &namesrv_keys()), Some("listenPort"));
        assert_eq!(closest("someUnknownKeyXyz", &broker_keys()), None);
        assert_eq!(closest("x", &broker_keys()), None);
    }
}

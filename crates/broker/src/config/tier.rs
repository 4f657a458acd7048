//! Tiered storage's settings, collected raw (each key is declared in
//! `config::keys::tier`) and checked together at start.

use std::path::PathBuf;

use ferrocket_store::tier::{S3Settings, TierBackend, TierConfig};

/// RocketMQ's POSIX provider class: a local (mounted) directory.
const POSIX_PROVIDER: &str = "org.apache.rocketmq.tieredstore.provider.PosixFileSegment";

/// The raw tier settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierKeys {
    /// `tieredStorageLevel`: DISABLE (0) or NOT_IN_DISK (1).
    pub enabled: bool,
    pub provider: String,
    pub file_path: String,
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub local_max_bytes: Option<u64>,
    pub local_reserved_ms: Option<u64>,
    /// `tieredStoreFileReservedTime` (hours) or `tieredStoreFileReservedTimeMs`.
    pub remote_reserved_ms: Option<u64>,
    pub upload_interval_ms: Option<u64>,
    pub read_ahead_bytes: Option<usize>,
    pub read_cache_bytes: Option<usize>,
    /// `tieredStoreEpochBase` (controller epochs started again).
    pub epoch_base: Option<i32>,
}

/// The replica set's sub-prefix in object storage: `cluster/brokerName`
/// (every replica of a set shares it; two sets sharing a bucket and
/// `tieredStoreFilePath` never touch each other's objects).
pub fn owner(cluster: &str, broker: &str) -> String {
    format!("{}/{}", cluster.trim(), broker.trim())
}

impl TierKeys {
    /// The store's tier settings (`None`: off), or why they cannot work.
    pub fn store_config(&self) -> Result<Option<TierConfig>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let backend = match self.provider.as_str() {
            "posix" | POSIX_PROVIDER => {
                if self.file_path.is_empty() {
                    return Err("tieredBackendServiceProvider=posix needs tieredStoreFilePath (a directory)".into());
                }
                TierBackend::Posix {
                    path: PathBuf::from(&self.file_path),
                }
            }
            "s3" => {
                if self.bucket.is_empty() {
                    return Err("tieredBackendServiceProvider=s3 needs objectStoreBucket".into());
                }
                TierBackend::S3(S3Settings {
                    endpoint: self.endpoint.clone(),
                    bucket: self.bucket.clone(),
                    region: if self.region.is_empty() {
                        "us-east-1".into()
                    } else {
                        self.region.clone()
                    },
                    access_key: self.access_key.clone(),
                    secret_key: self.secret_key.clone(),
                    prefix: self.file_path.clone(),
                })
            }
            other => {
                return Err(format!(
                    "tieredBackendServiceProvider={other}: expected posix ({POSIX_PROVIDER}) or s3"
                ))
            }
        };
        let mut config = TierConfig::new(backend);
        config.local_max_bytes = self.local_max_bytes.unwrap_or(config.local_max_bytes);
        config.local_reserved_ms = self.local_reserved_ms.unwrap_or(config.local_reserved_ms);
        config.remote_reserved_ms = self.remote_reserved_ms.unwrap_or(config.remote_reserved_ms);
        config.upload_interval_ms = self
            .upload_interval_ms
            .unwrap_or(config.upload_interval_ms)
            .max(10);
        config.read_ahead_bytes = self
            .read_ahead_bytes
            .unwrap_or(config.read_ahead_bytes)
            .max(4096);
        config.read_cache_bytes = self.read_cache_bytes.unwrap_or(config.read_cache_bytes);
        config.epoch_base = self.epoch_base.unwrap_or(0);
        if config.epoch_base < 0 {
            return Err(format!(
                "tieredStoreEpochBase {} must not be negative",
                config.epoch_base
            ));
        }
        if config.read_cache_bytes < 2 * config.read_ahead_bytes {
            return Err(format!(
                "tieredStoreReadCacheBytes {} must hold two read-ahead chunks of {} bytes",
                config.read_cache_bytes, config.read_ahead_bytes
            ));
        }
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `key` through the broker's declarations.
    struct Keys(crate::config::BrokerConfig);

    impl Keys {
        fn apply(&mut self, key: &str, value: &str) -> Result<bool, String> {
            let setting = ferrocket_runtime::settings::Setting::from_flag(value.into(), "t".into());
            crate::config::keys::BROKER_SETTINGS.apply(&mut self.0, key, &setting)
        }

        fn store_config(&self) -> Result<Option<TierConfig>, String> {
            self.0.tier.store_config()
        }
    }

    #[test]
    fn keys_combine_into_a_backend() {
        let mut keys = Keys(Default::default());
        assert_eq!(keys.store_config(), Ok(None));
        assert!(keys.apply("tieredStorageLevel", "NOT_IN_DISK").unwrap());
        assert!(keys.apply("tieredStorageLevel", "FORCE").is_err());
        assert!(keys.store_config().is_err());
        keys.apply("tieredBackendServiceProvider", POSIX_PROVIDER)
            .unwrap();
        assert!(keys.store_config().is_err());
        keys.apply("tieredStoreFilePath", "/tmp/x").unwrap();
        let config = keys.store_config().unwrap().unwrap();
        assert_eq!(
            config.backend,
            TierBackend::Posix {
                path: "/tmp/x".into()
            }
        );
        keys.apply("tieredBackendServiceProvider", "s3").unwrap();
        assert!(keys.store_config().is_err());
        keys.apply("objectStoreBucket", "b").unwrap();
        keys.apply("tieredStoreLocalMaxBytes", "1000").unwrap();
        let config = keys.store_config().unwrap().unwrap();
        assert_eq!(config.local_max_bytes, 1000);
        assert_eq!(config.remote_reserved_ms, 72 * 3_600_000);
        keys.apply("tieredStoreFileReservedTime", "2").unwrap();
        assert_eq!(
            keys.store_config().unwrap().unwrap().remote_reserved_ms,
            7_200_000
        );
        keys.apply("tieredStoreFileReservedTimeMs", "1500").unwrap();
        assert_eq!(
            keys.store_config().unwrap().unwrap().remote_reserved_ms,
            1500
        );
        assert!(matches!(config.backend, TierBackend::S3(ref s3) if s3.region == "us-east-1"));
        assert!(keys.apply("tieredStoreReadAheadBytes", "x").is_err());
        assert!(!keys.apply("other", "1").unwrap());
        assert_eq!(keys.store_config().unwrap().unwrap().epoch_base, 0);
        keys.apply("tieredStoreEpochBase", "7").unwrap();
        assert_eq!(keys.store_config().unwrap().unwrap().epoch_base, 7);
        keys.apply("tieredStoreEpochBase", "-1").unwrap();
        assert!(keys.store_config().is_err());
    }
}

//! `storePathCommitLog` and `storePathConsumeQueue`: Java lets them point
//! anywhere; the store keeps both under `storePathRootDir`, so a setting
//! naming another place is refused (a Java broker.conf pointing elsewhere
//! must not start the broker on an empty CommitLog beside the real one).

use super::BrokerConfig;

/// Both paths, when set, must be where the store keeps them.
pub(super) fn check(config: &BrokerConfig) -> Result<(), String> {
    let given = [
        (
            "storePathCommitLog",
            &config.store_path_commit_log,
            "commitlog",
        ),
        (
            "storePathConsumeQueue",
            &config.store_path_consume_queue,
            "consumequeue",
        ),
    ];
    for (key, path, dir) in given {
        let expected = config.store_path_root_dir.join(dir);
        if let Some(path) = path.as_ref().filter(|path| **path != expected) {
            return Err(format!(
                "{key}={} is not {}: Ferrocket keeps it under storePathRootDir \
                 (move the directory there, or set storePathRootDir)",
                path.display(),
                expected.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitlog_and_consumequeue_paths_only_under_the_root() {
        let mut config = BrokerConfig {
            store_path_root_dir: "/data/store".into(),
            store_path_commit_log: Some("/data/store/commitlog/".into()),
            store_path_consume_queue: Some("/data/store/consumequeue".into()),
            ..BrokerConfig::default()
        };
        assert!(config.validate().is_ok());
        config.store_path_commit_log = Some("/elsewhere/commitlog".into());
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains("storePathCommitLog"), "{error}");
    }
}

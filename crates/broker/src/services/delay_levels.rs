//! `messageDelayLevel` ("1s 5s 10s 30s 1m ... 2h") and delayOffset.json.

use std::collections::BTreeMap;

use ferrocket_protocol::body::DataVersion;
use ferrocket_store::ConfigDir;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

/// File holding each level's delivery progress under `config/`.
pub const DELAY_OFFSET_FILE: &str = "delayOffset.json";
/// Most delay levels accepted.
pub const DELAY_LEVELS_MAX: usize = 64;

/// Level (1-based) -> next SCHEDULE_TOPIC_XXXX queue offset to deliver.
pub type DelayOffsets = BTreeMap<i32, i64>;

/// delayOffset.json and the GET_ALL_DELAY_OFFSET body
/// (`DelayOffsetSerializeWrapper`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct DelayOffsetFile {
    pub offset_table: DelayOffsets,
    pub data_version: DataVersion,
}

/// The delay of each level, in milliseconds (level 1 first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayLevels {
    delays_ms: Vec<i64>,
}

impl DelayLevels {
    /// Parses Java's format: space-separated numbers with a unit of `s`,
    /// `m`, `h` or `d`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut delays_ms = Vec::new();
        for part in text.split_whitespace() {
            let unit_at = part
                .char_indices()
                .last()
                .map(|(i, _)| i)
                .ok_or_else(|| "empty level".to_string())?;
            let (number, unit) = part.split_at(unit_at);
            let unit_ms: i64 = match unit {
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => return Err(format!("level `{part}` has no unit of s, m, h or d")),
            };
            let count: i64 = number
                .parse()
                .map_err(|_| format!("level `{part}` is not a number and a unit"))?;
            if count < 0 {
                return Err(format!("level `{part}` is negative"));
            }
            let delay = count
                .checked_mul(unit_ms)
                .ok_or_else(|| format!("level `{part}` is too long"))?;
            delays_ms.push(delay);
        }
        if delays_ms.is_empty() {
            return Err("no delay level given".into());
        }
        if delays_ms.len() > DELAY_LEVELS_MAX {
            return Err(format!(
                "{} levels given, at most {DELAY_LEVELS_MAX} are allowed",
                delays_ms.len()
            ));
        }
        Ok(Self { delays_ms })
    }

    /// The highest level.
    pub fn max_level(&self) -> i32 {
        self.delays_ms.len() as i32
    }

    /// The delay of `level` (1-based).
    pub fn delay_ms(&self, level: i32) -> Option<i64> {
        let index = usize::try_from(level).ok()?.checked_sub(1)?;
        self.delays_ms.get(index).copied()
    }

    /// Every level, 1..=max.
    pub fn levels(&self) -> impl Iterator<Item = i32> {
        1..=self.max_level()
    }
}

/// Reads delayOffset.json (ours, or a Java broker's); none means none
/// delivered yet.
pub fn load_offsets(dir: &ConfigDir) -> Result<DelayOffsets, BrokerError> {
    let Some(bytes) = dir.read_bytes(DELAY_OFFSET_FILE)? else {
        return Ok(DelayOffsets::new());
    };
    let text = String::from_utf8_lossy(&bytes);
    let file: DelayOffsetFile = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&crate::services::fastjson::quote_integer_keys(&text)))
        .map_err(|err| {
            BrokerError::Config(format!(
                "{} is not a delay offset table: {err}",
                dir.path(DELAY_OFFSET_FILE).display()
            ))
        })?;
    Ok(file
        .offset_table
        .into_iter()
        .filter(|(level, offset)| *level > 0 && *offset >= 0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_levels_parse() {
        let levels =
            DelayLevels::parse("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
                .unwrap();
        assert_eq!(levels.max_level(), 18);
        assert_eq!(levels.delay_ms(1), Some(1_000));
        assert_eq!(levels.delay_ms(5), Some(60_000));
        assert_eq!(levels.delay_ms(18), Some(7_200_000));
        assert_eq!(levels.delay_ms(0), None);
        assert_eq!(levels.delay_ms(19), None);
        assert_eq!(
            DelayLevels::parse(" 2d  ").unwrap().delay_ms(1),
            Some(172_800_000)
        );
        for bad in ["", "1", "1x", "s", "-1s", "1.5s", "99999999999999999d"] {
            assert!(DelayLevels::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn offset_files_of_both_brokers_load() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::open(dir.path()).unwrap();
        assert!(load_offsets(&config).unwrap().is_empty());
        config
            .write_bytes(
                DELAY_OFFSET_FILE,
                br#"{"offsetTable":{1:5,3:7},"dataVersion":{"counter":2}}"#,
            )
            .unwrap();
        let loaded = load_offsets(&config).unwrap();
        assert_eq!(loaded, DelayOffsets::from([(1, 5), (3, 7)]));
        let ours = DelayOffsetFile {
            offset_table: loaded.clone(),
            data_version: DataVersion::default(),
        };
        config.write_json(DELAY_OFFSET_FILE, &ours).unwrap();
        assert_eq!(load_offsets(&config).unwrap(), loaded);
        config.write_bytes(DELAY_OFFSET_FILE, b"nonsense").unwrap();
        assert!(load_offsets(&config).is_err());
    }
}

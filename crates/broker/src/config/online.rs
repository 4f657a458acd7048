//! Changing broker settings while it runs (UPDATE_BROKER_CONFIG, 25) and
//! reading them (GET_BROKER_CONFIG, 26), `AdminBrokerProcessor`'s pair.
//!
//! Every key is declared once, in `BROKER_SETTINGS`, with whether it is
//! read at each use (so may change online: `online` there; the rest are
//! read at start, or fixed into state made at start — TBW102's queue
//! count caps `defaultTopicQueueNums`, each half message keeps the
//! `transactionTimeOut` it arrived under — and are refused online). A key
//! is parsed by the same declaration from broker.conf or from mqadmin.

use std::path::PathBuf;

use ferrocket_protocol::body::parse_properties;

use super::BrokerConfig;
use ferrocket_runtime::settings::{Online, Table};

pub use ferrocket_runtime::settings::Refusal;

/// Where an online change's errors say it came from.
const ONLINE_ORIGIN: &str = "UPDATE_BROKER_CONFIG";

/// Keys never changed online (Java's `configBlackList` default and the
/// two it always adds).
pub const BLACK_LIST: &[&str] = &["brokerConfigPath", "rocketmqHome", "configBlackList"];

/// Where online changes are written back: present, the broker answers
/// GET/UPDATE_BROKER_CONFIG from `BROKER_SETTINGS`; absent, both answer
/// NOT_SUPPORTED.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigKeys {
    /// The broker.conf the broker was started with (`-c`): rewritten with
    /// each online change, so a restart keeps it (Java rewrites it too).
    pub file: Option<PathBuf>,
}

/// Applies `pairs` to a copy of `config` by `table`'s declarations (the
/// broker's `BROKER_SETTINGS`), all or nothing: a
/// black-listed key is refused as Java refuses it (NO_PERMISSION), any
/// other key that cannot change online, an unknown key or a bad value with
/// INVALID_PARAMETER and words that say which and why.
pub fn apply_online(
    table: &Table<BrokerConfig>,
    config: &BrokerConfig,
    pairs: &[(String, String)],
) -> Result<BrokerConfig, Refusal> {
    // broker.conf would read a trailing `\` as joining the next line.
    if let Some((key, _)) = pairs.iter().find(|(_, value)| value.ends_with('\\')) {
        return Err(Refusal::invalid(format!(
            "the value of `{key}` ends with `\\`, which broker.conf reads as a line join"
        )));
    }
    let to = Online {
        server: "broker",
        file: "broker.conf",
        origin: ONLINE_ORIGIN,
        black_list: BLACK_LIST,
    };
    let updated = table.apply_online(config, pairs, &to)?;
    updated
        .validate()
        .map_err(|e| Refusal::invalid(e.to_string()))?;
    Ok(updated)
}

/// `text` (a broker.conf) with each of `pairs` set: the line of the key
/// replaced in place (comments and order kept), new keys appended.
pub fn rewrite_properties(text: &str, pairs: &[(String, String)]) -> String {
    let mut done = vec![false; pairs.len()];
    let mut out = String::with_capacity(text.len() + 64);
    // Inside the continuation lines of a replaced key's old value.
    let mut skipping = false;
    for line in text.lines() {
        if skipping {
            skipping = line.ends_with('\\');
            continue;
        }
        let own = parse_properties(line).pop();
        let found = own.and_then(|(key, _)| pairs.iter().position(|(k, _)| *k == key));
        match found {
            Some(i) => {
                out.push_str(&format!("{}={}", pairs[i].0, pairs[i].1));
                done[i] = true;
                skipping = line.ends_with('\\');
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    for (pair, done) in pairs.iter().zip(done) {
        if !done {
            out.push_str(&format!("{}={}\n", pair.0, pair.1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_replaced_value_takes_its_continuation_lines_with_it() {
        let text = "regionId=a\\\n  b\\\n  c\ntraceOn=true\n";
        let out = rewrite_properties(text, &pairs(&[("regionId", "r2")]));
        assert_eq!(out, "regionId=r2\ntraceOn=true\n");
    }

    #[test]
    fn a_rewrite_keeps_comments_and_appends_new_keys() {
        let text = "# the broker\nbrokerName=broker-a\nautoCreateTopicEnable = true\n";
        let out = rewrite_properties(
            text,
            &pairs(&[("autoCreateTopicEnable", "false"), ("traceOn", "false")]),
        );
        assert_eq!(
            out,
            "# the broker\nbrokerName=broker-a\nautoCreateTopicEnable=false\ntraceOn=false\n"
        );
    }
}

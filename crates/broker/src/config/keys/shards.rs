//! The broker's shards settings, each declared once (see `keys`).

use super::*;

pub(super) static SHARDS: &[Decl<BrokerConfig>] = &[
    decl!(
        "shardCount",
        "the host's: 1 on 1-2 cores, else one per core but the first",
        start,
        "shards (pinned executors); Ferrocket key",
        |c, k, s| c.shard_count = parse_value(k, s)?,
        |c| c.shard_count.to_string(),
    ),
    decl!(
        "shardCores",
        "the host's (as above)",
        start,
        "comma list of cores for the shards; Ferrocket key",
        |c, k, s| c.shard_cores = core_list(k, s)?,
        |c| c
            .shard_cores
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
    ),
    decl!(
        "pinShards",
        "`true`",
        start,
        "pin each shard's thread to its core",
        |c, k, s| c.pin_shards = parse_bool(k, s)?,
        |c| yes(c.pin_shards),
    ),
    decl!(
        "appenderInShard",
        "`auto`",
        start,
        "run the CommitLog appender on the shard's executor: true, false or auto",
        |c, k, s| c.appender_in_shard = match s.value.as_str() {
            "" | "auto" => None,
            _ => Some(parse_bool(k, s)?),
        },
    ),
    decl!(
        "appenderCore",
        "unset (unpinned)",
        start,
        "core for the CommitLog appender thread; unset: unpinned (Ferrocket key)",
        |c, k, s| c.appender_core = if s.value.is_empty() {
            None
        } else {
            Some(parse_value(k, s)?)
        },
    ),
];

//! VIEW_BROKER_STATS_DATA (315) and GET_BROKER_CONSUME_STATS (317)
//! (`AdminBrokerProcessor`): what mqadmin's `statsAll` and
//! `brokerConsumeStats` read.

use std::collections::BTreeSet;
use std::rc::Rc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use serde::Serialize;

use crate::error::Reject;
use crate::services::broker_stats::{StatsName, Window};
use crate::shard::consume_stats::{all_offsets, consume_stats_body, group_queue_stats};
use crate::shard::stats::{group_get_tps, stats_windows};
use crate::shard::Shard;

/// `BrokerStatsData`, each window a `BrokerStatsItem` (`avgpt`, `sum`,
/// `tps`).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsData {
    stats_day: Window,
    stats_hour: Window,
    stats_minute: Window,
}

/// VIEW_BROKER_STATS_DATA (headers statsName, statsKey): the item's minute,
/// hour and day sums, rates and averages per request.
pub(crate) async fn view_broker_stats_data(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let name = request.ext_fields.required("statsName")?;
    let key = request.ext_fields.required("statsKey")?;
    let found = match StatsName::parse(name) {
        Some(stats) => stats_windows(shard, stats, key).await,
        None => None,
    };
    let Some([minute, hour, day]) = found else {
        return Err(Reject::system(format!(
            "The stats <{name}> <{key}> not exist"
        )));
    };
    let data = StatsData {
        stats_day: day,
        stats_hour: hour,
        stats_minute: minute,
    };
    let body = serde_json::to_vec(&data).map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

/// GET_BROKER_CONSUME_STATS (header isOrder): for every subscription group,
/// a ConsumeStats per topic it has offsets on (with `isOrder=true`, ordered
/// topics only; a group online keeps only the topics it subscribes to), each
/// queue's offsets, and the totals.
pub(crate) async fn broker_consume_stats(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let is_order = request
        .ext_fields
        .required("isOrder")?
        .trim()
        .eq_ignore_ascii_case("true");
    let offsets = all_offsets(shard).await?;
    let groups: Vec<String> = shard
        .groups()
        .with(|t| t.subscription_group_table.keys().cloned().collect());
    // Each group's topics, from the `topic@group` keys, in one pass.
    let mut by_group: std::collections::HashMap<&str, BTreeSet<String>> = Default::default();
    for key in offsets.keys() {
        if let Some((topic, group)) = key.split_once('@').filter(|(_, g)| !g.contains('@')) {
            by_group.entry(group).or_default().insert(topic.to_string());
        }
    }
    let broker_name = shard.config().broker_name.clone();
    let (mut total_diff, mut total_inflight) = (0i64, 0i64);
    let mut lists = Vec::with_capacity(groups.len());
    for group in groups {
        let mut topics = by_group.remove(group.as_str()).unwrap_or_default();
        let subscribed = subscriptions(shard, &group);
        if !subscribed.is_empty() {
            topics.retain(|t| subscribed.contains(t));
        }
        let mut entries = Vec::new();
        for topic in topics {
            let Some(config) = shard.topic(&topic).filter(|c| !is_order || c.order) else {
                continue;
            };
            let queues = std::iter::once((topic.clone(), config.write_queue_nums));
            let stats = group_queue_stats(shard, &group, queues).await?;
            for s in &stats {
                // Offsets come from clients' commits: no overflow on theirs.
                let diff = s.broker_offset.saturating_sub(s.consumer_offset);
                let inflight = s.pull_offset.saturating_sub(s.consumer_offset);
                total_diff = total_diff.saturating_add(diff);
                total_inflight = total_inflight.saturating_add(inflight);
            }
            let tps = group_get_tps(shard, &group, std::iter::once(&topic)).await;
            entries.push(
                String::from_utf8_lossy(&consume_stats_body(&broker_name, &stats, tps))
                    .into_owned(),
            );
        }
        let name = serde_json::to_string(&group).map_err(|e| Reject::system(e.to_string()))?;
        lists.push(format!("{{{name}:[{}]}}", entries.join(",")));
    }
    let addr = serde_json::to_string(&shard.env().broker_addr)
        .map_err(|e| Reject::system(e.to_string()))?;
    let body = format!(
        r#"{{"brokerAddr":{addr},"consumeStatsList":[{}],"totalDiff":{total_diff},"totalInflightDiff":{total_inflight}}}"#,
        lists.join(",")
    );
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(body.into_bytes()),
    )
}

fn subscriptions(shard: &Shard, group: &str) -> BTreeSet<String> {
    shard.clients().with(|clients| {
        clients
            .consumers
            .get(group)
            .map(|g| g.subscriptions.keys().cloned().collect())
            .unwrap_or_default()
    })
}

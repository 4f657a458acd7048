//! `ferrocket admin stats all` (mqadmin's `statsAll`) and `ferrocket admin
//! broker consume-stats` (`brokerConsumeStats`): each topic's in and out
//! rates and day counts from the masters' VIEW_BROKER_STATS_DATA, and one
//! broker's per-queue progress of every group (GET_BROKER_CONSUME_STATS).

use std::time::Duration;

use clap::Args;
use ferrocket_client::{Admin, ClientError};

/// `statsAll`'s options.
#[derive(Debug, Args)]
pub struct StatsAllArgs {
    /// Only this topic.
    #[arg(short = 't', long)]
    topic: Option<String>,
    /// Only topics and groups with messages in the last day.
    #[arg(short = 'a', long)]
    active_topic: bool,
}

/// `brokerConsumeStats`'s options (`-t` is the timeout there, as in mqadmin).
#[derive(Debug, Args)]
pub struct ConsumeStatsArgs {
    /// The broker (host:port).
    #[arg(short = 'b', long)]
    broker_addr: String,
    /// Ordered topics only.
    #[arg(short = 'o', long, default_value_t = false, action = clap::ArgAction::Set)]
    order: bool,
    /// Hide queues less than this far behind.
    #[arg(short = 'l', long, default_value_t = 0)]
    level: i64,
    /// How long to wait for the broker, in milliseconds.
    #[arg(short = 't', long, default_value_t = 50_000)]
    timeout_millis: u64,
}

/// First `width` characters (mqadmin's `frontStringAtLeast`).
fn front(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

/// A topic's masters' in-rate and day count (brokers that have not counted
/// it add 0, as mqadmin takes them).
async fn stats_sum(admin: &Admin, masters: &[String], name: &str, key: &str) -> (f64, i64) {
    let mut total = (0.0, 0);
    for addr in masters {
        if let Ok(data) = admin.view_broker_stats(addr, name, key).await {
            total.0 += data.stats_minute.tps;
            total.1 += data.sum_24h();
        }
    }
    total
}

pub async fn stats_all(admin: &Admin, args: StatsAllArgs) -> Result<(), ClientError> {
    let mut topics = admin.topic_list().await?;
    topics.sort();
    println!(
        "{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}",
        "#Topic",
        "#Consumer Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour"
    );
    for topic in topics {
        let internal = topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%");
        let other = args
            .topic
            .as_ref()
            .is_some_and(|t| !t.is_empty() && *t != topic);
        if internal || other {
            continue;
        }
        // As mqadmin: a topic that cannot be read is left out.
        let _ = topic_rows(admin, &topic, args.active_topic).await;
    }
    Ok(())
}

async fn topic_rows(admin: &Admin, topic: &str, active: bool) -> Result<(), ClientError> {
    let route = admin.topic_route(topic).await?;
    let masters: Vec<String> = route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr().map(str::to_string))
        .collect();
    let groups = match masters.first() {
        Some(addr) => admin
            .topic_consumer_groups(addr, topic)
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let (in_tps, in_day) = stats_sum(admin, &masters, "TOPIC_PUT_NUMS", topic).await;
    let name = front(topic, 64);
    if groups.is_empty() {
        if !active || in_day > 0 {
            println!(
                "{name:<64}  {:<64} {:>12} {in_tps:>11.2} {:>11} {in_day:>14} {:>14}",
                "", 0, "", "NO_CONSUMER"
            );
        }
        return Ok(());
    }
    for group in groups {
        let key = format!("{topic}@{group}");
        let (out_tps, out_day) = stats_sum(admin, &masters, "GROUP_GET_NUMS", &key).await;
        let mut accumulation = 0;
        for addr in &masters {
            if let Ok(stats) = admin.consume_stats(addr, &group, Some(topic)).await {
                accumulation += stats.total_lag();
            }
        }
        if !active || in_day > 0 || out_day > 0 {
            println!(
                "{name:<64}  {:<64} {:>12} {in_tps:>11.2} {out_tps:>11.2} {in_day:>14} {out_day:>14}",
                front(&group, 64),
                accumulation.max(0)
            );
        }
    }
    Ok(())
}

pub async fn broker_consume_stats(
    admin: &Admin,
    args: ConsumeStatsArgs,
) -> Result<(), ClientError> {
    let addr = args.broker_addr.trim();
    let timeout = Duration::from_millis(args.timeout_millis);
    let stats = admin
        .broker_consume_stats(addr, args.order, timeout)
        .await?;
    println!(
        "{:<64}  {:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20}  #LastTime",
        "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff"
    );
    for (group, list) in &stats.groups {
        for consume in list {
            for (queue, offsets) in &consume.offsets {
                let diff = offsets.broker_offset - offsets.consumer_offset;
                if diff < args.level || offsets.last_timestamp <= 0 {
                    continue;
                }
                println!(
                    "{:<64}  {group:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {diff:<20}  {}",
                    front(&queue.topic, 64),
                    front(&queue.broker_name, 32),
                    queue.queue_id,
                    offsets.broker_offset,
                    offsets.consumer_offset,
                    super::time::format_local(offsets.last_timestamp),
                );
            }
        }
    }
    println!("\nDiff Total: {}", stats.total_diff);
    Ok(())
}

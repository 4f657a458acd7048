//! `ferrocket admin consumer|offset|group ...`: mqadmin's consumerProgress,
//! consumerConnection, resetOffsetByTime, updateSubGroup and deleteSubGroup.
//!
//! `offset reset-by-time` works like mqadmin's: each broker of the topic
//! is asked to reset (INVOKE_BROKER_TO_RESET_OFFSET), which commits the new
//! offsets and pushes them to the group's running consumers; where the
//! broker answers CONSUMER_NOT_ONLINE the committed offsets are rewritten
//! directly (SEARCH_OFFSET_BY_TIMESTAMP, then UPDATE_CONSUMER_OFFSET per
//! queue), as mqadmin's fallback does.

use clap::{Args, Subcommand};
use ferrocket_client::{Admin, ClientError, ConsumerConnection, SubscriptionGroup};
use ferrocket_protocol::body::QueueData;

use super::print_table;

#[derive(Debug, Subcommand)]
pub enum ConsumerCommand {
    /// Per queue: broker offset, committed offset, lag (consumerProgress).
    Progress {
        /// The consumer group.
        #[arg(short = 'g', long)]
        group: String,
        /// Only this topic (default: every topic the group has offsets of).
        #[arg(short = 't', long)]
        topic: Option<String>,
        /// Only this broker (default: every master).
        #[arg(short = 'b', long)]
        broker_addr: Option<String>,
    },
    /// The group's online clients and subscriptions (consumerConnection).
    Connection {
        /// The consumer group.
        #[arg(short = 'g', long)]
        group: String,
        /// Ask this broker only (host:port); default: every master.
        #[arg(short = 'b', long)]
        broker_addr: Option<String>,
    },
    /// What each online client says of itself: its settings, subscriptions
    /// and queues (consumerStatus; the broker asks the client).
    Status(super::consumer_status::StatusArgs),
}

#[derive(Debug, Subcommand)]
pub enum OffsetCommand {
    /// Set the group's committed offsets of a topic to the first message
    /// stored at or after a time (resetOffsetByTime).
    ResetByTime {
        /// The consumer group.
        #[arg(short = 'g', long)]
        group: String,
        /// The topic whose offsets are reset.
        #[arg(short = 't', long)]
        topic: String,
        /// `now`, milliseconds since the Unix epoch, or local time as
        /// mqadmin takes it: `yyyy-MM-dd#HH:mm:ss:SSS`.
        #[arg(short = 's', long, value_parser = super::time::parse_timestamp)]
        timestamp: i64,
        /// Also move offsets forward (mqadmin's `-f`, default true);
        /// `--force false` only moves them back.
        #[arg(short = 'f', long, num_args = 0..=1, default_value_t = true,
              default_missing_value = "true", action = clap::ArgAction::Set)]
        force: bool,
    },
}

impl OffsetCommand {
    /// The topic the command names (a missing one is said in words).
    pub fn topic(&self) -> &str {
        match self {
            OffsetCommand::ResetByTime { topic, .. } => topic,
        }
    }
}

/// Where a group command applies.
#[derive(Debug, Args)]
pub struct GroupTarget {
    /// The consumer group.
    #[arg(short = 'g', long)]
    group: String,
    /// On this broker only (host:port).
    #[arg(short = 'b', long)]
    broker_addr: Option<String>,
    /// On the masters of this cluster (default: every master).
    #[arg(short = 'c', long, conflicts_with = "broker_addr")]
    cluster: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Create a subscription group or change the given settings of an
    /// existing one (updateSubGroup).
    Update {
        #[command(flatten)]
        target: GroupTarget,
        /// Failed consumptions before a message goes to %DLQ%{group}.
        #[arg(long)]
        retry_max_times: Option<i32>,
        /// Queues of %RETRY%{group}.
        #[arg(long)]
        retry_queue_nums: Option<i32>,
        /// Allow pulls (true) or refuse them (false).
        #[arg(long, num_args = 0..=1, default_missing_value = "true")]
        consume_enable: Option<bool>,
        /// Allow broadcasting consumers.
        #[arg(long, num_args = 0..=1, default_missing_value = "true")]
        consume_broadcast_enable: Option<bool>,
    },
    /// Delete a subscription group (deleteSubGroup).
    Delete {
        #[command(flatten)]
        target: GroupTarget,
        /// Also delete the group's committed offsets.
        #[arg(long)]
        clean_offset: bool,
    },
    /// Make the group pop (POP) or pull (PULL) a topic: what
    /// QUERY_ASSIGNMENT tells a push consumer that lets the broker balance
    /// (setConsumeMode).
    SetMode {
        #[command(flatten)]
        target: GroupTarget,
        /// The topic the group consumes.
        #[arg(short = 't', long)]
        topic: String,
        /// POP (the broker assigns messages) or PULL (the client balances queues).
        #[arg(long, value_parser = ["POP", "PULL"])]
        mode: String,
        /// POP: how many following consumers' shares each consumer pops
        /// too (0: every consumer pops every queue).
        #[arg(long, default_value_t = 0)]
        pop_share_queue_num: i32,
    },
    /// Print a group's settings as JSON.
    Get {
        #[command(flatten)]
        target: GroupTarget,
    },
}

/// Master addresses: `broker_addr`, the masters of `cluster`, or every
/// registered master.
pub(super) async fn masters(
    admin: &Admin,
    broker_addr: Option<&str>,
    cluster: Option<&str>,
) -> Result<Vec<String>, ClientError> {
    if let Some(addr) = broker_addr {
        return Ok(vec![addr.to_string()]);
    }
    let brokers = admin.cluster_brokers().await?;
    let addrs: Vec<String> = brokers
        .into_iter()
        .filter(|b| b.broker_id == 0 && cluster.is_none_or(|c| b.cluster == c))
        .map(|b| b.addr)
        .collect();
    if addrs.is_empty() {
        return Err(ClientError::InvalidArgument(match cluster {
            Some(c) => format!("cluster `{c}` has no master broker"),
            None => "no master broker is registered with the name server".into(),
        }));
    }
    Ok(addrs)
}

pub async fn run_consumer(admin: &Admin, command: ConsumerCommand) -> Result<(), ClientError> {
    match command {
        ConsumerCommand::Progress {
            group,
            topic,
            broker_addr,
        } => progress(admin, &group, topic.as_deref(), broker_addr.as_deref()).await,
        ConsumerCommand::Connection { group, broker_addr } => {
            connection(admin, &group, broker_addr.as_deref()).await
        }
        ConsumerCommand::Status(args) => {
            let addrs = masters(admin, args.broker_addr.as_deref(), None).await?;
            super::consumer_status::status(admin, &args, &addrs).await
        }
    }
}

async fn progress(
    admin: &Admin,
    group: &str,
    topic: Option<&str>,
    broker_addr: Option<&str>,
) -> Result<(), ClientError> {
    let mut rows = vec![[
        "Topic",
        "Broker",
        "QID",
        "Broker Offset",
        "Consumer Offset",
        "Diff",
        "In flight",
        "Last Time",
        "Last Time (ms)",
    ]
    .map(String::from)];
    let mut total_diff = 0;
    let mut tps = 0.0;
    let addrs = masters(admin, broker_addr, None).await?;
    for addr in &addrs {
        let stats = admin.consume_stats(addr, group, topic).await?;
        tps += stats.consume_tps;
        for (queue, offsets) in &stats.offsets {
            total_diff += offsets.lag();
            rows.push([
                queue.topic.clone(),
                queue.broker_name.clone(),
                queue.queue_id.to_string(),
                offsets.broker_offset.to_string(),
                offsets.consumer_offset.to_string(),
                offsets.lag().to_string(),
                (offsets.pull_offset - offsets.consumer_offset)
                    .max(0)
                    .to_string(),
                if offsets.last_timestamp > 0 {
                    super::time::format_local(offsets.last_timestamp)
                } else {
                    "-".into()
                },
                if offsets.last_timestamp > 0 {
                    offsets.last_timestamp.to_string()
                } else {
                    "-".into()
                },
            ]);
        }
    }
    if rows.len() == 1 {
        return no_progress(admin, group, topic, &addrs).await;
    }
    print_table(&rows);
    println!();
    println!("Consume TPS: {tps:.2}");
    println!("Consume Diff Total: {total_diff}");
    Ok(())
}

/// Why a progress table would be empty: no such group (an error), or a
/// group with nothing committed yet (said, not an error).
async fn no_progress(
    admin: &Admin,
    group: &str,
    topic: Option<&str>,
    addrs: &[String],
) -> Result<(), ClientError> {
    let mut exists = false;
    for addr in addrs {
        let table = admin.subscription_groups(addr).await?;
        exists |= table.subscription_group_table.contains_key(group);
    }
    if !exists {
        return Err(ClientError::NotFound(format!(
            "no consumer group `{group}` on {}: it has no subscription group and no \
             committed offsets there",
            addrs.join(", ")
        )));
    }
    match topic {
        Some(topic) => println!("group `{group}` has no committed offsets of topic `{topic}` yet"),
        None => println!("group `{group}` has no committed offsets yet"),
    }
    Ok(())
}

async fn connection(
    admin: &Admin,
    group: &str,
    broker_addr: Option<&str>,
) -> Result<(), ClientError> {
    let mut found: Option<ConsumerConnection> = None;
    let addrs = masters(admin, broker_addr, None).await?;
    for addr in &addrs {
        if let Some(conn) = admin.consumer_connection(addr, group).await? {
            match &mut found {
                None => found = Some(conn),
                Some(all) => {
                    for client in conn.connection_set {
                        if !all.connection_set.contains(&client) {
                            all.connection_set.push(client);
                        }
                    }
                    all.subscription_table.extend(conn.subscription_table);
                }
            }
        }
    }
    let Some(conn) = found else {
        return Err(ClientError::NotFound(format!(
            "consumer group `{group}` is offline: no client of it is connected to {}",
            addrs.join(", ")
        )));
    };
    let mut rows = vec![["#", "ClientId", "ClientAddr", "Language", "Version"].map(String::from)];
    for (i, client) in conn.connection_set.iter().enumerate() {
        rows.push([
            (i + 1).to_string(),
            client.client_id.clone(),
            client.client_addr.clone(),
            client.language.clone(),
            client.version.to_string(),
        ]);
    }
    print_table(&rows);
    println!();
    let mut subs = vec![["Topic", "SubExpression", "Type"].map(String::from)];
    for (topic, sub) in &conn.subscription_table {
        subs.push([
            topic.clone(),
            sub.sub_string.clone(),
            sub.expression_type.clone().unwrap_or_else(|| "TAG".into()),
        ]);
    }
    print_table(&subs);
    println!();
    println!("ConsumeType: {}", conn.consume_type);
    println!("MessageModel: {}", conn.message_model);
    println!("ConsumeFromWhere: {}", conn.consume_from_where);
    Ok(())
}

/// One reset-by-time request.
struct Reset<'a> {
    group: &'a str,
    topic: &'a str,
    timestamp: i64,
    force: bool,
}

pub async fn run_offset(admin: &Admin, command: OffsetCommand) -> Result<(), ClientError> {
    let OffsetCommand::ResetByTime {
        group,
        topic,
        timestamp,
        force,
    } = command;
    let reset = Reset {
        group: &group,
        topic: &topic,
        timestamp,
        force,
    };
    let route = admin.topic_route(&topic).await?;
    let mut rows =
        vec![["Topic", "Broker", "QID", "Old Offset", "New Offset", "Mode"].map(String::from)];
    for queues in &route.queue_datas {
        let Some(addr) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == queues.broker_name)
            .and_then(|b| b.master_addr().map(str::to_string))
        else {
            continue;
        };
        let mut old = Vec::new();
        for queue_id in 0..queues.read_queue_nums {
            old.push(
                admin
                    .committed_offset(&addr, &group, &topic, queue_id)
                    .await?,
            );
        }
        match admin
            .reset_offset_online(&addr, &group, &topic, timestamp, force)
            .await?
        {
            Some(table) => {
                for (queue, new) in table {
                    rows.push([
                        queue.topic.clone(),
                        queue.broker_name.clone(),
                        queue.queue_id.to_string(),
                        offset_text(old_offset(&old, queue.queue_id)),
                        new.to_string(),
                        "online".into(),
                    ]);
                }
            }
            None => rows.extend(reset_offline(admin, &addr, &reset, queues, &old).await?),
        }
    }
    print_table(&rows);
    Ok(())
}

/// mqadmin's fallback where no consumer of the group is online: rewrites the
/// committed offset of each queue; one table row per queue.
async fn reset_offline(
    admin: &Admin,
    addr: &str,
    reset: &Reset<'_>,
    queues: &QueueData,
    old: &[Option<i64>],
) -> Result<Vec<[String; 6]>, ClientError> {
    let mut rows = Vec::new();
    for queue_id in 0..queues.read_queue_nums {
        let target = admin
            .search_offset(addr, reset.topic, queue_id, reset.timestamp)
            .await?;
        let previous = old_offset(old, queue_id);
        let new = match previous {
            Some(current) if !reset.force && target >= current => current,
            _ => target,
        };
        if previous != Some(new) {
            admin
                .commit_offset(addr, reset.group, reset.topic, queue_id, new)
                .await?;
        }
        rows.push([
            reset.topic.to_string(),
            queues.broker_name.clone(),
            queue_id.to_string(),
            offset_text(previous),
            new.to_string(),
            "offline".into(),
        ]);
    }
    Ok(rows)
}

/// The committed offset of `queue_id` before the reset, where it had one.
fn old_offset(old: &[Option<i64>], queue_id: i32) -> Option<i64> {
    usize::try_from(queue_id)
        .ok()
        .and_then(|i| old.get(i).copied().flatten())
}

fn offset_text(offset: Option<i64>) -> String {
    offset.map_or_else(|| "-".to_string(), |o| o.to_string())
}

impl GroupTarget {
    /// The masters the command applies to.
    async fn masters(&self, admin: &Admin) -> Result<Vec<String>, ClientError> {
        masters(admin, self.broker_addr.as_deref(), self.cluster.as_deref()).await
    }
}

/// The settings `group update` was given; the others stay as they are.
struct GroupChanges {
    retry_max_times: Option<i32>,
    retry_queue_nums: Option<i32>,
    consume_enable: Option<bool>,
    consume_broadcast_enable: Option<bool>,
}

impl GroupChanges {
    fn apply(&self, group: &mut SubscriptionGroup) {
        if let Some(times) = self.retry_max_times {
            group.retry_max_times = times;
        }
        if let Some(queues) = self.retry_queue_nums {
            group.retry_queue_nums = queues;
        }
        if let Some(enable) = self.consume_enable {
            group.consume_enable = enable;
        }
        if let Some(enable) = self.consume_broadcast_enable {
            group.consume_broadcast_enable = enable;
        }
    }
}

pub async fn run_group(admin: &Admin, command: GroupCommand) -> Result<(), ClientError> {
    match command {
        GroupCommand::Update {
            target,
            retry_max_times,
            retry_queue_nums,
            consume_enable,
            consume_broadcast_enable,
        } => {
            let changes = GroupChanges {
                retry_max_times,
                retry_queue_nums,
                consume_enable,
                consume_broadcast_enable,
            };
            update_group(admin, &target, &changes).await
        }
        GroupCommand::Delete {
            target,
            clean_offset,
        } => {
            let with_offsets = if clean_offset {
                " with its offsets"
            } else {
                ""
            };
            for addr in target.masters(admin).await? {
                admin
                    .delete_subscription_group(&addr, &target.group, clean_offset)
                    .await?;
                println!(
                    "deleted subscription group {} on {addr}{with_offsets}",
                    target.group
                );
            }
            Ok(())
        }
        GroupCommand::SetMode {
            target,
            topic,
            mode,
            pop_share_queue_num,
        } => {
            for addr in target.masters(admin).await? {
                admin
                    .set_message_request_mode(
                        &addr,
                        &topic,
                        &target.group,
                        &mode,
                        pop_share_queue_num,
                    )
                    .await?;
                println!(
                    "group {} consumes {topic} by {mode} on {addr}",
                    target.group
                );
            }
            Ok(())
        }
        GroupCommand::Get { target } => print_group(admin, &target).await,
    }
}

/// Creates or changes the group on each master.
async fn update_group(
    admin: &Admin,
    target: &GroupTarget,
    changes: &GroupChanges,
) -> Result<(), ClientError> {
    for addr in target.masters(admin).await? {
        let table = admin.subscription_groups(&addr).await?;
        let mut group = table
            .subscription_group_table
            .get(&target.group)
            .cloned()
            .unwrap_or_else(|| SubscriptionGroup::new(&target.group));
        changes.apply(&mut group);
        admin.update_subscription_group(&addr, &group).await?;
        println!(
            "updated subscription group {} on {addr} (retryMaxTimes {}, retryQueueNums {}, consumeEnable {})",
            group.group_name, group.retry_max_times, group.retry_queue_nums, group.consume_enable
        );
    }
    Ok(())
}

/// Prints the group's settings on each master as JSON.
/// Fails when no master has the group.
async fn print_group(admin: &Admin, target: &GroupTarget) -> Result<(), ClientError> {
    let addrs = target.masters(admin).await?;
    let mut found = false;
    for addr in &addrs {
        let table = admin.subscription_groups(addr).await?;
        match table.subscription_group_table.get(&target.group) {
            Some(group) => {
                let json = serde_json::to_string_pretty(group).map_err(|e| {
                    ClientError::InvalidArgument(format!("cannot print the group: {e}"))
                })?;
                println!("{addr}: {json}");
                found = true;
            }
            None => println!("{addr}: no subscription group {}", target.group),
        }
    }
    if !found {
        return Err(ClientError::NotFound(format!(
            "no subscription group `{}` on {}",
            target.group,
            addrs.join(", ")
        )));
    }
    Ok(())
}

//! Delivering due timers: each held message is copied to its REAL_TOPIC /
//! REAL_QID by the delay-level scheduler's `deliver_to_real_topic` (the
//! same conversion for both; TIMER_OUT_MS stays, so the copy is never taken
//! for a timer message again), then the batch is marked delivered in the
//! timer store. A recall marker is held, and the message it names dropped
//! (`recall`).

use std::rc::Rc;

use ferrocket_protocol::properties;
use ferrocket_store::timer::TimerEntry;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::delivery::{DeliverError, Parked};
use crate::services::recall::marker_key;
use crate::services::records::{try_read_record_through, view};
use crate::services::timer::{TimerService, DELIVER_BATCH_MAX};
use crate::services::topics::TIMER_TOPIC;
use crate::shard::Shard;

use super::recall::{Hold, Recalls};

/// What became of one due timer.
enum Outcome {
    /// Stored in its real topic (now, or before a restart).
    Delivered,
    /// Its held message is gone or not a timer message, or it is a recall
    /// marker done with: nothing to deliver.
    Dropped,
    /// A recall marker, held unmarked.
    Held,
    /// Recalled: dropped, with its marker if that was held.
    Recalled(Option<TimerEntry>),
}

/// Delivers what is due now; returns how many timers were settled.
pub(super) async fn deliver_due(
    shard: &Rc<Shard>,
    timer: &TimerService,
    recalls: &mut Recalls,
) -> usize {
    let now = now_ms();
    // Held markers come back first in every batch.
    let want = DELIVER_BATCH_MAX + recalls.held_count();
    let due = match timer.with_store(move |store| store.due(now, want)).await {
        Ok(due) => due,
        Err(err) => {
            tracing::error!(%err, "reading due timers failed");
            return 0;
        }
    };
    if due.is_empty() {
        return 0;
    }
    let mut settled: Vec<TimerEntry> = Vec::with_capacity(due.len());
    let mut complete = true;
    let slave = shard.config().replication.broker_role.is_slave();
    for entry in &due {
        if recalls.is_held(entry.physical_offset) {
            continue;
        }
        // An acting slave's delivery and its ledger entry are one step that
        // a hand-back to the returning master waits for.
        let flight = shard.env().acting.flight();
        if slave && flight.is_none() {
            complete = false;
            break;
        }
        match deliver_one(shard, timer, entry, recalls).await {
            Ok(Outcome::Delivered | Outcome::Dropped) => settled.push(*entry),
            Ok(Outcome::Held) => {}
            Ok(Outcome::Recalled(marker)) => {
                settled.push(*entry);
                settled.extend(marker);
            }
            Err(reject) => {
                complete = false;
                // Stop here; the rest come back at the next tick.
                tracing::warn!(
                    physical_offset = entry.physical_offset,
                    remark = %reject.remark,
                    "delivering a timer message failed; will retry"
                );
                break;
            }
        }
    }
    if complete && !recalls.is_empty() {
        // Every timer due up to here was handed out: a recalled message
        // due by then that did not come will not.
        let covered = match due.last() {
            Some(last) if due.len() >= want => last.deliver_at_ms - 1,
            _ => now,
        };
        settled.extend(recalls.expire(covered));
    }
    let count = settled.len();
    if count > 0 {
        if let Err(err) = timer
            .with_store(move |store| store.mark_delivered(&settled))
            .await
        {
            tracing::error!(%err, "marking timers delivered failed");
        }
    }
    count
}

async fn deliver_one(
    shard: &Rc<Shard>,
    timer: &TimerService,
    entry: &TimerEntry,
    recalls: &mut Recalls,
) -> Result<Outcome, Reject> {
    if timer.take_handed(entry.physical_offset) {
        tracing::debug!(
            physical_offset = entry.physical_offset,
            "timer message delivered by the acting slave"
        );
        return Ok(Outcome::Delivered);
    }
    // Read through tiered storage (the segment may have left the local
    // disk before the timer came due); a store error is retried.
    let Some(record) = try_read_record_through(shard.store(), entry.physical_offset).await? else {
        tracing::error!(
            physical_offset = entry.physical_offset,
            "timer points at no stored message; dropping it"
        );
        return Ok(Outcome::Dropped);
    };
    let held = view(&record)?;
    if held.topic != TIMER_TOPIC {
        tracing::error!(
            physical_offset = entry.physical_offset,
            topic = held.topic,
            "timer points at a message of another topic; dropping it"
        );
        return Ok(Outcome::Dropped);
    }
    let props = held.properties();
    if let Some(outcome) = recall_outcome(entry, &props, recalls) {
        return Ok(outcome);
    }
    // A slave's timer store takes every timer message, also those its
    // master delivered: their copies are in the index.
    let acting = shard.config().replication.broker_role.is_slave();
    if let Some(real_topic) = props.get(properties::REAL_TOPIC) {
        let unsure = entry.maybe_delivered || acting;
        if unsure && already_delivered(shard, &held, real_topic).await? {
            tracing::debug!(
                physical_offset = entry.physical_offset,
                "timer message was delivered already (by the master, or before a restart)"
            );
            return Ok(Outcome::Delivered);
        }
    }
    let delivered = match acting {
        true => crate::tasks::acting_escape::escape(shard, &held, Parked::Timer).await,
        false => (shard.deliver_to_real_topic(&held, Parked::Timer).await).map(drop),
    };
    if acting && delivered.is_ok() {
        timer.note_acting_delivery(entry.physical_offset);
    }
    match delivered {
        Ok(()) => Ok(Outcome::Delivered),
        Err(DeliverError::Store(reject)) => Err(reject),
        Err(DeliverError::Invalid(reason)) => {
            tracing::error!(
                physical_offset = entry.physical_offset,
                %reason,
                "timer message cannot be delivered; dropping it"
            );
            Ok(Outcome::Dropped)
        }
    }
}

/// A recall marker held or done with, or a recalled message dropped;
/// `None` for a message to deliver.
fn recall_outcome(
    entry: &TimerEntry,
    props: &ferrocket_protocol::properties::Properties,
    recalls: &mut Recalls,
) -> Option<Outcome> {
    if let Some(key) = marker_key(props) {
        let target_ms = props
            .get(properties::TIMER_OUT_MS)
            .and_then(|v| v.trim().parse::<i64>().ok());
        let (Some(key), Some(target_ms)) = (key, target_ms) else {
            tracing::warn!(
                physical_offset = entry.physical_offset,
                "recall marker for another topic or without a due time; dropping it"
            );
            return Some(Outcome::Dropped);
        };
        return Some(match recalls.hold(*entry, key, target_ms) {
            Hold::Held => Outcome::Held,
            Hold::Settle => Outcome::Dropped,
        });
    }
    if recalls.is_empty() {
        return None;
    }
    let real_topic = props.get(properties::REAL_TOPIC)?;
    let key = ferrocket_protocol::recall::delete_key(real_topic, props.unique_key()?);
    let marker = recalls.take(&key)?;
    tracing::debug!(
        physical_offset = entry.physical_offset,
        %key,
        "timer message recalled; not delivered"
    );
    Some(Outcome::Recalled(marker))
}

/// Whether the index holds a copy of `held` in `real_topic`: same UNIQ_KEY
/// and TIMER_OUT_MS, stored after it (copies read through tiered storage;
/// a store error is answered, to retry rather than deliver twice).
async fn already_delivered(
    shard: &Rc<Shard>,
    held: &ferrocket_protocol::record::RecordView<'_>,
    real_topic: &str,
) -> Result<bool, Reject> {
    let Some(feed) = shard.services().index.get().cloned() else {
        return Ok(false);
    };
    let props = held.properties();
    let (Some(uniq), Some(out_ms)) = (props.unique_key(), props.get(properties::TIMER_OUT_MS))
    else {
        return Ok(false);
    };
    feed.catch_up(shard.store()).await;
    let (offsets, _) = feed.query(
        real_topic,
        uniq,
        crate::services::index::QUERY_COUNT_DEFAULT,
        held.store_timestamp_ms,
        i64::MAX,
    );
    for offset in offsets.into_iter().filter(|o| *o > held.physical_offset) {
        let Some(record) = try_read_record_through(shard.store(), offset).await? else {
            continue;
        };
        let same = view(&record).is_ok_and(|copy| {
            let copy_props = copy.properties();
            copy.topic == real_topic
                && copy_props.unique_key() == Some(uniq)
                && copy_props.get(properties::TIMER_OUT_MS) == Some(out_ms)
        });
        if same {
            return Ok(true);
        }
    }
    Ok(false)
}

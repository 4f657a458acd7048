//! Delivering due timers: each held message is copied to its REAL_TOPIC /
//! REAL_QID by the delay-level scheduler's `deliver_to_real_topic` (the
//! same conversion for both; TIMER_OUT_MS stays, so the copy is never taken
//! for a timer message again), then the batch is marked delivered in the
//! timer store.

use std::rc::Rc;

use ferrocket_protocol::properties;
use ferrocket_store::timer::TimerEntry;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::delivery::{DeliverError, Parked};
use crate::services::records::{read_record, view};
use crate::services::timer::{TimerService, DELIVER_BATCH_MAX};
use crate::services::topics::TIMER_TOPIC;
use crate::shard::Shard;

/// What became of one due timer.
enum Outcome {
    /// Stored in its real topic (now, or before a restart).
    Delivered,
    /// Its held message is gone or not a timer message: nothing to deliver.
    Dropped,
}

/// Delivers what is due now; returns how many timers were settled.
pub(super) async fn deliver_due(shard: &Rc<Shard>, timer: &TimerService) -> usize {
    let now = now_ms();
    let due = match timer
        .with_store(move |store| store.due(now, DELIVER_BATCH_MAX))
        .await
    {
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
    for entry in &due {
        match deliver_one(shard, entry).await {
            Ok(Outcome::Delivered) => settled.push(*entry),
            Ok(Outcome::Dropped) => settled.push(*entry),
            Err(reject) => {
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

async fn deliver_one(shard: &Rc<Shard>, entry: &TimerEntry) -> Result<Outcome, Reject> {
    let Some(record) = read_record(&shard.store, entry.physical_offset) else {
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
    if let Some(real_topic) = props.get(properties::REAL_TOPIC) {
        if entry.maybe_delivered && already_delivered(shard, &held, real_topic).await {
            tracing::info!(
                physical_offset = entry.physical_offset,
                "timer message was delivered before the restart"
            );
            return Ok(Outcome::Delivered);
        }
    }
    match shard.deliver_to_real_topic(&held, Parked::Timer).await {
        Ok(_) => Ok(Outcome::Delivered),
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

/// Whether the index holds a copy of `held` in `real_topic`: same UNIQ_KEY
/// and TIMER_OUT_MS, stored after it.
async fn already_delivered(
    shard: &Rc<Shard>,
    held: &ferrocket_protocol::record::RecordView<'_>,
    real_topic: &str,
) -> bool {
    let Some(feed) = shard.services.index.get().cloned() else {
        return false;
    };
    let props = held.properties();
    let (Some(uniq), Some(out_ms)) = (props.unique_key(), props.get(properties::TIMER_OUT_MS))
    else {
        return false;
    };
    feed.catch_up(&shard.store).await;
    let (offsets, _) = feed.query(
        real_topic,
        uniq,
        crate::services::index::QUERY_COUNT_DEFAULT,
        held.store_timestamp_ms,
        i64::MAX,
    );
    offsets
        .into_iter()
        .filter(|offset| *offset > held.physical_offset)
        .filter_map(|offset| read_record(&shard.store, offset))
        .any(|record| {
            view(&record).is_ok_and(|copy| {
                let copy_props = copy.properties();
                copy.topic == real_topic
                    && copy_props.unique_key() == Some(uniq)
                    && copy_props.get(properties::TIMER_OUT_MS) == Some(out_ms)
            })
        })
}

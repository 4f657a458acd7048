//! A master's side of controller mode's HA stream (RocketMQ's
//! `AutoSwitchHAConnection`; byte layout in `protocol::ha::autoswitch`).
//! The slave says who it is (its broker id) in a handshake; the master
//! answers with its CommitLog end and every epoch it knows; then the slave
//! reports its end and the master pushes the CommitLog in frames that carry
//! the epoch of their bytes (a frame never spans two epochs) and the
//! confirm offset (below it every in-sync replica has the log).

use std::io;
use std::time::{Duration, Instant};

use ferrocket_protocol::ha::autoswitch::{
    MasterMessage, SlaveMessage, TransferHeader, SLAVE_HANDSHAKE_BYTES, SLAVE_REPORT_BYTES,
};
use ferrocket_store::epoch::EpochCache;
use futures_lite::future;

use super::{frame_body, frame_end, start_offset, throttle, within, HaStream};
use crate::services::replication::{HaState, SlaveLink};
use crate::shard::Shard;

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// Serves one slave until the link fails or the shard stops.
pub(crate) async fn serve(
    shard: &Shard,
    ha: &HaState,
    link: &SlaveLink,
    stream: &HaStream,
) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let mut hello = [0u8; SLAVE_HANDSHAKE_BYTES];
    within(
        housekeeping_ms,
        "the slave's handshake",
        stream.read_exact(&mut hello),
    )
    .await?;
    let Some((SlaveMessage::Handshake(hello), _)) =
        SlaveMessage::decode(&hello).map_err(|e| bad(e.to_string()))?
    else {
        return Err(bad("the slave did not start with a handshake".into()));
    };
    link.broker_id.set(Some(hello.broker_id));
    // The epochs are fixed while this broker is master: read them once.
    let epochs = master_epochs(shard)?;
    let written = shard.store().reader().written_offset();
    let answer = MasterMessage::Handshake {
        max_offset: written,
        last_epoch: epochs.last_epoch(),
        epochs: epochs.entries().to_vec(),
    };
    within(
        housekeeping_ms,
        "the handshake answer",
        stream.write_all(&answer.encode()),
    )
    .await?;
    tracing::info!(
        slave = hello.broker_id,
        epochs = epochs.entries().len(),
        "AutoSwitch handshake done"
    );
    future::or(
        read_reports(shard, ha, link, stream),
        push(shard, ha, link, stream, &epochs),
    )
    .await
}

fn master_epochs(shard: &Shard) -> io::Result<EpochCache> {
    let epochs = super::auto_slave::read_epochs(shard)?;
    if epochs.is_empty() {
        return Err(io::Error::other("this master has no epoch yet"));
    }
    Ok(epochs)
}

/// Reads the slave's 12-byte reports of its CommitLog end.
async fn read_reports(
    shard: &Shard,
    ha: &HaState,
    link: &SlaveLink,
    stream: &HaStream,
) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let mut buf = [0u8; SLAVE_REPORT_BYTES];
    loop {
        within(
            housekeeping_ms,
            "slave reports",
            stream.read_exact(&mut buf),
        )
        .await?;
        match SlaveMessage::decode(&buf).map_err(|e| bad(e.to_string()))? {
            Some((SlaveMessage::Report { max_offset }, _)) => ha.ack(link, max_offset),
            _ => return Err(bad("the slave sent something other than a report".into())),
        }
    }
}

/// Pushes the CommitLog from the slave's first report on, each frame
/// within one segment, one epoch and `haTransferBatchSize`; a heartbeat
/// frame (no body) after `haSendHeartbeatInterval` without one.
async fn push(
    shard: &Shard,
    ha: &HaState,
    link: &SlaveLink,
    stream: &HaStream,
    epochs: &EpochCache,
) -> io::Result<()> {
    let ha_config = &shard.config().replication;
    let reported = ha.first_report(link).await;
    let reader = shard.store().reader();
    // A slave with nothing copies from the master's first byte, offloaded
    // segments included (served from object storage, `frame_body`): a lost
    // disk comes back from its master rather than restored from the object
    // store, with ConsumeQueues for everything the master's cover. An
    // offloaded segment object storage does not serve now is skipped
    // (`first_copy`).
    let mut next = match reported {
        0 => super::first_copy::empty_slave_start(shard).await,
        reported => start_offset(shard, reported)?,
    };
    let heartbeat = Duration::from_millis(ha_config.ha_heartbeat_interval_ms);
    let write_ms = ha_config.ha_housekeeping_interval_ms;
    let mut last_write = Instant::now();
    loop {
        link.transfer_from.set(next);
        let seen = ha.written.epoch();
        let written = reader.written_offset();
        let epoch = epochs
            .entry_at(next, written.max(next + 1))
            .ok_or_else(|| io::Error::other(format!("no epoch holds offset {next}")))?;
        let epoch_end = epochs
            .next_after(epoch.epoch)
            .map_or(i64::MAX, |e| e.start_offset);
        let idle_left = heartbeat.saturating_sub(last_write.elapsed());
        if next >= written && !idle_left.is_zero() {
            future::or(ha.written.since(seen), glommio::timer::sleep(idle_left)).await;
            continue;
        }
        // Nothing to send and the heartbeat due: an empty frame.
        let end = frame_end(shard, next, written, epoch_end);
        let len = (end - next) as usize;
        throttle(shard, link, len).await;
        let bytes = frame_body(shard, next, end).await?;
        let header = MasterMessage::Transfer(TransferHeader {
            offset: next,
            epoch,
            // The gate is open (`i64::MAX`) when nothing waits for slaves.
            confirm_offset: ha.gate().min(written),
            body_bytes: len,
        });
        within(write_ms, "pushing to the slave", async {
            stream.write_all(&header.encode()).await?;
            stream.write_all(&bytes).await
        })
        .await?;
        next = end;
        last_write = Instant::now();
    }
}

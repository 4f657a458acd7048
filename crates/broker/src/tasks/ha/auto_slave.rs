//! A slave's side of controller mode's HA stream (RocketMQ's
//! `AutoSwitchHAClient`): say who it is, check the master's epochs against
//! its own (the supervisor already cut a forked tail before this run, so a
//! fork here is refused), then take frames, record each new epoch they
//! carry in the epoch file, and append their bytes.

use std::io;

use ferrocket_protocol::ha::autoswitch::{
    MasterMessage, SlaveHandshake, SlaveMessage, EPOCH_ENTRY_BYTES, HANDSHAKE_EPOCHS_MAX,
    MASTER_HANDSHAKE_HEADER_BYTES, MASTER_TRANSFER_HEADER_BYTES, TRANSFER_BODY_BYTES_MAX,
};
use ferrocket_runtime::sync::Notify;
use ferrocket_store::epoch::{fork_point, EpochCache, EpochEntry, ForkPoint};

use super::{within, HaStream, Intake};
use crate::shard::Shard;

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// This broker's epochs (controller mode's epoch file).
pub(crate) fn read_epochs(shard: &Shard) -> io::Result<EpochCache> {
    shard
        .config()
        .epoch_file()
        .read()
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Sends the handshake and checks the master's answer.
pub(crate) async fn handshake(shard: &Shard, stream: &HaStream) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let hello = SlaveMessage::Handshake(SlaveHandshake {
        sync_from_last_file: false,
        async_learner: false,
        broker_id: shard.config().broker_id,
    });
    within(
        housekeeping_ms,
        "the handshake",
        stream.write_all(&hello.encode()),
    )
    .await?;
    let mut head = vec![0u8; MASTER_HANDSHAKE_HEADER_BYTES];
    within(
        housekeeping_ms,
        "the master's handshake",
        stream.read_exact(&mut head),
    )
    .await?;
    let body = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let body = usize::try_from(body)
        .ok()
        .filter(|b| *b <= HANDSHAKE_EPOCHS_MAX * EPOCH_ENTRY_BYTES)
        .ok_or_else(|| bad(format!("the master's handshake has a body of {body} bytes")))?;
    head.resize(MASTER_HANDSHAKE_HEADER_BYTES + body, 0);
    within(
        housekeeping_ms,
        "the master's epochs",
        stream.read_exact(&mut head[MASTER_HANDSHAKE_HEADER_BYTES..]),
    )
    .await?;
    let Some((
        MasterMessage::Handshake {
            max_offset, epochs, ..
        },
        _,
    )) = MasterMessage::decode(&head).map_err(|e| bad(e.to_string()))?
    else {
        return Err(bad("the master did not answer with a handshake".into()));
    };
    let master = EpochCache::from_entries(&epochs).map_err(|e| bad(e.to_string()))?;
    let local = read_epochs(shard)?;
    let local_end = shard.store().reader().written_offset();
    match fork_point(&local, local_end, &master, max_offset) {
        ForkPoint::At(point) if point < local_end => Err(bad(format!(
            "this log forked from the master's at {point} (it ends at {local_end}); it is cut back before a broker follows a new master"
        ))),
        ForkPoint::NoCommonEpoch if local_end > 0 => {
            Err(bad("no epoch shared with the master".into()))
        }
        _ => Ok(()),
    }
}

/// Records `epoch` when it is newer than the slave's newest.
fn note_epoch(shard: &Shard, epochs: &mut EpochCache, epoch: EpochEntry) -> io::Result<()> {
    if epoch.epoch <= epochs.last_epoch() {
        return Ok(());
    }
    epochs.truncate_from_offset(epoch.start_offset);
    epochs.append(epoch).map_err(|e| bad(e.to_string()))?;
    shard
        .config()
        .epoch_file()
        .write(epochs)
        .map_err(|e| io::Error::other(e.to_string()))?;
    tracing::info!(
        epoch = epoch.epoch,
        start_offset = epoch.start_offset,
        "new epoch from the master"
    );
    Ok(())
}

/// Takes frames and appends their whole records.
pub(crate) async fn receive(shard: &Shard, stream: &HaStream, grew: &Notify) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let mut intake = Intake::new(shard.store().reader().written_offset());
    let mut epochs = read_epochs(shard)?;
    loop {
        let mut head = [0u8; MASTER_TRANSFER_HEADER_BYTES];
        within(
            housekeeping_ms,
            "master frames",
            stream.read_exact(&mut head),
        )
        .await?;
        let Some((MasterMessage::Transfer(frame), _)) =
            MasterMessage::decode(&head).map_err(|e| bad(e.to_string()))?
        else {
            return Err(bad(
                "the master sent something other than a transfer frame".into()
            ));
        };
        if frame.body_bytes > TRANSFER_BODY_BYTES_MAX {
            return Err(bad(format!("a frame of {} bytes", frame.body_bytes)));
        }
        intake.check(frame.offset, frame.body_bytes)?;
        // Before the bytes it covers are appended and dispatched.
        if let Ok(control) = shard.control() {
            control.ha.note_master_confirm(frame.confirm_offset);
        }
        if frame.body_bytes > 0 {
            note_epoch(shard, &mut epochs, frame.epoch)?;
        }
        intake.take(shard, stream, frame.body_bytes, grew).await?;
    }
}

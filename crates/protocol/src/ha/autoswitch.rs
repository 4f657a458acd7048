//! The HA stream of controller mode (RocketMQ's `AutoSwitchHAClient` and
//! `AutoSwitchHAConnection`): the same TCP link to the master's
//! `haListenPort` as the classic stream, but every message starts with the
//! sender's connection state (`HAConnectionState` ordinal), and the master
//! tells the slave its epochs so the slave can cut a forked tail first.
//!
//! Slave -> master, big-endian:
//! - handshake, 16 bytes: `[state=HANDSHAKE i32][isSyncFromLastFile i16]
//!   [isAsyncLearner i16][slaveBrokerId i64]`;
//! - offset report, 12 bytes: `[state=TRANSFER i32][slaveMaxOffset i64]`.
//!
//! Master -> slave, big-endian, both with `[state i32][bodySize i32]
//! [offset i64][epoch i32]` first:
//! - handshake: that 20-byte header (`offset` is the master's CommitLog
//!   end, `epoch` its last epoch), then `bodySize / 12` epoch entries
//!   `[epoch i32][startOffset i64]`, oldest first;
//! - transfer: the header then `[epochStartOffset i64][confirmOffset i64]`
//!   (36 bytes), then `bodySize` bytes of CommitLog from `offset`, all of
//!   one epoch. A body of 0 bytes is a heartbeat.

use thiserror::Error;

/// Bytes of a slave's handshake.
pub const SLAVE_HANDSHAKE_BYTES: usize = 16;
/// Bytes of a slave's offset report.
pub const SLAVE_REPORT_BYTES: usize = 12;
/// Bytes of a master handshake's header (its epoch entries follow).
pub const MASTER_HANDSHAKE_HEADER_BYTES: usize = 20;
/// Bytes of a master transfer frame's header (its data follows).
pub const MASTER_TRANSFER_HEADER_BYTES: usize = 36;
/// Bytes of one epoch entry in a master handshake.
pub const EPOCH_ENTRY_BYTES: usize = 12;
/// Most epoch entries a handshake may carry: one per election, so far more
/// than a broker set sees; bounds what a bad peer can make us allocate.
pub const HANDSHAKE_EPOCHS_MAX: usize = 1 << 16;
/// Largest transfer body a slave accepts (the Java slave's read buffer).
pub const TRANSFER_BODY_BYTES_MAX: usize = 4 * 1024 * 1024;

// The layouts in the module doc, field by field.
const _: () = assert!(SLAVE_HANDSHAKE_BYTES == 4 + 2 + 2 + 8);
const _: () = assert!(SLAVE_REPORT_BYTES == 4 + 8);
const _: () = assert!(MASTER_HANDSHAKE_HEADER_BYTES == 4 + 4 + 8 + 4);
const _: () = assert!(MASTER_TRANSFER_HEADER_BYTES == MASTER_HANDSHAKE_HEADER_BYTES + 8 + 8);
const _: () = assert!(EPOCH_ENTRY_BYTES == 4 + 8);
// `bodySize` is an i32: the largest handshake and transfer bodies fit it.
const _: () = assert!(HANDSHAKE_EPOCHS_MAX * EPOCH_ENTRY_BYTES <= i32::MAX as usize);
const _: () = assert!(TRANSFER_BODY_BYTES_MAX <= i32::MAX as usize);

/// One epoch's first CommitLog position (`EpochEntry`): where the bytes
/// written under master epoch `epoch` begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

impl EpochEntry {
    pub fn new(epoch: i32, start_offset: i64) -> Self {
        Self {
            epoch,
            start_offset,
        }
    }
}

/// A connection's state (`HAConnectionState`), by its Java ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaState {
    Ready = 0,
    Handshake = 1,
    Transfer = 2,
    Suspend = 3,
    Shutdown = 4,
}

impl HaState {
    pub fn from_ordinal(ordinal: i32) -> Option<Self> {
        Some(match ordinal {
            0 => HaState::Ready,
            1 => HaState::Handshake,
            2 => HaState::Transfer,
            3 => HaState::Suspend,
            4 => HaState::Shutdown,
            _ => return None,
        })
    }

    pub fn ordinal(self) -> i32 {
        self as i32
    }
}

/// Why bytes on the stream are refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AutoSwitchError {
    #[error("unknown HA connection state {0}")]
    UnknownState(i32),
    #[error("a {sender} message in state {state:?} is not one this stream has")]
    UnexpectedState {
        sender: &'static str,
        state: HaState,
    },
    #[error("master handshake body of {0} bytes is not whole epoch entries or is too long")]
    BadEpochBody(i32),
    #[error("master handshake epochs do not both grow: {0:?} then {1:?}")]
    EpochsOutOfOrder(EpochEntry, EpochEntry),
    #[error("transfer body of {0} bytes (at most {TRANSFER_BODY_BYTES_MAX})")]
    BadTransferSize(i32),
    #[error("negative offset {0}")]
    NegativeOffset(i64),
}

/// A slave's handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaveHandshake {
    /// Start copying at the master's last segment instead of its first.
    pub sync_from_last_file: bool,
    /// A learner never joins the sync-state set.
    pub async_learner: bool,
    /// The slave's broker id (assigned by the controller).
    pub broker_id: i64,
}

/// What a slave sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaveMessage {
    Handshake(SlaveHandshake),
    /// The slave's CommitLog end.
    Report {
        max_offset: i64,
    },
}

impl SlaveMessage {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SLAVE_HANDSHAKE_BYTES);
        match self {
            SlaveMessage::Handshake(hello) => {
                out.extend_from_slice(&HaState::Handshake.ordinal().to_be_bytes());
                out.extend_from_slice(&i16::from(hello.sync_from_last_file).to_be_bytes());
                out.extend_from_slice(&i16::from(hello.async_learner).to_be_bytes());
                out.extend_from_slice(&hello.broker_id.to_be_bytes());
            }
            SlaveMessage::Report { max_offset } => {
                out.extend_from_slice(&HaState::Transfer.ordinal().to_be_bytes());
                out.extend_from_slice(&max_offset.to_be_bytes());
            }
        }
        out
    }

    /// The first message in `buf` and its length; `None` while incomplete.
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, AutoSwitchError> {
        let Some(state) = read_i32(buf, 0) else {
            return Ok(None);
        };
        match state_of(state)? {
            HaState::Handshake => {
                if buf.len() < SLAVE_HANDSHAKE_BYTES {
                    return Ok(None);
                }
                let hello = SlaveHandshake {
                    sync_from_last_file: read_i16(buf, 4) != Some(0),
                    async_learner: read_i16(buf, 6) != Some(0),
                    broker_id: read_i64(buf, 8).unwrap_or_default(),
                };
                Ok(Some((
                    SlaveMessage::Handshake(hello),
                    SLAVE_HANDSHAKE_BYTES,
                )))
            }
            HaState::Transfer => match read_i64(buf, 4) {
                Some(max_offset) if max_offset < 0 => {
                    Err(AutoSwitchError::NegativeOffset(max_offset))
                }
                Some(max_offset) => Ok(Some((
                    SlaveMessage::Report { max_offset },
                    SLAVE_REPORT_BYTES,
                ))),
                None => Ok(None),
            },
            state => Err(AutoSwitchError::UnexpectedState {
                sender: "slave",
                state,
            }),
        }
    }
}

/// A master transfer frame's header; `body_bytes` of CommitLog follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferHeader {
    /// The master's CommitLog position of the body's first byte.
    pub offset: i64,
    /// The epoch every byte of the body was written in, and its start.
    pub epoch: EpochEntry,
    /// Below this the master's log cannot be taken back by a failover.
    pub confirm_offset: i64,
    pub body_bytes: usize,
}

/// What a master sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterMessage {
    Handshake {
        /// The master's CommitLog end.
        max_offset: i64,
        last_epoch: i32,
        /// Every epoch the master knows, oldest first.
        epochs: Vec<EpochEntry>,
    },
    Transfer(TransferHeader),
}

impl MasterMessage {
    /// The message's bytes (for a transfer, its header only: the CommitLog
    /// bytes follow it on the wire).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            MasterMessage::Handshake {
                max_offset,
                last_epoch,
                epochs,
            } => {
                let body = epochs.len() * EPOCH_ENTRY_BYTES;
                let mut out = Vec::with_capacity(MASTER_HANDSHAKE_HEADER_BYTES + body);
                put_head(&mut out, HaState::Handshake, body, *max_offset, *last_epoch);
                for entry in epochs {
                    out.extend_from_slice(&entry.epoch.to_be_bytes());
                    out.extend_from_slice(&entry.start_offset.to_be_bytes());
                }
                out
            }
            MasterMessage::Transfer(head) => {
                assert!(
                    head.body_bytes <= TRANSFER_BODY_BYTES_MAX,
                    "a transfer frame larger than a slave reads"
                );
                let mut out = Vec::with_capacity(MASTER_TRANSFER_HEADER_BYTES);
                put_head(
                    &mut out,
                    HaState::Transfer,
                    head.body_bytes,
                    head.offset,
                    head.epoch.epoch,
                );
                out.extend_from_slice(&head.epoch.start_offset.to_be_bytes());
                out.extend_from_slice(&head.confirm_offset.to_be_bytes());
                out
            }
        }
    }

    /// The first message in `buf` and the bytes it took (a transfer's
    /// CommitLog bytes not included); `None` while incomplete.
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, AutoSwitchError> {
        if buf.len() < MASTER_HANDSHAKE_HEADER_BYTES {
            return Ok(None);
        }
        let state = read_i32(buf, 0).unwrap_or_default();
        let body = read_i32(buf, 4).unwrap_or_default();
        let offset = read_i64(buf, 8).unwrap_or_default();
        let epoch = read_i32(buf, 16).unwrap_or_default();
        if offset < 0 {
            return Err(AutoSwitchError::NegativeOffset(offset));
        }
        match state_of(state)? {
            HaState::Handshake => decode_handshake(buf, body, offset, epoch),
            HaState::Transfer => decode_transfer(buf, body, offset, epoch),
            state => Err(AutoSwitchError::UnexpectedState {
                sender: "master",
                state,
            }),
        }
    }
}

type Decoded = Result<Option<(MasterMessage, usize)>, AutoSwitchError>;

fn decode_handshake(buf: &[u8], body: i32, max_offset: i64, last_epoch: i32) -> Decoded {
    let count = usize::try_from(body)
        .ok()
        .filter(|bytes| bytes % EPOCH_ENTRY_BYTES == 0)
        .map(|bytes| bytes / EPOCH_ENTRY_BYTES)
        .filter(|&count| count <= HANDSHAKE_EPOCHS_MAX)
        .ok_or(AutoSwitchError::BadEpochBody(body))?;
    let total = MASTER_HANDSHAKE_HEADER_BYTES + count * EPOCH_ENTRY_BYTES;
    if buf.len() < total {
        return Ok(None);
    }
    let mut epochs: Vec<EpochEntry> = Vec::with_capacity(count);
    for index in 0..count {
        let at = MASTER_HANDSHAKE_HEADER_BYTES + index * EPOCH_ENTRY_BYTES;
        let entry = EpochEntry::new(
            read_i32(buf, at).unwrap_or_default(),
            read_i64(buf, at + 4).unwrap_or_default(),
        );
        if let Some(last) = epochs.last() {
            if last.epoch >= entry.epoch || last.start_offset >= entry.start_offset {
                return Err(AutoSwitchError::EpochsOutOfOrder(*last, entry));
            }
        }
        epochs.push(entry);
    }
    let message = MasterMessage::Handshake {
        max_offset,
        last_epoch,
        epochs,
    };
    Ok(Some((message, total)))
}

fn decode_transfer(buf: &[u8], body: i32, offset: i64, epoch: i32) -> Decoded {
    if buf.len() < MASTER_TRANSFER_HEADER_BYTES {
        return Ok(None);
    }
    let body_bytes = usize::try_from(body)
        .ok()
        .filter(|&bytes| bytes <= TRANSFER_BODY_BYTES_MAX)
        .ok_or(AutoSwitchError::BadTransferSize(body))?;
    let epoch_start = read_i64(buf, 20).unwrap_or_default();
    let confirm_offset = read_i64(buf, 28).unwrap_or_default();
    let head = TransferHeader {
        offset,
        epoch: EpochEntry::new(epoch, epoch_start),
        confirm_offset,
        body_bytes,
    };
    Ok(Some((
        MasterMessage::Transfer(head),
        MASTER_TRANSFER_HEADER_BYTES,
    )))
}

fn put_head(out: &mut Vec<u8>, state: HaState, body: usize, offset: i64, epoch: i32) {
    assert!(body <= i32::MAX as usize, "HA message body over 2 GiB");
    let body = body as i32;
    out.extend_from_slice(&state.ordinal().to_be_bytes());
    out.extend_from_slice(&body.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&epoch.to_be_bytes());
}

fn state_of(ordinal: i32) -> Result<HaState, AutoSwitchError> {
    HaState::from_ordinal(ordinal).ok_or(AutoSwitchError::UnknownState(ordinal))
}

fn read_i16(buf: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

fn read_i32(buf: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

fn read_i64(buf: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(buf.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests;

//! A slave's side of the HA stream (`DefaultHAClient`): connect to the
//! master's HA address, report the CommitLog's end (at once, after every
//! append and every `haSendHeartbeatInterval`), take the master's frames,
//! and append their bytes at the master's offsets. A link that breaks or
//! stays silent for `haHousekeepingInterval` is dropped and made again
//! after a back-off (0.5 s doubling to 5 s, Java's fixed retry).

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use ferrocket_protocol::ha::autoswitch::SlaveMessage;
use ferrocket_protocol::ha::{encode_report, FrameHeader, FRAME_HEADER_BYTES};
use ferrocket_runtime::sync::Notify;
use futures_lite::future;
use glommio::net::TcpStream;

use super::{within, HaStream, Intake, HA_CONNECT_TIMEOUT_MS};
use crate::clock::now_ms;
use crate::config::parse_host_port;
use crate::shard::Shard;

const BACKOFF_MS_MIN: u64 = 500;
const BACKOFF_MS_MAX: u64 = 5_000;
/// How long a slave may wait for its master's HA address before that is
/// worth a warning (a new slave learns it from its first registration).
const NO_MASTER_WARN_MS: u64 = 60_000;

/// The master's HA address: `haMasterAddress`, else what the name server
/// said in its REGISTER_BROKER answer.
fn master_ha_addr(shard: &Shard) -> Option<SocketAddr> {
    let config = shard.config();
    let configured = config.replication.ha_master_address.trim();
    if !configured.is_empty() {
        return parse_host_port(configured, "haMasterAddress").ok();
    }
    let control = shard.control().ok()?;
    let learnt = control.ha.master.borrow().ha_addr.clone()?;
    parse_host_port(&learnt, "haServerAddr").ok()
}

/// Keeps a link to the master until the shard stops (shard 0 of a slave).
pub(crate) async fn client_loop(shard: Rc<Shard>) {
    let mut backoff_ms = BACKOFF_MS_MIN;
    // When the wait for a master began, and whether it was said.
    let (mut waiting_since, mut said) = (None::<i64>, 0u8);
    loop {
        match master_ha_addr(&shard) {
            None => {
                let since = *waiting_since.get_or_insert_with(now_ms);
                let waited = now_ms().saturating_sub(since);
                if said == 0 {
                    tracing::info!("waiting for the master's HA address (haMasterAddress, or the name server's answer to this slave's registration)");
                    said = 1;
                } else if said == 1 && waited >= NO_MASTER_WARN_MS as i64 {
                    tracing::warn!(waited_ms = waited, "still no master HA address: set haMasterAddress, or check that the name server lists a master of this broker name");
                    said = 2;
                }
            }
            Some(addr) => {
                (waiting_since, said) = (None, 0);
                let reads_before = last_read_ms(&shard);
                let outcome = link(&shard, addr).await;
                set_connected(&shard, false);
                if last_read_ms(&shard) != reads_before {
                    // It worked for a while: try again soon.
                    backoff_ms = BACKOFF_MS_MIN;
                }
                match outcome {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(master = %addr, "HA link to the master: {e}"),
                }
            }
        }
        if shard
            .stopping()
            .interrupts_sleep(Duration::from_millis(backoff_ms))
            .await
        {
            return;
        }
        backoff_ms = (backoff_ms * 2).min(BACKOFF_MS_MAX);
    }
}

fn last_read_ms(shard: &Shard) -> i64 {
    shard
        .control()
        .map_or(0, |control| control.ha.master.borrow().last_read_ms)
}

fn set_connected(shard: &Shard, connected: bool) {
    if let Ok(control) = shard.control() {
        control.ha.master.borrow_mut().connected = connected;
    }
}

/// One link: `Ok` only when the shard stops.
async fn link(shard: &Rc<Shard>, addr: SocketAddr) -> io::Result<()> {
    let stream = within(HA_CONNECT_TIMEOUT_MS, "connecting", async {
        TcpStream::connect(addr)
            .await
            .map_err(|e| io::Error::other(e.to_string()))
    })
    .await?;
    let stream = HaStream::new(super::secure::connect(shard, stream, addr).await?);
    tracing::info!(master = %addr, end = shard.store().reader().written_offset(), "HA link to the master open");
    set_connected(shard, true);
    let grew = Notify::default();
    let work = async {
        if shard.config().controller_mode.enabled {
            super::auto_slave::handshake(shard, &stream).await?;
            let encode = |end: i64| SlaveMessage::Report { max_offset: end }.encode();
            return future::or(
                report(shard, &stream, &grew, encode),
                super::auto_slave::receive(shard, &stream, &grew),
            )
            .await;
        }
        let encode = |end: i64| encode_report(end).to_vec();
        future::or(
            report(shard, &stream, &grew, encode),
            receive(shard, &stream, &grew),
        )
        .await
    };
    let stopped = async {
        shard.stopping().wait().await;
        Ok(())
    };
    future::or(work, stopped).await
}

/// Reports the CommitLog's end at once, whenever it grew, and at least
/// every heartbeat interval.
/// (`encode`: the report's bytes, classic or AutoSwitch.)
async fn report(
    shard: &Shard,
    stream: &HaStream,
    grew: &Notify,
    encode: impl Fn(i64) -> Vec<u8>,
) -> io::Result<()> {
    let heartbeat = Duration::from_millis(shard.config().replication.ha_heartbeat_interval_ms);
    let write_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let reader = shard.store().reader();
    loop {
        let end = reader.written_offset();
        within(
            write_ms,
            "reporting to the master",
            stream.write_all(&encode(end)),
        )
        .await?;
        if let Ok(control) = shard.control() {
            control.ha.master.borrow_mut().last_write_ms = now_ms();
        }
        future::or(grew.wait(), glommio::timer::sleep(heartbeat)).await;
    }
}

/// Takes frames and appends their whole records.
async fn receive(shard: &Shard, stream: &HaStream, grew: &Notify) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let mut intake = Intake::new(shard.store().reader().written_offset());
    loop {
        let mut head = [0u8; FRAME_HEADER_BYTES];
        within(
            housekeeping_ms,
            "master frames",
            stream.read_exact(&mut head),
        )
        .await?;
        let header = FrameHeader::decode(&head)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        intake.check(header.offset, header.body_bytes)?;
        intake.take(shard, stream, header.body_bytes, grew).await?;
    }
}

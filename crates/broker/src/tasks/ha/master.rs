//! A master's side of the HA stream (`DefaultHAConnection`): the listener
//! on `haListenPort`, and per slave one task reading its offset reports
//! and one pushing the CommitLog to it, straight from the mapped segments
//! (the socket write is the only copy).

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferrocket_protocol::ha::{last_report, FrameHeader, REPORT_BYTES};
use ferrocket_runtime::server::{bind_listener, bind_waiting};
use futures_lite::future;
use glommio::net::{TcpListener, TcpStream};

use super::{frame_body, frame_end, start_offset, throttle, within, HaStream};
use crate::error::BrokerError;
use crate::services::replication::{HaState, SlaveLink};
use crate::shard::Shard;

/// Binds the HA listener (shard 0 of a master); a busy port fails the start.
pub(crate) fn bind(shard: &Shard) -> Result<TcpListener, BrokerError> {
    let config = shard.config();
    if config.replication.ha_tls_enable && shard.env().tls.is_none() {
        return Err(BrokerError::Config(
            "haTlsEnable needs TLS on the broker: tls.server.mode permissive or enforcing".into(),
        ));
    }
    let port = config.replication.ha_port(shard.env().listen.port())?;
    let addr = SocketAddr::new(config.listen_addr, port);
    let listener =
        bind_waiting(addr, || bind_listener(addr, false)).map_err(|source| BrokerError::Bind {
            addr,
            source,
            port_key: "haListenPort",
        })?;
    let bound = listener.local_addr().map_err(|e| BrokerError::Bind {
        addr,
        port_key: "haListenPort",
        source: std::io::Error::other(e.to_string()),
    })?;
    if let Some(control) = shard.control_plane() {
        control.ha.listen.set(Some(bound));
    }
    tracing::info!(%bound, "HA listener for slaves bound");
    Ok(listener)
}

/// Accepts slaves until the shard stops.
pub(crate) async fn accept_loop(shard: Rc<Shard>, listener: TcpListener) {
    loop {
        // (Finishes the accept in flight at stop: see `accept_unless`.)
        let stopping = std::pin::pin!(shard.stopping().wait());
        match ferrocket_runtime::server::accept_unless(&listener, stopping).await {
            None => return,
            Some(Ok(stream)) => {
                let link = serve_slave(Rc::clone(&shard), stream);
                shard
                    .tasks()
                    .spawn("HA link to a slave", shard.role().scoped(link));
            }
            Some(Err(e)) => {
                tracing::warn!("HA accept failed: {e}");
                if shard
                    .stopping()
                    .interrupts_sleep(Duration::from_millis(100))
                    .await
                {
                    return;
                }
            }
        }
    }
}

async fn serve_slave(shard: Rc<Shard>, stream: TcpStream) {
    let Ok(control) = shard.control() else {
        return;
    };
    let ha = &control.ha;
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let stream = match super::secure::accept(&shard, stream).await {
        Ok(stream) => HaStream::new(stream),
        Err(e) => {
            tracing::warn!(slave = %peer, "HA link refused: {e}");
            return;
        }
    };
    let link = ha.add_link(peer);
    tracing::info!(slave = %peer, "slave connected to the HA port");
    let work = async {
        if shard.config().controller_mode.enabled {
            return super::auto_master::serve(&shard, ha, &link, &stream).await;
        }
        future::or(
            read_reports(&shard, ha, &link, &stream),
            push_log(&shard, ha, &link, &stream),
        )
        .await
    };
    let stopped = async {
        shard.stopping().wait().await;
        Ok(())
    };
    // Removed however this ends (a master turning slave in place drops it):
    // a stale link's acks must never count for a later confirm offset.
    let _listed = Listed(ha, link.id);
    let outcome = future::or(work, stopped).await;
    match outcome {
        Ok(()) => tracing::info!(slave = %peer, "HA link closed"),
        Err(e) => tracing::warn!(slave = %peer, "HA link dropped: {e}"),
    }
}

/// Reads the slave's 8-byte reports; only the newest counts.
async fn read_reports(
    shard: &Shard,
    ha: &HaState,
    link: &SlaveLink,
    stream: &HaStream,
) -> io::Result<()> {
    let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
    let mut buf = [0u8; 64 * REPORT_BYTES];
    let mut filled = 0;
    loop {
        let n = within(
            housekeeping_ms,
            "slave reports",
            stream.read_some(&mut buf[filled..]),
        )
        .await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the slave closed the link",
            ));
        }
        filled += n;
        if let Some((offset, used)) = last_report(&buf[..filled]) {
            buf.copy_within(used..filled, 0);
            filled -= used;
            if offset < 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("negative offset report {offset}"),
                ));
            }
            ha.ack(link, offset);
        }
    }
}

/// Pushes the CommitLog from where the slave's first report says, a frame
/// of at most `haTransferBatchSize` at a time (never across segments), and
/// a heartbeat frame after `haSendHeartbeatInterval` without one.
async fn push_log(
    shard: &Shard,
    ha: &HaState,
    link: &SlaveLink,
    stream: &HaStream,
) -> io::Result<()> {
    let ha_config = &shard.config().replication;
    let mut next = start_offset(shard, ha.first_report(link).await)?;
    let reader = shard.store().reader();
    let heartbeat = Duration::from_millis(ha_config.ha_heartbeat_interval_ms);
    let write_ms = ha_config.ha_housekeeping_interval_ms;
    let mut last_write = Instant::now();
    loop {
        link.transfer_from.set(next);
        let seen = ha.written.epoch();
        let written = reader.written_offset();
        let idle_left = heartbeat.saturating_sub(last_write.elapsed());
        if next >= written && !idle_left.is_zero() {
            future::or(ha.written.since(seen), glommio::timer::sleep(idle_left)).await;
            continue;
        }
        // Nothing to send and the heartbeat due: an empty frame.
        let end = frame_end(shard, next, written, i64::MAX);
        throttle(shard, link, (end - next) as usize).await;
        let bytes = frame_body(shard, next, end).await?;
        let header = FrameHeader {
            offset: next,
            body_bytes: bytes.len(),
        }
        .encode();
        within(write_ms, "pushing to the slave", async {
            stream.write_all(&header).await?;
            stream.write_all(&bytes).await
        })
        .await?;
        next = end;
        last_write = Instant::now();
    }
}

/// Keeps a slave link in the HA state's list while it lives.
struct Listed<'a>(&'a HaState, u64);

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.0.remove_link(self.1);
    }
}

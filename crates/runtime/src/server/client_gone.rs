//! The flag that tells work held for a connection (a long poll, on any
//! shard) that its client is gone.

/// Tells work done for a connection, on any shard, that its client is gone
/// (the connection closed), so a long poll held for it ends instead of
/// running to its timeout. `Send`: it travels with a cross-shard call.
#[derive(Debug, Clone, Default)]
pub struct ClientGone(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl ClientGone {
    /// How often [`ClientGone::wait`] looks.
    const POLL_MS: u64 = 200;

    pub fn is_gone(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Completes (within 200 ms) once the client is gone; never otherwise.
    pub async fn wait(&self) {
        while !self.is_gone() {
            glommio::timer::sleep(std::time::Duration::from_millis(Self::POLL_MS)).await;
        }
    }
}

//! The fetcher: serves shards' requests for chunks of offloaded segments
//! (ranged GETs), puts them in the store's cache, and reads the next chunk
//! ahead so a consumer catching up rarely waits.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use futures_channel::{mpsc, oneshot};
use futures_lite::StreamExt;
use object_store::path::Path as ObjectPath;

use ferrocket_store::tier::{FetchFailure, FetchRequest, OffloadEntry, TierHandle};

use crate::backend::{explain, Backend};

type Waiters = Arc<Mutex<HashMap<i64, Vec<oneshot::Sender<Result<(), FetchFailure>>>>>>;

/// Serves requests until every sender is gone.
pub(crate) async fn serve(
    tier: TierHandle,
    backend: Backend,
    mut requests: mpsc::UnboundedReceiver<FetchRequest>,
) {
    let waiters: Waiters = Arc::default();
    while let Some(request) = requests.next().await {
        if tier.has_chunk(request.chunk_start) {
            let _ = request.reply.send(Ok(()));
            continue;
        }
        let first = {
            let mut waiting = waiters.lock().unwrap_or_else(|p| p.into_inner());
            let list = waiting.entry(request.chunk_start).or_default();
            list.push(request.reply);
            list.len() == 1
        };
        if first {
            let (tier, backend, waiters) =
                (Arc::clone(&tier), backend.clone(), Arc::clone(&waiters));
            let (start, len, entry) = (request.chunk_start, request.chunk_len, request.entry);
            tokio::spawn(async move {
                let result = fetch_chunk(&tier, &backend, &entry, start, len).await;
                let replies = waiters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&start)
                    .unwrap_or_default();
                for reply in replies {
                    let _ = reply.send(result.clone());
                }
                if result.is_ok() {
                    read_ahead(&tier, &backend, &entry, start + len as i64).await;
                }
            });
        }
    }
}

/// One ranged GET into the cache. An object the store does not have, or
/// one shorter than the range, is [`FetchFailure::Gone`]; any other error
/// [`FetchFailure::Failed`].
async fn fetch_chunk(
    tier: &TierHandle,
    backend: &Backend,
    entry: &OffloadEntry,
    start: i64,
    len: usize,
) -> Result<(), FetchFailure> {
    let from = (start - entry.start) as u64;
    let key = ObjectPath::from(entry.key.as_str());
    match backend.store.get_range(&key, from..from + len as u64).await {
        Ok(bytes) if bytes.len() == len => {
            tier.status.remote_reads.fetch_add(1, Ordering::Relaxed);
            tier.status
                .remote_read_bytes
                .fetch_add(len as u64, Ordering::Relaxed);
            tier.insert_chunk(start, bytes);
            Ok(())
        }
        Ok(bytes) => {
            tier.status
                .remote_read_failures
                .fetch_add(1, Ordering::Relaxed);
            Err(FetchFailure::Gone(format!(
                "{key} [{from}, +{len}) came back with {} bytes",
                bytes.len()
            )))
        }
        Err(e) => {
            tier.status
                .remote_read_failures
                .fetch_add(1, Ordering::Relaxed);
            let why = explain(&e);
            tracing::warn!(key = %key, error = %why, "tiered storage: read from the object store failed");
            Err(failure(&e, why))
        }
    }
}

/// What a failed GET says of the object: gone only when the store said it
/// has no such object; anything else (unreachable, 5xx, a timeout, a
/// refusal) may pass.
fn failure(error: &object_store::Error, why: String) -> FetchFailure {
    match error {
        object_store::Error::NotFound { .. } => FetchFailure::Gone(why),
        _ => FetchFailure::Failed(why),
    }
}

/// Fetches the chunk at `next` (in this segment or the next offloaded
/// one) when it is not cached yet.
async fn read_ahead(tier: &TierHandle, backend: &Backend, entry: &OffloadEntry, next: i64) {
    let segment = tier.offloaded.segment_bytes() as i64;
    let entry = match next < entry.start + segment {
        true => entry.clone(),
        false => match tier.offloaded.get(next) {
            Some(entry) => entry,
            None => return,
        },
    };
    let (start, len) = tier.chunk_at(next);
    if !tier.has_chunk(start) {
        let _ = fetch_chunk(tier, backend, &entry, start, len).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a store's "no such object" proves an object gone: an S3 5xx,
    /// a refused connection or a timeout does not.
    #[test]
    fn only_not_found_is_gone() {
        let missing = object_store::Error::NotFound {
            path: "a/b".into(),
            source: "404".into(),
        };
        assert!(matches!(
            failure(&missing, "x".into()),
            FetchFailure::Gone(_)
        ));
        for other in [
            crate::testing::s3_status_error("503 Service Unavailable"),
            object_store::Error::Generic {
                store: "S3",
                source: "error sending request: connection refused".into(),
            },
            object_store::Error::PermissionDenied {
                path: "a/b".into(),
                source: "403".into(),
            },
        ] {
            assert!(
                matches!(failure(&other, "x".into()), FetchFailure::Failed(_)),
                "{other}"
            );
        }
    }
}

//! The replica set's published manifest (`<prefix>/manifest.json`, beside
//! its `commitlog/` objects): only the set's master uploads, and after
//! every change to its manifest it publishes a copy. A slave adopts that
//! copy each pass (its reads, retention and local budget then count the
//! offloaded segments); a slave promoted to master adopts it once more and
//! uploads from where it ends.

use object_store::path::Path as ObjectPath;
use object_store::PutPayload;

use ferrocket_store::tier::TierHandle;
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, Backend};

fn manifest_key(backend: &Backend) -> ObjectPath {
    backend.manifest_key()
}

/// Publishes the master's manifest; answers whether it went through (else
/// the next pass tries again).
pub(crate) async fn publish(tier: &TierHandle, backend: &Backend) -> bool {
    let bytes = match tier.offloaded.encode() {
        Ok(bytes) => bytes,
        Err(e) => {
            tier.status.set_error(Some(e.to_string()));
            return false;
        }
    };
    let key = manifest_key(backend);
    match backend.store.put(&key, PutPayload::from(bytes)).await {
        Ok(_) => true,
        Err(e) => {
            let why = explain(&e);
            tracing::warn!(error = %why, "tiered storage: cannot publish the manifest; retried next pass");
            tier.status.set_error(Some(why));
            false
        }
    }
}

/// Adopts the set's published manifest up to this replica's CommitLog
/// end (`as_master`: keeping its own entries too). None published yet: the
/// local manifest stays. Answers whether it read the store (false: try
/// again).
pub(crate) async fn adopt(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
    as_master: bool,
) -> bool {
    let key = manifest_key(backend);
    let bytes = match backend.store.get(&key).await {
        Ok(got) => match got.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return failed(tier, &e),
        },
        Err(object_store::Error::NotFound { .. }) => return true,
        Err(e) => return failed(tier, &e),
    };
    match tier
        .offloaded
        .adopt(&bytes, reader.written_offset(), as_master)
    {
        Ok(changed) => {
            if changed {
                tracing::info!(
                    segments = tier.offloaded.len(),
                    "tiered storage: took the replica set's published manifest"
                );
            }
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "tiered storage: cannot take the published manifest");
            tier.status.set_error(Some(e.to_string()));
            false
        }
    }
}

fn failed(tier: &TierHandle, error: &object_store::Error) -> bool {
    let why = explain(error);
    tracing::warn!(error = %why, "tiered storage: cannot read the published manifest");
    tier.status.set_error(Some(why));
    false
}

//! Conditional writes of the set's manifest, and the fallback for an
//! S3-compatible store that refuses them: some answer `If-Match` or
//! `If-None-Match: *` with 400 or 501 (`NotImplemented`), which
//! `object_store` reports as a generic error. Retrying would fail forever
//! (nothing would be published again), so the write goes through plainly,
//! after the read's check (as with a directory), and the broker says so
//! once in its log and for as long as it runs in `tieredStoreStatus`.

use std::sync::atomic::Ordering;

use object_store::path::Path as ObjectPath;
use object_store::{PutMode, PutOptions, PutPayload};

use ferrocket_store::tier::TierStatus;

use crate::backend::{with_causes, Backend};

/// Writes `payload` at `key` in `mode`; a store without that condition
/// takes a plain write instead (the caller checked by a read before).
pub(crate) async fn put(
    status: &TierStatus,
    backend: &Backend,
    key: &ObjectPath,
    payload: PutPayload,
    mode: PutMode,
) -> Result<(), object_store::Error> {
    let conditional = !matches!(mode, PutMode::Overwrite);
    if !conditional
        || status
            .conditional_writes_unsupported
            .load(Ordering::Relaxed)
    {
        return backend.store.put(key, payload).await.map(|_| ());
    }
    match backend
        .store
        .put_opts(key, payload.clone(), PutOptions::from(mode))
        .await
    {
        Ok(_) => Ok(()),
        // A local directory: no conditional update (known, not worth a word).
        Err(object_store::Error::NotImplemented) => {
            backend.store.put(key, payload).await.map(|_| ())
        }
        Err(e) if refuses_conditions(&e) => {
            backend.store.put(key, payload).await?;
            if !status
                .conditional_writes_unsupported
                .swap(true, Ordering::Relaxed)
            {
                tracing::error!(store = %backend.describe, error = %with_causes(&e),
                    "tiered storage: the object store refuses conditional writes (If-Match / \
                     If-None-Match): the replica set's manifest is written after a read's check \
                     only, so a deposed master may overwrite a newer master's copy once");
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Whether a conditional put failed because the store does not do
/// conditional puts: 501 (`NotImplemented`) or 400 (a header it does not
/// take). A 400 for another reason fails the plain write too.
fn refuses_conditions(error: &object_store::Error) -> bool {
    match error {
        object_store::Error::NotImplemented => true,
        object_store::Error::Generic { .. } => {
            let text = with_causes(error);
            ["status code: 501", "status code: 400", "NotImplemented"]
                .iter()
                .any(|said| text.contains(said))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use ferrocket_store::tier::{TierBackend, TierConfig};
    use ferrocket_store::{MessageStore, StoreConfig};

    use crate::testing::Odd;

    /// A master publishing to a store that answers conditional writes with
    /// `status`: the manifest is published (not retried forever) and the
    /// status says conditional writes are unsupported.
    async fn publishes_despite(status: &'static str) {
        let store_dir = tempfile::tempdir().unwrap();
        let remote = tempfile::tempdir().unwrap();
        let tier_config = TierConfig::new(TierBackend::Posix {
            path: remote.path().to_path_buf(),
        });
        let mut backend = crate::open_backend(&tier_config).unwrap();
        let mut odd = Odd::new(Arc::clone(&backend.store));
        odd.refuse_conditions = Some(status);
        backend.store = Arc::new(odd);
        let mut config = StoreConfig::new(store_dir.path());
        config.tier = Some(tier_config);
        let (store, _parts) = MessageStore::open(config).unwrap();
        let tier = store.tier().unwrap();
        tier.set_master_epoch(2);
        let unsupported = || {
            tier.status
                .conditional_writes_unsupported
                .load(Ordering::Relaxed)
        };
        for _ in 0..2 {
            // The first copy (If-None-Match), then one over it (If-Match).
            let step = crate::follow::publish(&tier, &backend).await;
            assert_eq!(step, crate::follow::Step::Done, "{status}");
            assert!(unsupported(), "{status}");
        }
        let got = backend.store.get(&backend.manifest_key()).await.unwrap();
        let bytes = got.bytes().await.unwrap();
        assert_eq!(
            ferrocket_store::tier::Offloaded::decode_epoch(&bytes).unwrap(),
            2
        );
        // Another error is no reason to write plainly.
        let other = object_store::Error::Generic {
            store: "S3",
            source: "Server returned non-2xx status code: 503 Service Unavailable".into(),
        };
        assert!(!refuses_conditions(&other));
    }

    #[tokio::test]
    async fn a_store_answering_501_gets_plain_writes() {
        publishes_despite("501 Not Implemented").await;
    }

    #[tokio::test]
    async fn a_store_answering_400_gets_plain_writes() {
        publishes_despite("400 Bad Request").await;
    }

    /// A directory's missing conditional update is expected: not flagged.
    #[tokio::test]
    async fn a_directory_is_not_flagged() {
        let store_dir = tempfile::tempdir().unwrap();
        let remote = tempfile::tempdir().unwrap();
        let tier_config = TierConfig::new(TierBackend::Posix {
            path: remote.path().to_path_buf(),
        });
        let backend = crate::open_backend(&tier_config).unwrap();
        let mut config = StoreConfig::new(store_dir.path());
        config.tier = Some(tier_config);
        let (store, _parts) = MessageStore::open(config).unwrap();
        let tier = store.tier().unwrap();
        for _ in 0..2 {
            let step = crate::follow::publish(&tier, &backend).await;
            assert_eq!(step, crate::follow::Step::Done);
        }
        assert!(!tier
            .status
            .conditional_writes_unsupported
            .load(Ordering::Relaxed));
    }
}

//! Conditional writes of the set's manifest, and the fallback for an
//! S3-compatible store that refuses them: some answer `If-Match` or
//! `If-None-Match: *` with 501 or a 400 naming `NotImplemented` or the header, which
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
/// conditional puts: 501 or `NotImplemented`, or a 400 whose body names the
/// `If-Match` / `If-None-Match` header it does not take. Any other 400 (S3's
/// `RequestTimeout`, `IncompleteBody`, ...) is a failure to retry: writing
/// plainly then could overwrite a newer master's copy.
fn refuses_conditions(error: &object_store::Error) -> bool {
    match error {
        object_store::Error::NotImplemented => true,
        object_store::Error::Generic { .. } => {
            let text = with_causes(error);
            if text.contains("status code: 501") || text.contains("NotImplemented") {
                return true;
            }
            // object_store puts a 4xx answer's body after the status.
            match text.split_once("status code: 400") {
                Some((_, body)) => body.contains("If-Match") || body.contains("If-None-Match"),
                None => false,
            }
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
    async fn a_store_answering_400_not_implemented_gets_plain_writes() {
        publishes_despite(
            "400 Bad Request: <Error><Code>NotImplemented</Code><Message>A header you \
             provided implies functionality that is not implemented</Message></Error>",
        )
        .await;
    }

    #[tokio::test]
    async fn a_store_answering_400_naming_the_header_gets_plain_writes() {
        publishes_despite(
            "400 Bad Request: <Error><Code>InvalidArgument</Code><Message>Unsupported \
             header</Message><ArgumentName>If-None-Match</ArgumentName></Error>",
        )
        .await;
    }

    /// A 400 for a transient reason (S3's `RequestTimeout`, `IncompleteBody`)
    /// is retried: no plain write (it could overwrite a newer master's
    /// copy), and the store is not marked as refusing conditions.
    #[tokio::test]
    async fn a_transient_400_is_retried_not_written_plainly() {
        for status in [
            "400 Bad Request: <Error><Code>RequestTimeout</Code><Message>Your socket \
             connection to the server was not read from or written to within the timeout \
             period.</Message></Error>",
            "400 Bad Request: <Error><Code>IncompleteBody</Code><Message>You did not provide \
             the number of bytes specified by the Content-Length HTTP header</Message></Error>",
            "400 Bad Request: ",
        ] {
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
            let step = crate::follow::publish(&tier, &backend).await;
            assert_eq!(step, crate::follow::Step::Retry, "{status}");
            assert!(
                backend.store.head(&backend.manifest_key()).await.is_err(),
                "{status}: written plainly"
            );
            assert!(!tier
                .status
                .conditional_writes_unsupported
                .load(Ordering::Relaxed));
        }
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

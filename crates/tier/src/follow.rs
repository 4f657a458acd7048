//! The replica set's published manifest (`<prefix>/manifest.json`, beside
//! its `commitlog/` objects): only the set's master uploads, and after
//! every change to its manifest it publishes a copy. A slave adopts that
//! copy each pass (its reads, retention and local budget then count the
//! offloaded segments); a slave promoted to master adopts it once more and
//! uploads from where it ends.
//!
//! Fencing (controller mode): the copy carries the controller epoch of the
//! master that published it. A master that finds a higher epoch there is a
//! deposed one still reaching the store: it publishes, uploads and deletes
//! nothing more ([`Step::Fenced`]). Its write replaces exactly the copy it
//! read (`PutMode::Update` with that copy's ETag, or `PutMode::Create` when
//! there was none) where the store supports conditional writes (S3); on a
//! store that does not (a local directory) the read before is the only
//! check. Replicas ignore a copy of an epoch older than one they adopted.
//! The copy also carries the publisher's epoch list (its lineage): a
//! replica, or a newly promoted master, takes only the entries that end
//! where its own log and the publisher's still agree (the fork-point rule),
//! so a deposed master's copy of bytes past the fork is never taken.

use std::collections::HashSet;

use bytes::Bytes;
use object_store::{PutMode, PutPayload, UpdateVersion};

use ferrocket_store::tier::{Adopted, Offloaded, TierHandle, TierStatus};
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, Backend};

/// How a step against the set's published manifest went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Done,
    /// Not now (the store failed, or the copy changed meanwhile): the next
    /// pass tries again.
    Retry,
    /// The published copy carries this epoch, above this master's.
    Fenced(i32),
}

/// The set's published manifest as read.
struct Published {
    bytes: Bytes,
    epoch: i32,
    /// What a conditional write replacing it names.
    version: UpdateVersion,
}

/// Reads the published manifest (`None`: none yet); `Err` when it cannot
/// be read now (logged, and the tier's status says why).
async fn read_published(tier: &TierHandle, backend: &Backend) -> Result<Option<Published>, ()> {
    let key = backend.manifest_key();
    let got = match backend.store.get(&key).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => {
            failed(tier, &e);
            return Err(());
        }
    };
    let version = UpdateVersion {
        e_tag: got.meta.e_tag.clone(),
        version: got.meta.version.clone(),
    };
    let bytes = match got.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => {
            failed(tier, &e);
            return Err(());
        }
    };
    match Offloaded::decode_epoch(&bytes) {
        Ok(epoch) => Ok(Some(Published {
            bytes,
            epoch,
            version,
        })),
        Err(e) => {
            tracing::warn!(error = %e, "tiered storage: cannot take the published manifest");
            tier.status.set_error(Some(e.to_string()));
            Err(())
        }
    }
}

/// Whether a published copy of `published` epoch fences this master: a
/// higher epoch than its own, in controller mode (outside it, epoch 0,
/// nothing is fenced).
fn fences(tier: &TierHandle, published: i32) -> bool {
    let epoch = tier.master_epoch();
    epoch > 0 && published > epoch
}

/// The keys the set's published manifest names now, read just before a
/// sweep deletes (none of them is deleted): `Err(Step::Fenced)` when it
/// carries a higher epoch than this master's (a deposed master sweeps
/// nothing), `Err(Step::Retry)` when it cannot be read or taken now.
pub(crate) async fn published_keys(
    tier: &TierHandle,
    backend: &Backend,
) -> Result<HashSet<String>, Step> {
    let Some(published) = read_published(tier, backend)
        .await
        .map_err(|()| Step::Retry)?
    else {
        return Ok(HashSet::new());
    };
    if fences(tier, published.epoch) {
        return Err(Step::Fenced(published.epoch));
    }
    match Offloaded::decode(&published.bytes) {
        Ok(entries) => Ok(entries.into_iter().map(|entry| entry.key).collect()),
        Err(e) => {
            tracing::warn!(error = %e, "tiered storage: cannot take the published manifest");
            tier.status.set_error(Some(e.to_string()));
            Err(Step::Retry)
        }
    }
}

/// Publishes the master's manifest under its epoch, replacing the copy it
/// read first (none of a higher epoch).
pub(crate) async fn publish(tier: &TierHandle, backend: &Backend) -> Step {
    let epoch = tier.master_epoch();
    let prior = match read_published(tier, backend).await {
        Ok(prior) => prior,
        Err(()) => return Step::Retry,
    };
    if let Some(prior) = prior.as_ref().filter(|prior| fences(tier, prior.epoch)) {
        return Step::Fenced(prior.epoch);
    }
    // Replicas that took a copy of a higher epoch would ignore this one.
    if fences(tier, tier.offloaded.epoch()) {
        return Step::Fenced(tier.offloaded.epoch());
    }
    let bytes = match tier
        .epochs()
        .and_then(|epochs| tier.offloaded.encode(epoch, &epochs))
    {
        Ok(bytes) => bytes,
        Err(e) => {
            tier.status.set_error(Some(e.to_string()));
            return Step::Retry;
        }
    };
    let prior = prior.map(|prior| prior.version);
    match put_manifest(&tier.status, backend, bytes, prior).await {
        Ok(()) => {
            if let Err(e) = tier.offloaded.note_epoch(epoch) {
                tracing::warn!(error = %e, "tiered storage: cannot note the published epoch");
            }
            Step::Done
        }
        Err(
            e @ (object_store::Error::Precondition { .. }
            | object_store::Error::AlreadyExists { .. }),
        ) => {
            tracing::info!(error = %explain(&e),
                "tiered storage: the published manifest changed while publishing; read again next pass");
            Step::Retry
        }
        Err(e) => {
            let why = explain(&e);
            tracing::warn!(error = %why, "tiered storage: cannot publish the manifest; retried next pass");
            tier.status.set_error(Some(why));
            Step::Retry
        }
    }
}

/// Writes the manifest's copy: only over the version read (`prior`), or
/// only where none is (`None`). A store without conditional writes (a
/// local directory, or an S3-compatible store refusing them: `status`
/// says so) takes a plain write ([`crate::conditional::put`]).
async fn put_manifest(
    status: &TierStatus,
    backend: &Backend,
    bytes: Vec<u8>,
    prior: Option<UpdateVersion>,
) -> Result<(), object_store::Error> {
    let key = backend.manifest_key();
    let mode = match prior {
        None => PutMode::Create,
        Some(version) if version.e_tag.is_some() || version.version.is_some() => {
            PutMode::Update(version)
        }
        // A store that names no version of what it served.
        Some(_) => PutMode::Overwrite,
    };
    crate::conditional::put(status, backend, &key, PutPayload::from(bytes), mode).await
}

/// Adopts the set's published manifest up to this replica's CommitLog
/// end (`as_master`: keeping its own entries too). None published yet: the
/// local manifest stays. A master finding a copy of a higher epoch than its
/// own adopts nothing ([`Step::Fenced`]).
pub(crate) async fn adopt(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
    as_master: bool,
) -> Step {
    let published = match read_published(tier, backend).await {
        Ok(Some(published)) => published,
        Ok(None) => return Step::Done,
        Err(()) => return Step::Retry,
    };
    if as_master && fences(tier, published.epoch) {
        return Step::Fenced(published.epoch);
    }
    let end = reader.written_offset();
    let taken = tier.epochs().and_then(|epochs| {
        tier.offloaded.adopt(
            &published.bytes,
            end,
            &epochs,
            tier.config.epoch_base,
            as_master,
        )
    });
    match taken {
        Ok(Adopted::Changed) => {
            tracing::info!(
                segments = tier.offloaded.len(),
                epoch = published.epoch,
                "tiered storage: took the replica set's published manifest"
            );
            Step::Done
        }
        Ok(Adopted::Same) => Step::Done,
        Ok(Adopted::Unproven { epoch }) => {
            let why = format!(
                "the replica set's published manifest (epoch {epoch}) carries no lineage (a \
                 Ferrocket before lineages, or a master whose epochs started again, published \
                 it) and this broker's log holds no bytes of that epoch: none of its entries is \
                 taken, since nothing tells where the two logs agree; check that every broker of \
                 the set has the same tieredStoreEpochBase"
            );
            if tier.status.last_error() != why {
                tracing::warn!(epoch, "tiered storage: {why}");
            }
            tier.status.set_error(Some(why));
            Step::Done
        }
        // A master below an epoch it took itself (controller epochs went
        // backwards): publishing would put a copy every replica ignores.
        Ok(Adopted::Stale { seen, .. }) if as_master && seen > tier.master_epoch() => {
            Step::Fenced(seen)
        }
        Ok(Adopted::Stale { published, seen }) => {
            tracing::debug!(
                published,
                seen,
                "tiered storage: ignored a published manifest of an older epoch"
            );
            Step::Done
        }
        Err(e) => {
            tracing::warn!(error = %e, "tiered storage: cannot take the published manifest");
            tier.status.set_error(Some(e.to_string()));
            Step::Retry
        }
    }
}

fn failed(tier: &TierHandle, error: &object_store::Error) {
    let why = explain(error);
    tracing::warn!(error = %why, "tiered storage: cannot read the published manifest");
    tier.status.set_error(Some(why));
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_store::tier::{S3Settings, TierBackend, TierConfig};

    async fn version_of(backend: &Backend) -> UpdateVersion {
        let meta = backend.store.head(&backend.manifest_key()).await.unwrap();
        UpdateVersion {
            e_tag: meta.e_tag,
            version: meta.version,
        }
    }

    async fn published(backend: &Backend) -> Vec<u8> {
        let got = backend.store.get(&backend.manifest_key()).await.unwrap();
        got.bytes().await.unwrap().to_vec()
    }

    /// A local directory: a first copy only where none is; no conditional
    /// update (`NotImplemented`), so a plain write after the read's check.
    #[tokio::test]
    async fn a_directory_creates_once_then_writes_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let config = TierConfig::new(TierBackend::Posix {
            path: dir.path().to_path_buf(),
        });
        let backend = crate::open_backend(&config).unwrap();
        put_manifest(&TierStatus::default(), &backend, b"one".to_vec(), None)
            .await
            .unwrap();
        let again = put_manifest(&TierStatus::default(), &backend, b"two".to_vec(), None).await;
        assert!(
            matches!(again, Err(object_store::Error::AlreadyExists { .. })),
            "{again:?}"
        );
        let stale = version_of(&backend).await;
        put_manifest(
            &TierStatus::default(),
            &backend,
            b"three".to_vec(),
            Some(stale.clone()),
        )
        .await
        .unwrap();
        assert_eq!(published(&backend).await, b"three");
    }

    /// `s3s-fs` (the S3-compatible server the tests run, when installed):
    /// If-None-Match and If-Match are honoured, so a copy read before
    /// another write is never written over.
    #[tokio::test]
    async fn s3_writes_only_over_the_copy_read() {
        let binary = std::env::var_os("FERROCKET_S3S_FS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/s3s/bin/s3s-fs")
            });
        if !binary.exists() {
            assert!(
                std::env::var_os("FERROCKET_TEST_ALL").is_none(),
                "scripts/test-all.sh should have installed s3s-fs at {}",
                binary.display()
            );
            eprintln!("SKIPPED: no s3s-fs at {}", binary.display());
            return;
        }
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("fence")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = std::process::Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", "k", "--secret-key", "s"])
            .arg(root.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let config = TierConfig::new(TierBackend::S3(S3Settings {
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: "fence".into(),
            region: "us-east-1".into(),
            access_key: "k".into(),
            secret_key: "s".into(),
            prefix: String::new(),
        }));
        let backend = crate::open_backend(&config).unwrap();
        let outcome = s3_checks(&backend).await;
        let _ = server.kill();
        let _ = server.wait();
        outcome.unwrap();
    }

    async fn s3_checks(backend: &Backend) -> Result<(), String> {
        put_manifest(&TierStatus::default(), backend, b"one".to_vec(), None)
            .await
            .map_err(|e| e.to_string())?;
        match put_manifest(&TierStatus::default(), backend, b"two".to_vec(), None).await {
            Err(object_store::Error::AlreadyExists { .. }) => {}
            other => return Err(format!("a second create: {other:?}")),
        }
        let read = version_of(backend).await;
        // Another master writes meanwhile.
        put_manifest(
            &TierStatus::default(),
            backend,
            b"newer".to_vec(),
            Some(read.clone()),
        )
        .await
        .map_err(|e| e.to_string())?;
        match put_manifest(
            &TierStatus::default(),
            backend,
            b"older".to_vec(),
            Some(read),
        )
        .await
        {
            Err(object_store::Error::Precondition { .. }) => {}
            other => return Err(format!("a write over a changed copy: {other:?}")),
        }
        match published(backend).await.as_slice() {
            b"newer" => Ok(()),
            other => Err(format!("published {:?}", String::from_utf8_lossy(other))),
        }
    }
}

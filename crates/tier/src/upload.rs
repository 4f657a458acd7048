//! The upload pass: every sealed local segment without a verified remote
//! copy is uploaded, read back, checked (size and CRC32) and only then
//! recorded in the manifest.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_lite::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{MultipartUpload, PutPayload, WriteMultipart};

use ferrocket_store::tier::{OffloadEntry, TierHandle};
use ferrocket_store::CommitLogReader;

use crate::backend::{explain, uploader_tag, Backend};

/// Bytes read from a segment file and sent at a time.
const PART_BYTES: usize = 8 << 20;

/// Why one segment's upload failed.
enum UploadError {
    /// Retention removed the file meanwhile: nothing to do.
    Gone,
    Failed(String),
}

/// Uploads what is pending, oldest first; stops at the first failure
/// (the store is likely down: the next pass tries again). Answers whether
/// it recorded any segment.
pub(crate) async fn pass(
    tier: &TierHandle,
    backend: &Backend,
    reader: &CommitLogReader,
    stop: &AtomicBool,
) -> bool {
    let pending: Vec<(i64, PathBuf)> = reader
        .sealed_segments()
        .into_iter()
        .filter(|(start, _)| !tier.offloaded.may_drop_locally(*start))
        .collect();
    let mut recorded = false;
    for (index, (start, path)) in pending.iter().enumerate() {
        // Demoted in place: only the set's master uploads and records.
        if stop.load(Ordering::Acquire) || reader.is_replica() {
            return recorded;
        }
        let size = tier.offloaded.segment_bytes();
        let tag = uploader_tag(&tier.uploader, tier.master_epoch());
        match upload_segment(backend, &tag, *start, path, size).await {
            Ok(_) if reader.is_replica() => return recorded,
            Ok(entry) => {
                if let Err(e) = tier.offloaded.record(entry) {
                    tracing::error!(start, error = %e, "tiered storage: cannot record an uploaded segment");
                    tier.status.set_error(Some(e.to_string()));
                    return recorded;
                }
                recorded = true;
                tier.status
                    .uploaded_segments
                    .fetch_add(1, Ordering::Relaxed);
                tier.status
                    .uploaded_bytes
                    .fetch_add(tier.offloaded.segment_bytes(), Ordering::Relaxed);
                tier.status.set_error(None);
                tracing::info!(start, store = %backend.describe, "tiered storage: segment offloaded and verified");
            }
            Err(UploadError::Gone) => {}
            Err(UploadError::Failed(why)) => {
                tier.status.upload_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(start, store = %backend.describe, error = %why, pending = pending.len() - index,
                    "tiered storage: upload failed; segments stay local until the object store takes them");
                tier.status.set_error(Some(why));
                return recorded;
            }
        }
    }
    recorded
}

/// Uploads one segment file and verifies the remote copy.
async fn upload_segment(
    backend: &Backend,
    uploader: &str,
    start: i64,
    path: &Path,
    size: u64,
) -> Result<OffloadEntry, UploadError> {
    let key = backend.segment_key(start, uploader);
    let written_ms = tokio::fs::metadata(path)
        .await
        .and_then(|meta| meta.modified())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => UploadError::Gone,
            _ => UploadError::Failed(format!("reading the segment's mtime: {e}")),
        })?
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let crc32 = send_file(backend, &key, path, size).await?;
    verify(backend, &key, size, crc32).await?;
    let uploaded_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Ok(OffloadEntry {
        start,
        size,
        crc32,
        key: key.to_string(),
        uploaded_ms,
        written_ms,
    })
}

/// Reads `[at, at + len)` of a file off the runtime's workers.
async fn read_part(path: &Path, at: u64, len: usize) -> Result<Bytes, UploadError> {
    let path = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(&path)?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, at)?;
        Ok::<_, std::io::Error>(Bytes::from(buf))
    })
    .await
    .map_err(|e| UploadError::Failed(format!("segment read task: {e}")))?;
    read.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => UploadError::Gone,
        _ => UploadError::Failed(format!("reading the segment: {e}")),
    })
}

/// Sends the file (one PUT, or a multipart upload when larger than a
/// part) and returns the CRC32 of what was sent.
async fn send_file(
    backend: &Backend,
    key: &ObjectPath,
    path: &Path,
    size: u64,
) -> Result<u32, UploadError> {
    let failed = |e: object_store::Error| UploadError::Failed(explain(&e));
    let mut crc = crc32fast::Hasher::new();
    if size <= PART_BYTES as u64 {
        let bytes = read_part(path, 0, size as usize).await?;
        crc.update(&bytes);
        backend
            .store
            .put(key, PutPayload::from(bytes))
            .await
            .map_err(failed)?;
        return Ok(crc.finalize());
    }
    let upload = backend.store.put_multipart(key).await.map_err(failed)?;
    send_parts(upload, path, size, &mut crc).await?;
    Ok(crc.finalize())
}

/// Sends the file as the parts of `upload`; on any error the upload is
/// aborted (its parts deleted) before the error is returned. A process
/// killed meanwhile leaves an incomplete upload the store keeps until a
/// bucket lifecycle rule ends it (README, "Tiered storage").
async fn send_parts(
    upload: Box<dyn MultipartUpload>,
    path: &Path,
    size: u64,
    crc: &mut crc32fast::Hasher,
) -> Result<(), UploadError> {
    let failed = |e: object_store::Error| UploadError::Failed(explain(&e));
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
    let mut at = 0u64;
    while at < size {
        let len = PART_BYTES.min((size - at) as usize);
        let part = match read_part(path, at, len).await {
            Ok(part) => part,
            Err(e) => return abort(writer, e).await,
        };
        crc.update(&part);
        if let Err(e) = writer.wait_for_capacity(4).await {
            return abort(writer, failed(e)).await;
        }
        writer.put(part);
        at += len as u64;
    }
    // Every part in: a failed one aborts here (`finish` aborts only when
    // the completion itself fails).
    if let Err(e) = writer.wait_for_capacity(0).await {
        return abort(writer, failed(e)).await;
    }
    writer.finish().await.map_err(failed)?;
    Ok(())
}

/// Aborts a multipart upload that failed, and answers `error`.
async fn abort(writer: WriteMultipart, error: UploadError) -> Result<(), UploadError> {
    if let Err(e) = writer.abort().await {
        tracing::warn!(error = %explain(&e),
            "tiered storage: cannot abort a failed multipart upload; a bucket lifecycle rule ends it");
    }
    Err(error)
}

/// Reads the remote copy back: its size and CRC32 must match.
async fn verify(
    backend: &Backend,
    key: &ObjectPath,
    size: u64,
    crc32: u32,
) -> Result<(), UploadError> {
    let failed = |e: object_store::Error| UploadError::Failed(explain(&e));
    let meta = backend.store.head(key).await.map_err(failed)?;
    if meta.size != size {
        return Err(UploadError::Failed(format!(
            "remote copy of {key} has {} bytes, expected {size}",
            meta.size
        )));
    }
    let mut stream = backend.store.get(key).await.map_err(failed)?.into_stream();
    let mut crc = crc32fast::Hasher::new();
    let mut read = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(failed)?;
        read += chunk.len() as u64;
        crc.update(&chunk);
    }
    let got = crc.finalize();
    if read != size || got != crc32 {
        return Err(UploadError::Failed(format!(
            "remote copy of {key} does not match: {read} bytes, CRC32 {got:08x}, expected {size} bytes, {crc32:08x}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// A multipart upload whose parts all fail; counts its aborts.
    #[derive(Debug)]
    struct FailingUpload(Arc<AtomicUsize>);

    type Answer<'a, T> = Pin<Box<dyn Future<Output = object_store::Result<T>> + Send + 'a>>;

    impl MultipartUpload for FailingUpload {
        fn put_part(&mut self, _data: PutPayload) -> object_store::UploadPart {
            Box::pin(async {
                Err(object_store::Error::Generic {
                    store: "test",
                    source: "the store failed a part".into(),
                })
            })
        }

        fn complete<'a, 'b>(&'a mut self) -> Answer<'b, object_store::PutResult>
        where
            'a: 'b,
            Self: 'b,
        {
            Box::pin(async {
                Ok(object_store::PutResult {
                    e_tag: None,
                    version: None,
                })
            })
        }

        fn abort<'a, 'b>(&'a mut self) -> Answer<'b, ()>
        where
            'a: 'b,
            Self: 'b,
        {
            Box::pin(async move {
                self.0.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
        }
    }

    /// A deposed master cut off from the controller and the new master
    /// both upload the segment at 0, the deposed one last: each entry's key
    /// still names the bytes its CRC32 was taken of.
    #[tokio::test]
    async fn two_uploaders_of_one_start_write_different_objects() {
        use ferrocket_store::tier::{TierBackend, TierConfig};
        let dir = tempfile::tempdir().unwrap();
        let mut config = TierConfig::new(TierBackend::Posix {
            path: dir.path().join("remote"),
        });
        config.owner = "c1/broker-a".into();
        let backend = crate::open_backend(&config).unwrap();
        let size = 4096usize;
        let (new_master, zombie) = (dir.path().join("new"), dir.path().join("zombie"));
        std::fs::write(&new_master, vec![1u8; size]).unwrap();
        std::fs::write(&zombie, vec![2u8; size]).unwrap();
        let ours = upload_segment(&backend, "00000000000000aa", 0, &new_master, size as u64);
        let ours = ours.await.ok().unwrap();
        let theirs = upload_segment(&backend, "00000000000000bb", 0, &zombie, size as u64);
        let theirs = theirs.await.ok().unwrap();
        assert_ne!(ours.key, theirs.key);
        assert_eq!(
            ours.key,
            "c1/broker-a/commitlog/00000000000000000000.00000000000000aa"
        );
        // What a reader of the manifest does: a ranged GET of the entry's key.
        let key = ObjectPath::from(ours.key.as_str());
        let read = backend.store.get_range(&key, 0..size as u64).await.unwrap();
        assert_eq!(&read[..], &vec![1u8; size][..]);
        assert_eq!(crc32fast::hash(&read), ours.crc32);
        assert_ne!(ours.crc32, theirs.crc32);
    }

    #[tokio::test]
    async fn a_failed_part_aborts_the_multipart_upload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment");
        let size = PART_BYTES + 4096;
        std::fs::write(&path, vec![7u8; size]).unwrap();
        let aborts = Arc::new(AtomicUsize::new(0));
        let upload = Box::new(FailingUpload(Arc::clone(&aborts)));
        let mut crc = crc32fast::Hasher::new();
        let sent = send_parts(upload, &path, size as u64, &mut crc).await;
        assert!(matches!(sent, Err(UploadError::Failed(_))));
        assert_eq!(aborts.load(Ordering::Relaxed), 1);
    }
}

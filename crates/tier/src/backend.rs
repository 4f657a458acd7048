//! The object store behind the tier: a local directory or an S3 bucket,
//! and how its errors read.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use ferrocket_store::tier::{S3Settings, TierBackend, TierConfig, TierHandle};

use crate::TierError;

/// The store and the key prefix segments go under.
#[derive(Clone)]
pub struct Backend {
    pub store: Arc<dyn ObjectStore>,
    /// `tieredStoreFilePath` with S3 (empty for a directory), then the
    /// replica set's own `cluster/brokerName`: everything this set writes,
    /// lists or sweeps is under it. Objects an older layout wrote
    /// (`<tieredStoreFilePath>/commitlog/...`) stay readable through the
    /// keys their manifest entries name; they are not moved.
    pub prefix: String,
    /// What to name in logs: `s3://bucket/prefix` or the directory.
    pub describe: String,
}

impl Backend {
    /// The "directory" this replica set's segments go in.
    pub fn segment_dir(&self) -> ObjectPath {
        match self.prefix.is_empty() {
            true => ObjectPath::from("commitlog"),
            false => ObjectPath::from(format!("{}/commitlog", self.prefix)),
        }
    }

    /// The object key of the CommitLog segment starting at `start` as
    /// `uploader` (the store's id, [`ferrocket_store::tier::UPLOADER_FILE`])
    /// uploads it: `{start:020}.{uploader}`. Two brokers of the set that
    /// both upload a start (a deposed master still reaching the store, and
    /// the new master) write different objects, so an entry's key always
    /// names the bytes its CRC32 was taken of. Empty `uploader`: the layout
    /// before ids (`{start:020}`), still read through manifest keys.
    pub fn segment_key(&self, start: i64, uploader: &str) -> ObjectPath {
        let mut name = ferrocket_store::offset_file_name(start);
        if !uploader.is_empty() {
            name.push('.');
            name.push_str(uploader);
        }
        self.segment_dir().child(name)
    }

    /// Whether `key` is an object of the segment at `start` that
    /// `uploader` uploaded, under any epoch ([`uploader_tag`]).
    pub fn uploaded_by(&self, key: &str, start: i64, uploader: &str) -> bool {
        let own = self.segment_key(start, uploader);
        let own = own.as_ref();
        key == own
            || key
                .strip_prefix(own)
                .is_some_and(|rest| rest.starts_with(".e"))
    }

    fn with_owner(mut self, owner: &str) -> Self {
        let owner = owner.trim_matches('/');
        if !owner.is_empty() {
            self.prefix = match self.prefix.is_empty() {
                true => owner.to_string(),
                false => format!("{}/{owner}", self.prefix),
            };
            self.describe = format!("{}/{owner}", self.describe.trim_end_matches('/'));
        }
        self
    }

    /// The object key of the manifest's remote copy (beside `commitlog/`,
    /// so listing the segments never meets it).
    pub fn manifest_key(&self) -> ObjectPath {
        let name = ferrocket_store::tier::MANIFEST_FILE;
        match self.prefix.is_empty() {
            true => ObjectPath::from(name),
            false => ObjectPath::from(format!("{}/{name}", self.prefix)),
        }
    }
}

/// What a store's uploads are named by ([`Backend::segment_key`]): its
/// uploader id and, in controller mode, `.e{epoch}`, the epoch it is master
/// of. A block-level clone of a disk keeps the directory's device and
/// inode, so two stores can share an uploader id; two masters of a set
/// never share an epoch, so they still write different objects. Keys
/// written before (`{start:020}.{uploader}`) stay readable: manifest
/// entries name their keys.
pub fn uploader_tag(uploader: &str, epoch: i32) -> String {
    match epoch {
        0 => uploader.to_string(),
        epoch => format!("{uploader}.e{epoch}"),
    }
}

/// The start offset a segment object's file name holds: `{start:020}`
/// (the layout before uploader ids) or `{start:020}.{uploader}`.
pub fn segment_start(name: &str) -> Option<i64> {
    let digits = name.split_once('.').map_or(name, |(digits, _)| digits);
    match digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

/// The epoch a segment object's file name is tagged with
/// (`{start:020}.{uploader}.e{epoch}`, [`uploader_tag`]); `None` for an
/// untagged name.
pub fn segment_epoch(name: &str) -> Option<i32> {
    let mut parts = name.splitn(3, '.');
    segment_start(parts.next()?)?;
    let _uploader = parts.next()?;
    parts.next()?.strip_prefix('e')?.parse().ok()
}

/// Opens the configured store under the replica set's own prefix (no
/// network yet).
pub fn open_backend(config: &TierConfig) -> Result<Backend, TierError> {
    Ok(open_store(&config.backend)?.with_owner(&config.owner))
}

fn open_store(backend: &TierBackend) -> Result<Backend, TierError> {
    match backend {
        TierBackend::Posix { path } => {
            std::fs::create_dir_all(path).map_err(|e| {
                TierError::Config(format!("tieredStoreFilePath {}: {e}", path.display()))
            })?;
            let store = LocalFileSystem::new_with_prefix(path).map_err(|e| {
                TierError::Config(format!("tieredStoreFilePath {}: {e}", path.display()))
            })?;
            Ok(Backend {
                store: Arc::new(store),
                prefix: String::new(),
                describe: path.display().to_string(),
            })
        }
        TierBackend::S3(s3) => open_s3(s3),
    }
}

fn open_s3(s3: &S3Settings) -> Result<Backend, TierError> {
    if s3.bucket.is_empty() {
        return Err(TierError::Config(
            "objectStoreBucket is required with the S3 provider".into(),
        ));
    }
    // Bounded waits: a store that does not answer fails a try in seconds
    // (the segment stays local and the next pass tries again).
    let options = ClientOptions::new()
        .with_allow_http(true)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60));
    let retry = RetryConfig {
        max_retries: 2,
        retry_timeout: Duration::from_secs(15),
        ..RetryConfig::default()
    };
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(&s3.bucket)
        .with_region(&s3.region)
        .with_access_key_id(&s3.access_key)
        .with_secret_access_key(&s3.secret_key)
        .with_client_options(options)
        .with_retry(retry);
    if !s3.endpoint.is_empty() {
        builder = builder
            .with_endpoint(&s3.endpoint)
            .with_virtual_hosted_style_request(false);
    }
    let store = builder
        .build()
        .map_err(|e| TierError::Config(format!("S3 store: {e}")))?;
    Ok(Backend {
        store: Arc::new(store),
        prefix: s3.prefix.trim_matches('/').to_string(),
        describe: format!("s3://{}/{}", s3.bucket, s3.prefix.trim_matches('/')),
    })
}

/// A store error in words an operator can act on.
pub fn explain(error: &object_store::Error) -> String {
    match error {
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            format!("the object store refused the credentials: {error}")
        }
        _ => {
            let text = with_causes(error);
            let lower = text.to_ascii_lowercase();
            if lower.contains("connect") || lower.contains("timed out") || lower.contains("dns") {
                format!("the object store is unreachable: {text}")
            } else if lower.contains("403")
                || lower.contains("signature")
                || lower.contains("access denied")
            {
                format!("the object store refused the credentials: {text}")
            } else {
                text
            }
        }
    }
}

/// An error and its causes on one line (the HTTP client's own error
/// says only "error sending request"; its cause says why).
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let more = inner.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = inner.source();
    }
    text
}

/// One look at the store at start: logs clearly whether it answers.
pub async fn probe(backend: &Backend, tier: &TierHandle) {
    let key = backend.segment_key(0, "");
    match backend.store.head(&key).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => {
            tracing::info!(store = %backend.describe, "tiered storage: the object store answers");
        }
        Err(e) => {
            let why = explain(&e);
            tracing::error!(store = %backend.describe, error = %why,
                "tiered storage: the object store cannot be used now; segments stay local until it can");
            tier.status.set_error(Some(why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_store_is_named_so() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let backend = open_store(&TierBackend::S3(S3Settings {
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: "b".into(),
            region: "us-east-1".into(),
            access_key: "k".into(),
            secret_key: "s".into(),
            prefix: String::new(),
        }))
        .unwrap();
        let error = backend
            .store
            .head(&backend.segment_key(0, ""))
            .await
            .unwrap_err();
        let why = explain(&error);
        assert!(why.contains("unreachable"), "{why}");
        assert_eq!(
            backend.segment_key(65536, "").to_string(),
            "commitlog/00000000000000065536"
        );
        assert_eq!(
            backend.segment_key(65536, "0a1b").to_string(),
            "commitlog/00000000000000065536.0a1b"
        );
        assert_eq!(backend.manifest_key().to_string(), "manifest.json");
    }

    #[test]
    fn s3_needs_a_bucket() {
        let settings = S3Settings {
            endpoint: String::new(),
            bucket: String::new(),
            region: "us-east-1".into(),
            access_key: String::new(),
            secret_key: String::new(),
            prefix: "p".into(),
        };
        assert!(open_store(&TierBackend::S3(settings)).is_err());
    }

    #[test]
    fn each_replica_set_owns_its_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let mut config = TierConfig::new(TierBackend::Posix { path });
        config.owner = "c1/broker-a".into();
        let backend = open_backend(&config).unwrap();
        assert_eq!(
            backend.segment_key(0, "00ff00ff00ff00ff").to_string(),
            "c1/broker-a/commitlog/00000000000000000000.00ff00ff00ff00ff"
        );
        assert_eq!(backend.segment_dir().to_string(), "c1/broker-a/commitlog");
    }

    #[test]
    fn uploads_are_named_by_uploader_and_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let config = TierConfig::new(TierBackend::Posix {
            path: dir.path().to_path_buf(),
        });
        let backend = open_backend(&config).unwrap();
        let id = "00ff00ff00ff00ff";
        assert_eq!(uploader_tag(id, 0), id);
        let name = |tag: &str| format!("{:020}.{tag}", 65536);
        assert_eq!(segment_epoch(&name(&uploader_tag(id, 7))), Some(7));
        assert_eq!(segment_epoch(&name(id)), None);
        assert_eq!(segment_epoch(&format!("{:020}", 65536)), None);
        assert_eq!(segment_epoch("manifest.json.e3"), None);
        let at = |epoch| backend.segment_key(65536, &uploader_tag(id, epoch));
        assert_eq!(
            at(3).to_string(),
            "commitlog/00000000000000065536.00ff00ff00ff00ff.e3"
        );
        assert_ne!(at(3), at(4), "two masters sharing an id (a disk clone)");
        assert_eq!(at(3).filename().and_then(segment_start), Some(65536));
        for key in [at(0), at(3), at(12)] {
            assert!(backend.uploaded_by(key.as_ref(), 65536, id), "{key}");
        }
        let other = backend.segment_key(65536, "00ff00ff00ff00fe");
        assert!(!backend.uploaded_by(other.as_ref(), 65536, id));
        assert!(!backend.uploaded_by(at(3).as_ref(), 0, id));
    }

    #[test]
    fn segment_names_of_both_layouts_parse() {
        assert_eq!(segment_start("00000000000000065536"), Some(65536));
        assert_eq!(
            segment_start("00000000000000065536.00ff00ff00ff00ff"),
            Some(65536)
        );
        assert_eq!(segment_start("65536"), None);
        assert_eq!(segment_start("manifest.json"), None);
        assert_eq!(segment_start("0000000000000006553x.ab"), None);
    }
}

//! Tests: an object store wrapping another that behaves as some stores
//! do: refusing conditional writes as an S3-compatible server without
//! them answers (400 or 501), or another uploader writing an object just
//! as the set's manifest is read.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures_lite::Stream;
use object_store::path::Path as ObjectPath;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// What `object_store`'s S3 client answers for a status it has no variant
/// for (a `Generic` error whose cause reads so).
pub(crate) fn s3_status_error(status: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: format!(
            "Error performing PUT http://127.0.0.1:1/b/manifest.json in 2ms - \
             Server returned non-2xx status code: {status}: "
        )
        .into(),
    }
}

/// The wrapper: `inner`, and the behaviour set on it.
#[derive(Debug)]
pub(crate) struct Odd {
    inner: Arc<dyn ObjectStore>,
    /// Conditional puts fail with this status (`"501 Not Implemented"`).
    pub refuse_conditions: Option<&'static str>,
    /// Once: when `.0` is read, `.1` is written first.
    pub write_on_read: Mutex<Option<(ObjectPath, ObjectPath)>>,
}

impl Odd {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            refuse_conditions: None,
            write_on_read: Mutex::new(None),
        }
    }
}

impl fmt::Display for Odd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Odd({})", self.inner)
    }
}

type Listing = Pin<Box<dyn Stream<Item = Result<ObjectMeta>> + Send + 'static>>;

#[async_trait::async_trait]
impl ObjectStore for Odd {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if let (Some(status), false) = (
            self.refuse_conditions,
            matches!(opts.mode, PutMode::Overwrite),
        ) {
            return Err(s3_status_error(status));
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &ObjectPath, options: GetOptions) -> Result<GetResult> {
        let write = {
            let mut hook = self.write_on_read.lock().unwrap();
            match hook.as_ref() {
                Some((read, _)) if read == location => hook.take().map(|(_, write)| write),
                _ => None,
            }
        };
        if let Some(write) = write {
            self.inner
                .put(&write, PutPayload::from_static(b"written meanwhile"))
                .await?;
        }
        self.inner.get_opts(location, options).await
    }

    async fn delete(&self, location: &ObjectPath) -> Result<()> {
        self.inner.delete(location).await
    }

    fn list(&self, prefix: Option<&ObjectPath>) -> Listing {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&ObjectPath>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy(&self, from: &ObjectPath, to: &ObjectPath) -> Result<()> {
        self.inner.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &ObjectPath, to: &ObjectPath) -> Result<()> {
        self.inner.copy_if_not_exists(from, to).await
    }
}

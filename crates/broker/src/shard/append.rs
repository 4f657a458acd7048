//! Storing records from the shard: the one place that appends a record and
//! counts it in the shard's statistics.

use std::sync::Arc;

use ferrocket_protocol::record::RecordView;
use ferrocket_store::{AppendRequest, AppendResult};

use super::Shard;
use crate::error::Reject;
use crate::services::records::{encode_copy, tag_hash, Target};

impl Shard {
    /// Stores the copy of `source` described by `target`.
    pub async fn append_copy(
        &self,
        source: &RecordView<'_>,
        target: &Target<'_>,
    ) -> Result<AppendResult, Reject> {
        let encoded = encode_copy(self.env.store_host, source, target)?;
        let append = AppendRequest::new(
            Arc::from(target.topic),
            target.queue_id,
            encoded,
            tag_hash(target.properties),
        );
        let result = self.store.append(append).await?;
        self.count_put(1, source.body.len() as u64);
        Ok(result)
    }
}

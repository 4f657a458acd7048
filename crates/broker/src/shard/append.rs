//! Storing records from the shard: [`Shard::append`] is the one place a
//! record enters the store and is counted in the shard's statistics.

use std::sync::Arc;

use ferrocket_protocol::record::{NewRecord, RecordView};
use ferrocket_store::{AppendRequest, AppendResult};

use super::Shard;
use crate::error::Reject;
use crate::services::append::{encode, tag_hash};
use crate::services::records::{encode_copy, Target};

impl Shard {
    /// Appends `request` (`messages` records holding `body_bytes` of
    /// bodies) and counts it.
    pub async fn append(
        &self,
        request: AppendRequest,
        messages: u64,
        body_bytes: u64,
    ) -> Result<AppendResult, Reject> {
        assert!(messages > 0, "an append stores at least one record");
        self.check_accepts_puts()?;
        let result = self.store.append(request).await?;
        self.count_put(messages, body_bytes);
        Ok(result)
    }

    /// Encodes and stores one record with ConsumeQueue tag hash `tags_code`.
    pub async fn store_record(
        &self,
        record: &NewRecord<'_>,
        tags_code: i64,
    ) -> Result<AppendResult, Reject> {
        let encoded = encode(record)?;
        let topic = Arc::from(record.topic);
        let request = AppendRequest::new(topic, record.queue_id, encoded, tags_code);
        self.append(request, 1, record.body.len() as u64).await
    }

    /// Stores the copy of `source` described by `target`.
    pub async fn append_copy(
        &self,
        source: &RecordView<'_>,
        target: &Target<'_>,
    ) -> Result<AppendResult, Reject> {
        let encoded = encode_copy(self.env.store_host, source, target)?;
        let topic = Arc::from(target.topic);
        let tags_code = tag_hash(target.properties);
        let request = AppendRequest::new(topic, target.queue_id, encoded, tags_code);
        self.append(request, 1, source.body.len() as u64).await
    }
}

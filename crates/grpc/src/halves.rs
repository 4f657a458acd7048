//! The half messages of transactional sends, remembered (bounded, oldest
//! first out) under their transaction id until an EndTransaction ends them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Half messages remembered for an EndTransaction; the oldest go first.
const HALVES_MAX: usize = 100_000;

/// What END_TRANSACTION needs of one half message.
#[derive(Debug, Clone)]
pub struct Half {
    pub broker_name: String,
    pub topic: String,
    pub queue_offset: i64,
    pub commit_log_offset: i64,
    pub message_id: String,
}

/// Half messages by transaction id, bounded.
#[derive(Default)]
pub struct Halves {
    inner: Mutex<(HashMap<String, Half>, VecDeque<String>)>,
}

impl Halves {
    pub fn remember(&self, transaction_id: &str, half: Half) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (by_id, order) = &mut *inner;
        if by_id.insert(transaction_id.to_string(), half).is_none() {
            order.push_back(transaction_id.to_string());
        }
        while order.len() > HALVES_MAX {
            if let Some(oldest) = order.pop_front() {
                by_id.remove(&oldest);
            }
        }
    }

    pub(crate) fn take(&self, transaction_id: &str) -> Option<Half> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.0.remove(transaction_id)
    }
}

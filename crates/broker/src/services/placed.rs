//! Services that each live on one designated shard (see `system`): the
//! timer store and message index on the timer shard, transaction state on
//! the transaction shard. Other shards hold empty cells.

use std::cell::OnceCell;
use std::rc::Rc;

use ferrocket_store::DispatchEntry;

use crate::services::index::IndexFeed;
use crate::services::timer::TimerService;
use crate::services::topics::{HALF_TOPIC, TIMER_TOPIC};
use crate::services::transaction::TxnService;

/// A shard's handles on the services it runs (empty on other shards).
#[derive(Default)]
pub(crate) struct PlacedServices {
    pub timer: OnceCell<Rc<TimerService>>,
    pub index: OnceCell<Rc<IndexFeed>>,
    pub txn: OnceCell<Rc<TxnService>>,
}

impl PlacedServices {
    /// Called for every ConsumeQueue dispatch on this shard.
    pub fn on_dispatch(&self, entry: &DispatchEntry) {
        match &*entry.topic {
            TIMER_TOPIC => {
                if let Some(timer) = self.timer.get() {
                    timer.wake();
                }
            }
            HALF_TOPIC => {
                if let Some(txn) = self.txn.get() {
                    txn.wake();
                }
            }
            _ => {}
        }
    }
}

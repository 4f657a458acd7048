//! Tests: a master against the set's manifest when controller epochs go
//! backwards (the controller's metadata lost: its epochs start again at
//! 1), and the way out (`tieredStoreEpochBase`, [`TierConfig::epoch_base`]).

use ferrocket_store::tier::{TierBackend, TierConfig, TierHandle};
use ferrocket_store::{CommitLogReader, MessageStore, StoreConfig, StoreHandle};
use object_store::PutPayload;

use crate::backend::Backend;
use crate::follow::{adopt, publish, Step};

/// One broker's store offloading to the directory `remote`.
struct Broker {
    _dir: tempfile::TempDir,
    _store: StoreHandle,
    _parts: ferrocket_store::AppenderParts,
    tier: TierHandle,
    reader: CommitLogReader,
    backend: Backend,
}

fn broker(remote: &std::path::Path, epoch_base: i32) -> Broker {
    let dir = tempfile::tempdir().unwrap();
    let mut tier_config = TierConfig::new(TierBackend::Posix {
        path: remote.to_path_buf(),
    });
    tier_config.epoch_base = epoch_base;
    let backend = crate::open_backend(&tier_config).unwrap();
    let mut config = StoreConfig::new(dir.path());
    config.tier = Some(tier_config);
    let (store, parts) = MessageStore::open(config).unwrap();
    Broker {
        tier: store.tier().unwrap(),
        reader: store.reader(),
        _dir: dir,
        _store: store,
        _parts: parts,
        backend,
    }
}

/// Writes the set's published manifest as a master of `epoch` would.
async fn published_as(backend: &Backend, epoch: i32) {
    let json = format!(r#"{{"epoch":{epoch},"segments":[]}}"#);
    let payload = PutPayload::from(json.into_bytes());
    backend
        .store
        .put(&backend.manifest_key(), payload)
        .await
        .unwrap();
}

async fn published_epoch(backend: &Backend) -> i32 {
    let got = backend.store.get(&backend.manifest_key()).await.unwrap();
    ferrocket_store::tier::Offloaded::decode_epoch(&got.bytes().await.unwrap()).unwrap()
}

/// The set's manifest carries epoch 7 from before the controller lost its
/// metadata; the new master is of epoch 1: fenced, until every broker
/// gets `tieredStoreEpochBase=7` (its epoch is then 8, above the copy's).
#[tokio::test]
async fn an_epoch_base_lets_a_master_publish_after_a_controller_reset() {
    let remote = tempfile::tempdir().unwrap();
    let fenced = broker(remote.path(), 0);
    published_as(&fenced.backend, 7).await;
    fenced.tier.set_master_epoch(1);
    let (tier, backend, reader) = (&fenced.tier, &fenced.backend, &fenced.reader);
    assert_eq!(adopt(tier, backend, reader, true).await, Step::Fenced(7));
    assert_eq!(publish(tier, backend).await, Step::Fenced(7));
    let based = broker(remote.path(), 7);
    based.tier.set_master_epoch(1);
    assert_eq!(based.tier.master_epoch(), 8);
    let (tier, backend, reader) = (&based.tier, &based.backend, &based.reader);
    assert_eq!(adopt(tier, backend, reader, true).await, Step::Done);
    assert_eq!(publish(tier, backend).await, Step::Done);
    assert_eq!(published_epoch(backend).await, 8);
    // A broker still of the old epochs (no base) stays fenced.
    let zombie = broker(remote.path(), 0);
    zombie.tier.set_master_epoch(7);
    assert_eq!(
        publish(&zombie.tier, &zombie.backend).await,
        Step::Fenced(8)
    );
    // A slave has no master epoch, whatever the base.
    assert_eq!(broker(remote.path(), 7).tier.master_epoch(), 0);
}

/// A slave took the copy of epoch 7; the controller starts again, and a
/// master of its new epoch 1 (no base) publishes; the slave is promoted
/// (epoch 2): the copy is older than the one it took, which is no success
/// for a master (its own copy would be ignored by every replica that took
/// epoch 7): no adoption, no publish.
#[tokio::test]
async fn a_promoted_slave_below_the_epoch_it_took_does_not_publish() {
    let remote = tempfile::tempdir().unwrap();
    let slave = broker(remote.path(), 0);
    let (tier, backend, reader) = (&slave.tier, &slave.backend, &slave.reader);
    published_as(backend, 7).await;
    assert_eq!(adopt(tier, backend, reader, false).await, Step::Done);
    assert_eq!(tier.offloaded.epoch(), 7);
    published_as(backend, 1).await;
    tier.set_master_epoch(2);
    assert_eq!(adopt(tier, backend, reader, true).await, Step::Fenced(7));
    assert_eq!(publish(tier, backend).await, Step::Fenced(7));
    assert_eq!(published_epoch(backend).await, 1, "published over");
    // An older master's copy below an epoch this master is above (a
    // deposed master wrote over the newer one's): published over, as
    // before.
    tier.set_master_epoch(9);
    assert_eq!(adopt(tier, backend, reader, true).await, Step::Done);
    assert_eq!(publish(tier, backend).await, Step::Done);
    assert_eq!(published_epoch(backend).await, 9);
}

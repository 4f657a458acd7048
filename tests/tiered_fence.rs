//! Tiered storage in controller mode, the set's published manifest
//! (`{cluster}/{brokerName}/manifest.json`) across epochs: a deposed master
//! never publishes over a newer master's copy, and a replica cut back to a
//! fork point never takes an old epoch's copy of what lies past the cut.
//! The newer master is simulated by writing its copy straight into the
//! object store (a directory, or `s3s-fs`'s directory).

mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::failover;
use harness::tier::{self, info_number, runtime_info, send_range, SEGMENT_BYTES};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

/// A broker of the failover set in controller mode, offloading to
/// `backend` (the keys of [`tier::start_broker`], one shard).
fn controller_broker(namesrv: &Namesrv, controllers: &str, backend: &[String]) -> Broker {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let mut keys = vec![
        "tieredStorageLevel=NOT_IN_DISK".to_string(),
        "tieredStoreUploadIntervalMs=100".to_string(),
        format!("tieredStoreLocalMaxBytes={}", 4 * SEGMENT_BYTES),
        "cleanResourceInterval=200".to_string(),
        format!("deleteWhen={}", every_hour.join(";")),
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
        "enableControllerMode=true".to_string(),
        format!("controllerAddr={controllers}"),
        format!("haListenPort={}", harness::process::free_port()),
        "allAckInSyncStateSet=true".into(),
        "syncBrokerMetadataPeriod=1000".into(),
        "checkSyncStateSetPeriod=1000".into(),
        "slaveTimeout=3000".into(),
    ];
    keys.extend(backend.iter().cloned());
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(failover::SET.into()),
            shards: Some(1),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: keys
                .into_iter()
                .flat_map(|kv| ["--set".to_string(), kv])
                .collect(),
            ..BrokerOpts::default()
        },
    )
}

/// The set's directory in the object store whose root directory is `root`.
fn set_dir(root: &Path) -> PathBuf {
    root.join("DefaultCluster").join(failover::SET)
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Waits until `master` uploaded every sealed segment (all but the one its
/// CommitLog ends in) and published them (it publishes again only after
/// its next upload): the set's manifest.
fn wait_published(master: &Broker, set_dir: &Path) -> serde_json::Value {
    let published = wait_for(Duration::from_secs(60), || {
        let sealed = (failover::commit_log_end(master)? - 1) / SEGMENT_BYTES as i64;
        let local = read_json(&master.store_dir().join("tier/manifest.json"))?;
        let remote = read_json(&set_dir.join("manifest.json"))?;
        let all = starts(&local).len() as i64 >= sealed && starts(&local) == starts(&remote);
        all.then_some(remote)
    });
    published.expect("the master did not publish what it offloaded")
}

/// The segment starts a manifest names.
fn starts(manifest: &serde_json::Value) -> Vec<i64> {
    manifest["segments"]
        .as_array()
        .map(|s| s.iter().filter_map(|e| e["start"].as_i64()).collect())
        .unwrap_or_default()
}

/// One broker, master of epoch 1 or later, offloads and publishes; a newer
/// master's copy appears (one epoch up, naming the same segments): the old
/// master says it is fenced, leaves that copy as it is, and uploads
/// nothing more.
fn a_newer_copy_fences_the_old_master(backend: &[String], store_root: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let master = controller_broker(&namesrv, &addrs, backend);
    let elected = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1))
    });
    let epoch = elected.expect("no master").master_epoch;
    assert!(epoch >= 1, "{epoch}");
    let topic = unique_name("TierFence");
    let mut conn = master.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &master);
    let manifest = set_dir(store_root).join("manifest.json");
    let mut newer = wait_published(&master, &set_dir(store_root));
    assert_eq!(newer["epoch"].as_i64(), Some(i64::from(epoch)), "{newer}");
    newer["epoch"] = serde_json::json!(epoch + 1);
    let newer = serde_json::to_vec_pretty(&newer).unwrap();
    std::fs::write(&manifest, &newer).unwrap();
    // More sealed segments: the old master uploads them and then finds the
    // newer copy where it would publish.
    send_range(&mut conn, &topic, 400, 700);
    let said = format!("controller epoch {}", epoch + 1);
    let fenced = wait_for(Duration::from_secs(60), || {
        let status = runtime_info(&mut conn)["tieredStoreStatus"].to_string();
        status.contains(&said).then_some(())
    });
    assert!(fenced.is_some(), "not fenced: {}", runtime_info(&mut conn));
    let uploaded = info_number(&mut conn, "tieredUploadedSegments");
    send_range(&mut conn, &topic, 700, 1000);
    // Passes run every 100 ms: many run meanwhile.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(std::fs::read(&manifest).unwrap(), newer);
    assert_eq!(info_number(&mut conn, "tieredUploadedSegments"), uploaded);
    // Sends go on (they are stored locally).
    assert_eq!(
        failover::commit_log_end(&master).map(|end| end > 0),
        Some(true)
    );
}

#[test]
fn a_newer_masters_manifest_fences_the_old_master_in_a_directory() {
    let remote = tempfile::tempdir().unwrap();
    a_newer_copy_fences_the_old_master(&tier::posix(remote.path()), remote.path());
}

#[test]
fn a_newer_masters_manifest_fences_the_old_master_on_s3() {
    let Some(binary) = tier::s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("fence")).unwrap();
    let port = harness::process::free_port();
    let mut s3 = tier::start_s3(&binary, root.path(), port);
    let backend = tier::s3(port, "fence");
    a_newer_copy_fences_the_old_master(&backend, &root.path().join("fence"));
    s3.stop();
}

/// The newest offloaded segment start that the store at `store` still
/// has, with the segment before it (a cut there leaves a log that is not
/// empty).
fn newest_local_offloaded(store: &Path, published: &[i64]) -> i64 {
    let local: Vec<String> = std::fs::read_dir(store.join("commitlog"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let has = |start: i64| local.contains(&format!("{start:020}"));
    let seg = SEGMENT_BYTES as i64;
    published
        .iter()
        .copied()
        .filter(|start| has(*start) && has(start - seg))
        .max()
        .unwrap_or_else(|| panic!("no published segment of {published:?} is local: {local:?}"))
}

/// The segment starts the slave's own manifest (`tier/manifest.json`) names.
fn adopted(broker: &Broker) -> Vec<i64> {
    read_json(&broker.store_dir().join("tier/manifest.json"))
        .map(|m| starts(&m))
        .unwrap_or_default()
}

/// Waits until `slave`'s CommitLog ends where `master`'s does.
fn wait_caught_up(master: &Broker, slave: &Broker) {
    let same = wait_for(Duration::from_secs(60), || {
        let end = failover::commit_log_end(master)?;
        (failover::commit_log_end(slave)? == end).then_some(())
    });
    assert!(same.is_some(), "the slave did not catch up");
}

/// A slave's log is cut back to a fork point inside what the set
/// offloaded (its bytes past it were of the master's epoch, simulated by
/// the store's cut): while the set's published manifest is still of that
/// epoch (and names, past the cut, a copy of bytes this log will not
/// have), the slave copies the master's log past the cut again but takes
/// no entry past the cut from it; a copy of a newer epoch is taken whole.
#[test]
fn a_cut_slave_takes_no_older_epochs_entry_past_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let backend = tier::posix(remote.path());
    let master = controller_broker(&namesrv, &addrs, &backend);
    let mut slave = controller_broker(&namesrv, &addrs, &backend);
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1) && s.in_sync.len() == 2)
    });
    let epoch = joined.expect("the set did not form").master_epoch;
    let topic = unique_name("TierForkCut");
    harness::requests::create_topic(&mut slave.connect(), &topic, 1);
    let mut conn: RemotingConn = master.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &master);
    let published = wait_published(&master, &set_dir(remote.path()));
    wait_caught_up(&master, &slave);
    slave.process.kill();
    let cut = newest_local_offloaded(slave.store_dir(), &starts(&published));
    let mut config = ferrocket_store::StoreConfig::new(slave.store_dir());
    config.segment_bytes = SEGMENT_BYTES;
    assert!(ferrocket_store::truncate_commitlog(&config, cut, epoch).unwrap() > 0);
    assert!(adopted(&slave).iter().all(|start| *start < cut));
    // The copy still published (the old epoch's) names other bytes at the
    // cut's segment.
    let mut stale = published.clone();
    for entry in stale["segments"].as_array_mut().unwrap() {
        if entry["start"].as_i64() == Some(cut) {
            entry["key"] = serde_json::json!(format!("{}.stale", entry["key"].as_str().unwrap()));
        }
    }
    let manifest = set_dir(remote.path()).join("manifest.json");
    std::fs::write(&manifest, serde_json::to_vec_pretty(&stale).unwrap()).unwrap();
    slave.start_again();
    wait_caught_up(&master, &slave);
    std::thread::sleep(Duration::from_millis(1500));
    let taken = adopted(&slave);
    assert!(!taken.is_empty(), "the slave took nothing");
    assert!(
        taken.iter().all(|start| *start < cut),
        "{taken:?} (cut {cut})"
    );
    // The newer master's copy (one epoch up) is taken past the cut.
    let mut newer = published.clone();
    newer["epoch"] = serde_json::json!(epoch + 1);
    std::fs::write(&manifest, serde_json::to_vec_pretty(&newer).unwrap()).unwrap();
    let past = wait_for(Duration::from_secs(30), || {
        adopted(&slave).contains(&cut).then_some(())
    });
    assert!(past.is_some(), "{:?} (cut {cut})", adopted(&slave));
    // The old epoch's copy again (a deposed master writing over the newer
    // one): ignored, older than the epoch taken.
    std::fs::write(&manifest, serde_json::to_vec_pretty(&stale).unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let own = read_json(&slave.store_dir().join("tier/manifest.json")).unwrap();
    assert_eq!(starts(&own), starts(&newer));
    assert!(!own.to_string().contains(".stale"), "{own}");
    assert_eq!(own["epoch"].as_i64(), Some(i64::from(epoch) + 1));
}

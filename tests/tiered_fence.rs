//! Tiered storage in controller mode, the set's published manifest
//! (`{cluster}/{brokerName}/manifest.json`) across epochs: a deposed master
//! never publishes over a newer master's copy, and a replica never takes a
//! copy of what lies past the fork between its log and the publisher's.
//! The newer master is simulated by writing its copy straight into the
//! object store (a directory, or `s3s-fs`'s directory).

mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::failover;
use harness::tier::{self, info_number, runtime_info, send_range, SEGMENT_BYTES};
use harness::{unique_name, wait_for, Broker, Namesrv, RemotingConn};

/// A broker of the failover set in controller mode, offloading to
/// `backend` ([`tier::controller_broker`]).
fn controller_broker(namesrv: &Namesrv, controllers: &str, backend: &[String]) -> Broker {
    tier::controller_broker(namesrv, controllers, backend, &[])
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
    let mut master = controller_broker(&namesrv, &addrs, backend);
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
    // The way out when the controller's epochs started again (its
    // metadata lost; the copy's epoch is then another history's): the
    // broker restarts with tieredStoreEpochBase at the copy's epoch, and
    // publishes above it; what it uploads is named by that epoch.
    drop(conn);
    master.set_on_restart(&[&format!("tieredStoreEpochBase={}", epoch + 1)]);
    master.restart();
    let above = wait_for(Duration::from_secs(60), || {
        let copy = read_json(&manifest)?;
        (copy["epoch"].as_i64()? > i64::from(epoch) + 1).then_some(copy)
    });
    let above = above.unwrap_or_else(|| {
        panic!(
            "not published above epoch {}: {}",
            epoch + 1,
            runtime_info(&mut master.connect())
        )
    });
    let suffix = format!(".e{}", above["epoch"]);
    let keys = above["segments"].to_string();
    assert!(keys.contains(&suffix), "no key ends {suffix}: {keys}");
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

/// Writes `manifest` as the set's published copy.
fn publish(root: &Path, manifest: &serde_json::Value) {
    let path = set_dir(root).join("manifest.json");
    std::fs::write(path, serde_json::to_vec_pretty(manifest).unwrap()).unwrap();
}

/// A deposed master of a higher epoch than any bytes the slave holds,
/// whose log forked from the slave's inside a segment the set offloaded,
/// publishes (simulated: the master's copy with one more epoch starting
/// at the fork in its lineage, and other keys from the fork on): the slave
/// takes none of its entries past the fork. A newer master's copy whose
/// lineage agrees with the slave's log is taken whole; the deposed one's,
/// written over it again, is ignored.
#[test]
fn a_slave_takes_no_entry_past_its_fork_with_the_publisher() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let backend = tier::posix(remote.path());
    let master = controller_broker(&namesrv, &addrs, &backend);
    let slave = controller_broker(&namesrv, &addrs, &backend);
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1) && s.in_sync.len() == 2)
    });
    let epoch = joined.expect("the set did not form").master_epoch;
    let topic = unique_name("TierFork");
    harness::requests::create_topic(&mut slave.connect(), &topic, 1);
    let mut conn: RemotingConn = master.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &master);
    let published = wait_published(&master, &set_dir(remote.path()));
    let lineage = &published["lineage"]["epochs"];
    let last = lineage.as_array().and_then(|l| l.last()).cloned();
    let last = last.unwrap_or_else(|| panic!("no lineage published: {published}"));
    assert_eq!(
        last["epoch"].as_i64(),
        Some(i64::from(epoch)),
        "{published}"
    );
    wait_caught_up(&master, &slave);
    let all = starts(&published);
    let took = wait_for(Duration::from_secs(30), || {
        (adopted(&slave) == all).then_some(())
    });
    assert!(took.is_some(), "{:?} of {all:?}", adopted(&slave));
    // The fork: inside the newest published segment above the epoch's start.
    let seg = SEGMENT_BYTES as i64;
    let start = last["startOffset"].as_i64().unwrap();
    let fork = all
        .iter()
        .copied()
        .filter(|s| *s > start)
        .max()
        .expect("one segment")
        + seg / 2;
    let mut stale = published.clone();
    stale["epoch"] = serde_json::json!(epoch + 1);
    let forked = serde_json::json!({"epoch": epoch + 1, "startOffset": fork});
    stale["lineage"]["epochs"]
        .as_array_mut()
        .unwrap()
        .push(forked);
    for entry in stale["segments"].as_array_mut().unwrap() {
        if entry["start"].as_i64().unwrap() + seg > fork {
            entry["key"] = serde_json::json!(format!("{}.stale", entry["key"].as_str().unwrap()));
        }
    }
    publish(remote.path(), &stale);
    let below: Vec<i64> = all.iter().copied().filter(|s| s + seg <= fork).collect();
    let left = wait_for(Duration::from_secs(30), || {
        (adopted(&slave) == below).then_some(())
    });
    assert!(left.is_some(), "{:?} (fork {fork})", adopted(&slave));
    // A newer master's copy (its lineage the slave's): taken whole.
    let mut newer = published.clone();
    newer["epoch"] = serde_json::json!(epoch + 2);
    publish(remote.path(), &newer);
    let whole = wait_for(Duration::from_secs(30), || {
        (adopted(&slave) == all).then_some(())
    });
    assert!(whole.is_some(), "{:?} (fork {fork})", adopted(&slave));
    // The deposed master's copy again: older than the epoch taken.
    publish(remote.path(), &stale);
    std::thread::sleep(Duration::from_millis(1500));
    let own = read_json(&slave.store_dir().join("tier/manifest.json")).unwrap();
    assert_eq!(starts(&own), all);
    assert!(!own.to_string().contains(".stale"), "{own}");
    assert_eq!(own["epoch"].as_i64(), Some(i64::from(epoch) + 2));
}

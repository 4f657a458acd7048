//! Tiered storage in controller mode with a slave that starts with an
//! empty store: HA copies the master's log to it from the master's logical
//! start (offloaded segments read through object storage). Promoted, it
//! keeps the set's offloaded history (it never publishes or sweeps a
//! manifest that drops segments its predecessor's named); and an offloaded
//! segment the store no longer serves does not hold its copy up forever.

mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::failover;
use harness::tier::{self, runtime_info, send_range, SEGMENT_BYTES};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv};

/// A broker of the failover set in controller mode, offloading to
/// `backend` (one shard, four sealed segments kept locally).
fn controller_broker(namesrv: &Namesrv, controllers: &str, backend: &[String]) -> Broker {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let mut keys = vec![
        "tieredStorageLevel=NOT_IN_DISK".to_string(),
        "tieredStoreUploadIntervalMs=100".to_string(),
        format!("tieredStoreLocalMaxBytes={}", 3 * SEGMENT_BYTES),
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

/// The set's directory in the object store directory `root`.
fn set_dir(root: &Path) -> PathBuf {
    root.join("DefaultCluster").join(failover::SET)
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// `(start, key)` of every entry a manifest names.
fn entries(manifest: &serde_json::Value) -> Vec<(i64, String)> {
    manifest["segments"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|e| Some((e["start"].as_i64()?, e["key"].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `slave`'s CommitLog ends where `master`'s does.
fn wait_caught_up(master: &Broker, slave: &Broker) -> bool {
    wait_for(Duration::from_secs(60), || {
        let end = failover::commit_log_end(master)?;
        (failover::commit_log_end(slave)? == end).then_some(())
    })
    .is_some()
}

/// A master offloads and drops segments and publishes; a slave whose store
/// is empty joins, copies everything (the offloaded part through object
/// storage) and is promoted when the master dies. Its manifest then names
/// every segment the old one named, their objects are all still there,
/// and a consumer reads every message from the new master.
#[test]
fn a_promoted_empty_slave_keeps_the_sets_history() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let backend = tier::posix(remote.path());
    let mut first = controller_broker(&namesrv, &addrs, &backend);
    let elected = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1))
    });
    assert!(elected.is_some(), "{:?}", failover::sync_state(&addrs));
    let topic = unique_name("TierEmptySlave");
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &first);
    let manifest = set_dir(remote.path()).join("manifest.json");
    let old = wait_for(Duration::from_secs(60), || {
        let m = read_json(&manifest)?;
        (entries(&m).len() >= 3).then_some(m)
    })
    .expect("the master published nothing");
    let second = controller_broker(&namesrv, &addrs, &backend);
    harness::requests::create_topic(&mut second.connect(), &topic, 1);
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.in_sync.len() == 2)
    });
    assert!(joined.is_some(), "{:?}", failover::sync_state(&addrs));
    assert!(
        wait_caught_up(&first, &second),
        "the slave did not catch up"
    );
    drop(conn);
    first.process.kill();
    let promoted = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(2))
    });
    assert!(promoted.is_some(), "{:?}", failover::sync_state(&addrs));
    let mut conn = second.connect();
    let sent = wait_for(Duration::from_secs(30), || {
        let header = harness::requests::send_header("tier_pg", &topic, 0);
        let answer = conn.request(harness::requests::send_request(&header, tier::body(400)));
        (answer.code == 0).then_some(())
    });
    assert!(sent.is_some(), "the new master takes no sends");
    send_range(&mut conn, &topic, 401, 700);
    let epoch = old["epoch"].as_i64().unwrap();
    let newer = wait_for(Duration::from_secs(60), || {
        let m = read_json(&manifest)?;
        (m["epoch"].as_i64()? > epoch).then_some(m)
    })
    .unwrap_or_else(|| {
        panic!(
            "the new master never published: {}",
            runtime_info(&mut conn)
        )
    });
    // Sweeps run after each publish: give them passes.
    std::thread::sleep(Duration::from_millis(1500));
    let named: Vec<i64> = entries(&newer).iter().map(|(s, _)| *s).collect();
    for (start, _) in entries(&old) {
        assert!(
            named.contains(&start),
            "the new master's manifest dropped {start}: {newer}"
        );
    }
    for (_, key) in entries(&newer) {
        assert!(remote.path().join(&key).exists(), "{key} is missing");
    }
    tier::pull_all(&mut conn, &topic, 700);
}

/// The oldest offloaded segment's object is gone from the store (a bucket
/// lifecycle rule, or an operator): an empty slave's copy does not stop
/// there forever; it starts at the next segment the master can serve, the
/// master says what it skipped, and the slave catches up.
#[test]
fn an_empty_slave_skips_an_offloaded_segment_the_store_lost() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let backend = tier::posix(remote.path());
    let first = controller_broker(&namesrv, &addrs, &backend);
    let elected = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1))
    });
    assert!(elected.is_some(), "{:?}", failover::sync_state(&addrs));
    let topic = unique_name("TierLostObject");
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &first);
    let lost = tier::segment_objects(&set_dir(remote.path()), 0);
    assert_eq!(lost.len(), 1, "{lost:?}");
    std::fs::remove_file(&lost[0]).unwrap();
    let second = controller_broker(&namesrv, &addrs, &backend);
    assert!(
        wait_caught_up(&first, &second),
        "the empty slave never caught up: master {:?}, slave {:?}\n{}",
        failover::commit_log_end(&first),
        failover::commit_log_end(&second),
        first.process.output()
    );
    let said = first.process.output();
    assert!(
        said.contains("skipped") && said.contains("00000000000000000000"),
        "{said}"
    );
}

/// The starts `broker`'s own manifest (`tier/manifest.json`) names.
fn own_starts(broker: &Broker) -> Vec<i64> {
    read_json(&broker.store_dir().join("tier/manifest.json"))
        .map(|m| entries(&m).iter().map(|(s, _)| *s).collect())
        .unwrap_or_default()
}

/// A slave took the set's manifest and dropped those segments locally;
/// then the published copy's lineage stops agreeing with its log (as a
/// copy it cannot prove, for any reason, would), so it takes nothing, and
/// it is promoted. Its own manifest does not name the set's history below
/// its local start: it holds (says so) and publishes and deletes nothing,
/// rather than publishing without that history and sweeping its objects.
#[test]
fn a_new_master_that_did_not_take_the_history_holds() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let backend = tier::posix(remote.path());
    let mut first = controller_broker(&namesrv, &addrs, &backend);
    let second = controller_broker(&namesrv, &addrs, &backend);
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1) && s.in_sync.len() == 2)
    });
    assert!(joined.is_some(), "{:?}", failover::sync_state(&addrs));
    let topic = unique_name("TierHold");
    harness::requests::create_topic(&mut second.connect(), &topic, 1);
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    tier::wait_offloaded_and_dropped(&mut conn, &first);
    assert!(
        wait_caught_up(&first, &second),
        "the slave did not catch up"
    );
    let dropped = wait_for(Duration::from_secs(60), || {
        let first_local = tier::local_segments(&second).first().cloned()?;
        (first_local != "00000000000000000000" && own_starts(&second).contains(&0)).then_some(())
    });
    assert!(
        dropped.is_some(),
        "the slave kept {:?}",
        tier::local_segments(&second)
    );
    // The master's copy (it publishes again only after its next upload),
    // with a lineage the slave's log shares no epoch with.
    let manifest = set_dir(remote.path()).join("manifest.json");
    let mut unproven = read_json(&manifest).expect("published");
    for epoch in unproven["lineage"]["epochs"].as_array_mut().unwrap() {
        epoch["startOffset"] = serde_json::json!(epoch["startOffset"].as_i64().unwrap() + 1);
    }
    std::fs::write(&manifest, serde_json::to_vec_pretty(&unproven).unwrap()).unwrap();
    let forgot = wait_for(Duration::from_secs(30), || {
        own_starts(&second).is_empty().then_some(())
    });
    assert!(
        forgot.is_some(),
        "the slave still names {:?}",
        own_starts(&second)
    );
    drop(conn);
    first.process.kill();
    let history: Vec<PathBuf> = entries(&unproven)
        .iter()
        .map(|(_, key)| remote.path().join(key))
        .collect();
    let promoted = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(2))
    });
    assert!(promoted.is_some(), "{:?}", failover::sync_state(&addrs));
    let mut conn = second.connect();
    let held = wait_for(Duration::from_secs(30), || {
        let status = runtime_info(&mut conn)["tieredStoreStatus"].to_string();
        status.contains("holding").then_some(())
    });
    assert!(held.is_some(), "not held: {}", runtime_info(&mut conn));
    // Passes run every 100 ms: many run meanwhile.
    std::thread::sleep(Duration::from_millis(1500));
    for object in &history {
        assert!(object.exists(), "{} was deleted", object.display());
    }
    let now = read_json(&manifest).unwrap();
    assert_eq!(now["epoch"], unproven["epoch"], "{now}");
}

/// A controller-mode master offloading to an `s3s-fs` bucket, with 400
/// messages sent and the oldest segments offloaded and dropped locally.
struct S3Set {
    binary: PathBuf,
    root: tempfile::TempDir,
    port: u16,
    s3: harness::process::ServerProcess,
    addrs: String,
    namesrv: Namesrv,
    first: Broker,
    _controllers: Vec<harness::process::ServerProcess>,
    _dir: tempfile::TempDir,
}

impl S3Set {
    fn start(binary: PathBuf) -> S3Set {
        let dir = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tier-bucket")).unwrap();
        let port = harness::process::free_port();
        let s3 = tier::start_s3(&binary, root.path(), port);
        let controllers = failover::controllers(dir.path(), 1);
        let addrs = failover::controller_addr(&controllers);
        let namesrv = Namesrv::start();
        let first = controller_broker(&namesrv, &addrs, &tier::s3(port, "tier-bucket"));
        let elected = wait_for(Duration::from_secs(60), || {
            failover::sync_state(&addrs).filter(|s| s.master == Some(1))
        });
        assert!(elected.is_some(), "{:?}", failover::sync_state(&addrs));
        let topic = unique_name("TierStoreDown");
        let mut conn = first.connect();
        harness::requests::create_topic(&mut conn, &topic, 1);
        send_range(&mut conn, &topic, 0, 400);
        tier::wait_offloaded_and_dropped(&mut conn, &first);
        S3Set {
            binary,
            root,
            port,
            s3,
            addrs,
            namesrv,
            first,
            _controllers: controllers,
            _dir: dir,
        }
    }

    /// An empty slave joins; `hold` later it has not copied everything;
    /// once `back` brings the store back it has, and nothing was skipped.
    fn slave_waits_for_the_store(&mut self, hold: Duration, back: impl FnOnce(&mut S3Set)) {
        let backend = tier::s3(self.port, "tier-bucket");
        let second = controller_broker(&self.namesrv, &self.addrs, &backend);
        std::thread::sleep(hold);
        let end = failover::commit_log_end(&self.first);
        assert!(end.is_some());
        assert_ne!(
            failover::commit_log_end(&second),
            end,
            "the slave copied past offloaded segments the store could not serve"
        );
        back(self);
        assert!(
            wait_caught_up(&self.first, &second),
            "the empty slave never caught up: master {:?}, slave {:?}\n{}",
            failover::commit_log_end(&self.first),
            failover::commit_log_end(&second),
            self.first.process.output()
        );
        let said = self.first.process.output();
        assert!(!said.contains("skipped offloaded"), "{said}");
    }
}

/// Object storage is down when an empty slave joins: the master cannot
/// tell whether its offloaded segments are still there, so it skips none
/// (one it dropped before its manifest was published could be lost after
/// a failover). The copy waits at the log's start; once the store is back
/// the slave copies everything, and nothing was skipped.
#[test]
fn an_empty_slave_skips_nothing_while_the_store_is_down() {
    let Some(binary) = tier::s3s_fs_binary() else {
        return;
    };
    let mut set = S3Set::start(binary);
    set.s3.kill();
    set.slave_waits_for_the_store(Duration::from_secs(10), |set| {
        set.s3 = tier::start_s3(&set.binary, set.root.path(), set.port);
    });
    set.s3.stop();
}

/// Object storage hangs (a frozen server: connections open, no answer)
/// when an empty slave joins: each probe is cut off at the probing budget
/// (a quarter of `haHousekeepingInterval`, 5 s), not the object client's
/// own timeout, and a probe cut off skips nothing.
#[test]
fn a_hanging_store_cuts_the_probe_short_and_skips_nothing() {
    let Some(binary) = tier::s3s_fs_binary() else {
        return;
    };
    let mut set = S3Set::start(binary);
    set.s3.signal(libc::SIGSTOP);
    set.slave_waits_for_the_store(Duration::from_secs(15), |set| {
        let said = set.first.process.output();
        assert!(
            said.contains("not proved gone") && said.contains("probing an offloaded segment"),
            "the probe was not cut short at its budget: {said}"
        );
        set.s3.signal(libc::SIGCONT);
    });
    set.s3.stop();
}

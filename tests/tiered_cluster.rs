//! Tiered storage with more than one broker: replica sets sharing a bucket
//! (or `tieredStoreFilePath`) each own their `cluster/brokerName`
//! sub-prefix.

mod harness;

use std::path::Path;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::failover;
use harness::requests::{send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SEGMENT_BYTES: u64 = 64 * 1024;
const BODY_BYTES: usize = 1000;
const FIRST_SEGMENT: &str = "00000000000000000000";

fn tier_args(remote: &Path, more: &[String]) -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let mut keys = vec![
        "tieredStorageLevel=NOT_IN_DISK".to_string(),
        "tieredBackendServiceProvider=posix".to_string(),
        format!("tieredStoreFilePath={}", remote.display()),
        "tieredStoreUploadIntervalMs=100".to_string(),
        format!("tieredStoreLocalMaxBytes={}", 3 * SEGMENT_BYTES),
        "tieredStoreReadAheadBytes=16384".to_string(),
        "tieredStoreReadCacheBytes=65536".to_string(),
        "cleanResourceInterval=200".to_string(),
        format!("deleteWhen={}", every_hour.join(";")),
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ];
    keys.extend(more.iter().cloned());
    keys.into_iter()
        .flat_map(|kv| ["--set".to_string(), kv])
        .collect()
}

fn body(tag: &str, n: i64) -> Vec<u8> {
    let mut body = format!("{tag}-m{n}-").into_bytes();
    body.resize(BODY_BYTES, b't');
    body
}

/// Sends messages `from..to` to queue 0; every one must be stored.
fn send_range(conn: &mut RemotingConn, topic: &str, tag: &str, from: i64, to: i64) {
    for n in from..to {
        let header = send_header("tier_pg", topic, 0);
        let response = conn.request(send_request(&header, body(tag, n)));
        assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
        assert_eq!(
            response.ext_fields.get("queueOffset").unwrap(),
            &n.to_string()
        );
    }
}

/// A consumer of a new group pulls queue 0 from offset 0 to `count`: every
/// message, in order, with its body.
fn pull_all(conn: &mut RemotingConn, topic: &str, tag: &str, count: i64) {
    harness::tier::pull_expecting(conn, topic, count, &|n| body(tag, n));
}

fn info_number(conn: &mut RemotingConn, key: &str) -> Option<u64> {
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let info: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    info["table"][key].as_str()?.parse().ok()
}

fn local_segments(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.join("commitlog"))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.len() == 20)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Waits until every sealed segment is offloaded and the first one is
/// gone from the local disk.
fn wait_offloaded_and_dropped(conn: &mut RemotingConn, store: &Path) {
    let settled = wait_for(Duration::from_secs(60), || {
        let pending = info_number(conn, "tieredPendingSegments")?;
        let first_local = local_segments(store).first().cloned()?;
        (pending == 0 && first_local != FIRST_SEGMENT).then_some(())
    });
    assert!(
        settled.is_some(),
        "segments were not offloaded and dropped: local {:?}",
        local_segments(store)
    );
}

fn objects(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The starts the manifest records (`tier/manifest.json` in the store).
fn offloaded_starts(store: &Path) -> Vec<i64> {
    let bytes = std::fs::read(store.join("tier/manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    manifest["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["start"].as_i64().unwrap())
        .collect()
}

fn tier_broker(namesrv: &Namesrv, name: &str, remote: &Path) -> Broker {
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(name.into()),
            cluster_name: Some("TierCluster".into()),
            shards: Some(1),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: tier_args(remote, &[]),
            ..BrokerOpts::default()
        },
    )
}

/// Two replica sets share one `tieredStoreFilePath`: each writes under its
/// own `cluster/brokerName`, reads back its own messages, and a restart's
/// crash clean-up sweep leaves the other set's objects alone.
#[test]
fn replica_sets_sharing_a_store_keep_their_own_objects() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let mut a = tier_broker(&namesrv, "tier-a", remote.path());
    let mut b = tier_broker(&namesrv, "tier-b", remote.path());
    let topic = unique_name("TierShared");
    let mut conns = [a.connect(), b.connect()];
    for (conn, tag) in conns.iter_mut().zip(["a", "b"]) {
        harness::requests::create_topic(conn, &topic, 1);
        send_range(conn, &topic, tag, 0, 300);
    }
    wait_offloaded_and_dropped(&mut conns[0], a.store_dir());
    wait_offloaded_and_dropped(&mut conns[1], b.store_dir());
    let dir_a = remote.path().join("TierCluster/tier-a/commitlog");
    let dir_b = remote.path().join("TierCluster/tier-b/commitlog");
    let of_a = objects(&dir_a);
    let first = |names: &[String]| names.iter().any(|n| n.starts_with(FIRST_SEGMENT));
    assert!(first(&of_a), "{of_a:?}");
    assert!(first(&objects(&dir_b)));
    // Each set reads its own offloaded messages, not the other's.
    pull_all(&mut conns[0], &topic, "a", 300);
    pull_all(&mut conns[1], &topic, "b", 300);
    // B restarts (its sweep runs over its own prefix only): A's objects
    // stay, and A still reads everything.
    drop(conns);
    b.crash_and_restart();
    let mut conn_b = b.connect();
    pull_all(&mut conn_b, &topic, "b", 300);
    assert_eq!(objects(&dir_a), of_a);
    a.restart();
    pull_all(&mut a.connect(), &topic, "a", 300);
}

/// The CommitLog is cut back (as controller mode cuts it to a fork point,
/// the store closed) inside what was offloaded: the manifest forgets the
/// copies past the cut, so the segment written again there is uploaded
/// afresh, and once it leaves the disk a consumer reads the new messages,
/// never the stale remote bytes.
#[test]
fn a_cut_log_forgets_remote_copies_past_the_cut() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let mut broker = tier_broker(&namesrv, "tier-cut", remote.path());
    let topic = unique_name("TierCut");
    let mut conn = broker.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, "old", 0, 300);
    wait_offloaded_and_dropped(&mut conn, broker.store_dir());
    drop(conn);
    broker.process.kill();
    // Cut at the start of the newest offloaded segment still local.
    let local = local_segments(broker.store_dir());
    let cut = offloaded_starts(broker.store_dir())
        .into_iter()
        .filter(|start| local.contains(&format!("{start:020}")))
        .max()
        .unwrap_or_else(|| panic!("no offloaded segment is local: {local:?}"));
    let mut config = ferrocket_store::StoreConfig::new(broker.store_dir());
    config.segment_bytes = SEGMENT_BYTES;
    assert!(ferrocket_store::truncate_commitlog(&config, cut).unwrap() > 0);
    assert!(!offloaded_starts(broker.store_dir()).contains(&cut));
    broker.start_again();
    let mut conn = broker.connect();
    let header = send_header("tier_pg", &topic, 0);
    let first = conn.request(send_request(&header, b"first-after-cut".to_vec()));
    assert_eq!(first.code, response_code::SUCCESS, "{first:?}");
    let kept: i64 = first
        .ext_fields
        .get("queueOffset")
        .unwrap()
        .parse()
        .unwrap();
    assert!(kept < 300, "the cut dropped nothing: {kept}");
    // New messages fill the cut segment again and push it off the disk.
    send_range(&mut conn, &topic, "new", kept + 1, kept + 300);
    let cut_name = format!("{cut:020}");
    let dropped = wait_for(Duration::from_secs(60), || {
        let pending = info_number(&mut conn, "tieredPendingSegments")?;
        let local = local_segments(broker.store_dir());
        (pending == 0 && local.first()? > &cut_name).then_some(())
    });
    assert!(
        dropped.is_some(),
        "{:?}",
        local_segments(broker.store_dir())
    );
    let expect = |n: i64| match n {
        n if n < kept => body("old", n),
        n if n == kept => b"first-after-cut".to_vec(),
        n => body("new", n),
    };
    harness::tier::pull_expecting(&mut conn, &topic, kept + 300, &expect);
}

/// A broker of the failover set in controller mode with tiering on.
fn tier_controller_broker(namesrv: &Namesrv, controllers: &str, remote: &Path) -> Broker {
    let more = [
        "enableControllerMode=true".to_string(),
        format!("controllerAddr={controllers}"),
        format!("haListenPort={}", harness::process::free_port()),
        "allAckInSyncStateSet=true".into(),
        "syncBrokerMetadataPeriod=1000".into(),
        "checkSyncStateSetPeriod=1000".into(),
        "slaveTimeout=3000".into(),
        "slaveReadEnable=true".into(),
    ];
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(failover::SET.into()),
            shards: Some(1),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: tier_args(remote, &more),
            ..BrokerOpts::default()
        },
    )
}

fn wait_master(controllers: &str, id: i64) {
    let elected = wait_for(Duration::from_secs(60), || {
        failover::sync_state(controllers).filter(|s| s.master == Some(id))
    });
    assert!(
        elected.is_some(),
        "broker {id} is not master: {:?}",
        failover::sync_state(controllers)
    );
}

/// Controller mode: only the master uploads; the slave follows the set's
/// published manifest (and so drops offloaded segments under its local
/// budget too). The master is killed; the promoted slave serves a consumer
/// reading from offset 0 through object storage, and uploads what follows.
#[test]
fn a_promoted_slave_reads_offloaded_segments_and_uploads_on() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let mut first = tier_controller_broker(&namesrv, &addrs, remote.path());
    let second = tier_controller_broker(&namesrv, &addrs, remote.path());
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1) && s.in_sync.len() == 2)
    });
    assert!(joined.is_some(), "{:?}", failover::sync_state(&addrs));
    let topic = unique_name("TierFailover");
    // On both: the test does not wait for the slave's metadata sync.
    harness::requests::create_topic(&mut second.connect(), &topic, 1);
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, "a", 0, 300);
    wait_offloaded_and_dropped(&mut conn, first.store_dir());
    assert!(info_number(&mut conn, "tieredUploadedSegments").unwrap() >= 1);
    // The slave uploads nothing, and drops what the set offloaded.
    let mut slave = second.connect();
    let slave_dropped = wait_for(Duration::from_secs(60), || {
        let first_local = local_segments(second.store_dir()).first().cloned()?;
        (first_local != FIRST_SEGMENT).then_some(())
    });
    assert!(
        slave_dropped.is_some(),
        "the slave kept {:?}",
        local_segments(second.store_dir())
    );
    assert_eq!(info_number(&mut slave, "tieredUploadedSegments"), Some(0));
    drop((conn, slave));
    first.process.kill();
    wait_master(&addrs, 2);
    let mut conn = second.connect();
    pull_all(&mut conn, &topic, "a", 300);
    assert!(info_number(&mut conn, "tieredRemoteReads").unwrap() >= 1);
    // The new master uploads from where the set's manifest ends.
    let sent = wait_for(Duration::from_secs(30), || {
        let header = send_header("tier_pg", &topic, 0);
        let answer = conn.request(send_request(&header, body("a", 300)));
        (answer.code == response_code::SUCCESS).then_some(())
    });
    assert!(sent.is_some(), "the new master takes no sends");
    send_range(&mut conn, &topic, "a", 301, 600);
    let uploaded = wait_for(Duration::from_secs(60), || {
        (info_number(&mut conn, "tieredUploadedSegments")? >= 1).then_some(())
    });
    assert!(uploaded.is_some(), "the new master uploads nothing");
    pull_all(&mut conn, &topic, "a", 600);
}

/// HA reads through the tier: a slave that was down while the master
/// offloaded and dropped the segments it still needs catches up, served
/// from object storage (it was refused before).
#[test]
fn a_lagging_slave_catches_up_from_object_storage() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let role = |more: &[&str]| -> Vec<String> {
        let mut keys = vec![format!("haListenPort={}", harness::process::free_port())];
        keys.extend(more.iter().map(|s| s.to_string()));
        keys
    };
    let opts = |keys: Vec<String>| BrokerOpts {
        broker_name: Some("tier-ha".into()),
        cluster_name: Some("TierCluster".into()),
        shards: Some(1),
        commit_log_segment_bytes: Some(SEGMENT_BYTES),
        extra_args: tier_args(remote.path(), &keys),
        ..BrokerOpts::default()
    };
    let master = Broker::start(
        &namesrv.addr(),
        opts(role(&["brokerRole=ASYNC_MASTER", "slaveTimeout=3000"])),
    );
    let mut slave = Broker::start(
        &namesrv.addr(),
        opts(role(&[
            "brokerId=1",
            "brokerRole=SLAVE",
            "slaveReadEnable=true",
        ])),
    );
    let topic = unique_name("TierHa");
    let mut conn = master.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, "a", 0, 20);
    let same_end = |slave: &Broker| {
        wait_for(Duration::from_secs(60), || {
            let end = failover::commit_log_end(&master)?;
            (failover::commit_log_end(slave)? == end).then_some(end)
        })
    };
    assert!(same_end(&slave).is_some(), "the slave never caught up");
    let status = slave.process.stop();
    assert!(status.success(), "{status}");
    // The slave needs offset ~20 KB; the master drops segment 0.
    send_range(&mut conn, &topic, "a", 20, 300);
    wait_offloaded_and_dropped(&mut conn, master.store_dir());
    slave.start_again();
    let end = same_end(&slave);
    assert!(
        end.is_some(),
        "the lagging slave was not served: master {:?}, slave {:?}\n{}",
        failover::commit_log_end(&master),
        failover::commit_log_end(&slave),
        master.process.output()
    );
    assert!(info_number(&mut conn, "tieredRemoteReads").unwrap() >= 1);
}

/// Controller mode: a slave whose disk is lost restores nothing from the
/// object store (its log is the master's copy, which HA sends it, reading
/// through the tier); it catches up to the master and serves every
/// message. Restored segments could diverge from the master's log (it
/// restored them before).
#[test]
fn a_slave_with_a_lost_disk_copies_the_master_instead_of_restoring() {
    let dir = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let controllers = failover::controllers(dir.path(), 1);
    let addrs = failover::controller_addr(&controllers);
    let namesrv = Namesrv::start();
    let first = tier_controller_broker(&namesrv, &addrs, remote.path());
    let mut second = tier_controller_broker(&namesrv, &addrs, remote.path());
    let joined = wait_for(Duration::from_secs(60), || {
        failover::sync_state(&addrs).filter(|s| s.master == Some(1) && s.in_sync.len() == 2)
    });
    assert!(joined.is_some(), "{:?}", failover::sync_state(&addrs));
    let topic = unique_name("TierSlaveLost");
    harness::requests::create_topic(&mut second.connect(), &topic, 1);
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, "a", 0, 300);
    wait_offloaded_and_dropped(&mut conn, first.store_dir());
    let status = second.process.stop();
    assert!(status.success(), "{status}");
    // The whole disk: CommitLog, epoch file, broker identity.
    for item in std::fs::read_dir(second.store_dir()).unwrap() {
        let path = item.unwrap().path();
        match path.is_dir() {
            true => std::fs::remove_dir_all(&path).unwrap(),
            false => std::fs::remove_file(&path).unwrap(),
        }
    }
    second.start_again();
    let caught_up = wait_for(Duration::from_secs(60), || {
        let end = failover::commit_log_end(&first)?;
        (failover::commit_log_end(&second)? == end).then_some(end)
    });
    let output = second.process.output();
    assert!(caught_up.is_some(), "the slave never caught up\n{output}");
    assert!(
        output.contains("runs as a slave: nothing is restored"),
        "{output}"
    );
    assert!(!output.contains("empty store was restored"), "{output}");
    pull_all(&mut second.connect(), &topic, "a", 300);
}

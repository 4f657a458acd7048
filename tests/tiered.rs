//! Tiered storage against a real broker: sealed CommitLog segments go to
//! object storage (a local directory, and a real S3-compatible server,
//! `s3s-fs`, run as its own process), leave the local disk only once their
//! remote copy is verified, and a consumer of a new group reads everything
//! from offset 0 through object storage. A kill -9 loses nothing and the
//! uploads resume; a store that is down stops neither sends nor data.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::response_code;
use harness::process::free_port;
use harness::requests::pull_request;
use harness::tier::{
    self, body, info_number, local_segments, pull_all, runtime_info, s3s_fs_binary, send_range,
    start_s3, wait_offloaded_and_dropped, SEGMENT_BYTES,
};
use harness::{unique_name, wait_for, Broker, Namesrv, RemotingConn};

/// Read-ahead and cache small enough that the reads go remote again.
const READ_KEYS: [&str; 2] = [
    "tieredStoreReadAheadBytes=16384",
    "tieredStoreReadCacheBytes=65536",
];

fn start_broker(namesrv: &Namesrv, backend: &[String]) -> Broker {
    tier::start_broker(namesrv, backend, &READ_KEYS)
}

#[test]
fn offloads_to_a_directory_drops_locally_and_reads_through() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let backend = vec![
        "tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment"
            .to_string(),
        format!("tieredStoreFilePath={}", remote.path().display()),
    ];
    let mut broker = start_broker(&namesrv, &backend);
    let mut conn = broker.connect();
    let topic = unique_name("Tiered");
    harness::requests::create_topic(&mut conn, &topic, 2);
    send_range(&mut conn, &topic, 0, 400);
    wait_offloaded_and_dropped(&mut conn, &broker);
    // The remote copies are whole segments, named as the local files with
    // the uploader id after them.
    let first = tier::first_remote(remote.path()).expect("the first segment's object");
    let uploader = tier::uploader_id(&broker);
    assert!(
        first.ends_with(format!("00000000000000000000.{uploader}")),
        "{}",
        first.display()
    );
    assert_eq!(std::fs::metadata(&first).unwrap().len(), SEGMENT_BYTES);
    assert!(info_number(&mut conn, "tieredDroppedSegments") >= 1);
    assert_eq!(runtime_info(&mut conn)["tieredMinOffset"], "0");
    // The ConsumeQueue still starts at 0: a new group reads everything.
    pull_all(&mut conn, &topic, 400);
    assert!(info_number(&mut conn, "tieredRemoteReads") >= 1);
    // After a restart the manifest still names what is remote; the cache
    // is empty: a pop consumer of a new group reads it back too.
    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    pop_all(&mut conn, &topic, 400);
    pull_all(&mut conn, &topic, 400);
}

/// A pop consumer of a new group (initMode MIN) gets queue 0's messages
/// from offset 0 to `count`, each with its body.
fn pop_all(conn: &mut RemotingConn, topic: &str, count: i64) {
    let group = unique_name("tier_pop");
    let mut seen = std::collections::BTreeSet::new();
    let popped = wait_for(Duration::from_secs(60), || {
        let (_, got) = ferrocket_testkit::pop::pop(conn, &group, topic, 32, 60_000, 0);
        for message in got {
            assert_eq!(
                message.body.as_bytes(),
                body(message.offset),
                "{}",
                message.offset
            );
            seen.insert(message.offset);
        }
        (seen.len() as i64 >= count).then_some(())
    });
    assert!(
        popped.is_some(),
        "a pop consumer got {} of {count} messages",
        seen.len()
    );
    assert_eq!(seen.first(), Some(&0));
}

#[test]
fn s3_offload_survives_kill9_and_a_store_that_is_down() {
    let Some(binary) = s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("tier-bucket")).unwrap();
    let port = free_port();
    let mut s3 = start_s3(&binary, root.path(), port);
    let namesrv = Namesrv::start();
    let mut backend = tier::s3(port, "tier-bucket");
    backend.push("tieredStoreFilePath=broker-a".to_string());
    let mut broker = start_broker(&namesrv, &backend);
    let mut conn = broker.connect();
    let topic = unique_name("TieredS3");
    harness::requests::create_topic(&mut conn, &topic, 2);
    send_range(&mut conn, &topic, 0, 300);
    // kill -9 while uploads run: everything acknowledged stays, and the
    // uploads resume after the restart.
    drop(conn);
    broker.crash_and_restart();
    let mut conn = broker.connect();
    wait_offloaded_and_dropped(&mut conn, &broker);
    let object = tier::first_remote(&root.path().join("tier-bucket/broker-a"))
        .expect("the first segment's object");
    assert_eq!(std::fs::metadata(&object).unwrap().len(), SEGMENT_BYTES);
    pull_all(&mut conn, &topic, 300);

    // The store goes down: sends keep working, segments stay local, the
    // broker says why; back up, the uploads resume.
    s3.kill();
    // An offloaded message (not cached) cannot be read now: the pull is
    // answered with why, and the consumer keeps its offset.
    let group = unique_name("tier_down");
    let answer = conn.request(pull_request(&group, &topic, 0, 0, 32, 0));
    assert_eq!(answer.code, response_code::SYSTEM_ERROR, "{answer:?}");
    let remark = answer.remark.clone().unwrap_or_default();
    assert!(remark.contains("object storage"), "{remark}");
    let local_before = local_segments(&broker).len();
    send_range(&mut conn, &topic, 300, 700);
    let told = wait_for(Duration::from_secs(60), || {
        let info = runtime_info(&mut conn);
        let status = info["tieredStoreStatus"].as_str()?.to_string();
        (status.starts_with("segments stay local") && info["tieredPendingSegments"] != "0")
            .then_some(status)
    });
    assert!(
        told.is_some(),
        "the broker never said the store is down: {}",
        runtime_info(&mut conn)
    );
    assert!(
        local_segments(&broker).len() > local_before,
        "segments must stay local"
    );
    let mut s3 = start_s3(&binary, root.path(), port);
    wait_for(Duration::from_secs(90), || {
        let info = runtime_info(&mut conn);
        (info["tieredPendingSegments"] == "0" && info["tieredStoreStatus"] == "ok").then_some(())
    })
    .unwrap_or_else(|| panic!("uploads did not resume: {}", runtime_info(&mut conn)));
    pull_all(&mut conn, &topic, 700);
    drop(conn);
    drop(broker);

    // Wrong credentials: the broker serves, and says what is wrong.
    let mut wrong = backend.clone();
    wrong.push("objectStoreSecretKey=not-the-secret".to_string());
    let broker = start_broker(&namesrv, &wrong);
    let mut conn = broker.connect();
    let status = wait_for(Duration::from_secs(30), || {
        let status = runtime_info(&mut conn)["tieredStoreStatus"]
            .as_str()?
            .to_string();
        status.contains("refused the credentials").then_some(status)
    });
    assert!(status.is_some(), "{}", runtime_info(&mut conn));
    s3.stop();
}

/// A TCP proxy to `target` that closes every other connection it accepts
/// at once, and cuts the others after 150 ms, whatever is in flight (a
/// store failing about half its requests: the client's pooled connections
/// keep dying). Stops when dropped.
struct FlakyProxy {
    port: u16,
    refused: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl FlakyProxy {
    fn start(target: u16) -> Self {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = std::sync::Arc::clone(&stop);
        let refused = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let refusing = std::sync::Arc::clone(&refused);
        let thread = std::thread::spawn(move || {
            let mut accepted = 0u64;
            while !stopping.load(Ordering::Acquire) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                accepted += 1;
                if accepted % 2 == 1 {
                    refusing.fetch_add(1, Ordering::Relaxed);
                    drop(client);
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let pipe = |mut from: std::net::TcpStream, mut to: std::net::TcpStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                };
                let cut = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(150));
                    let _ = cut.0.shutdown(std::net::Shutdown::Both);
                    let _ = cut.1.shutdown(std::net::Shutdown::Both);
                });
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
            accepted
        });
        Self {
            port,
            refused,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FlakyProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn s3_that_refuses_half_the_connections_loses_nothing() {
    let Some(binary) = s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("flaky")).unwrap();
    let port = free_port();
    let mut s3 = start_s3(&binary, root.path(), port);
    let proxy = FlakyProxy::start(port);
    let namesrv = Namesrv::start();
    let backend = tier::s3(proxy.port, "flaky");
    let broker = start_broker(&namesrv, &backend);
    let mut conn = broker.connect();
    let topic = unique_name("TieredFlaky");
    harness::requests::create_topic(&mut conn, &topic, 2);
    send_range(&mut conn, &topic, 0, 400);
    wait_offloaded_and_dropped(&mut conn, &broker);
    pull_all(&mut conn, &topic, 400);
    let refused = proxy.refused.load(std::sync::atomic::Ordering::Relaxed);
    assert!(refused >= 3, "the proxy refused only {refused} connections");
    drop(conn);
    drop(broker);
    drop(proxy);
    s3.stop();
}

/// A deposed master's copy of a segment this master uploaded itself (same
/// start, another uploader id) is deleted by the master's sweep, though
/// the segment is still local (it lingered until it fell below the local
/// start before); its own copy, and another uploader's object at a start
/// it has not uploaded, stay.
#[test]
fn a_sweep_deletes_other_uploaders_copies_of_its_own_segments() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, &tier::posix(remote.path()));
    let mut conn = broker.connect();
    let topic = unique_name("TierSweep");
    harness::requests::create_topic(&mut conn, &topic, 1);
    send_range(&mut conn, &topic, 0, 400);
    wait_offloaded_and_dropped(&mut conn, &broker);
    let set_dir = remote.path().join(tier::SET_PREFIX);
    let own = tier::uploader_id(&broker);
    // Every sealed segment uploaded, the newest still local; the one
    // being written (not sealed, so not uploaded) after it.
    let newest_uploaded = || {
        std::fs::read_dir(set_dir.join("commitlog"))
            .ok()?
            .filter_map(|item| {
                let name = item.ok()?.file_name().to_string_lossy().into_owned();
                let (start, id) = name.split_once('.')?;
                (id == own).then_some(start.to_string())
            })
            .max()
    };
    let end = info_number(&mut conn, "commitLogMaxOffset") as i64;
    let active_start = end - end % SEGMENT_BYTES as i64;
    let newest_name = format!("{:020}", active_start - SEGMENT_BYTES as i64);
    let active = format!("{active_start:020}");
    let found = wait_for(Duration::from_secs(30), || {
        let pending = info_number(&mut conn, "tieredPendingSegments");
        let local = local_segments(&broker);
        let ready = pending == 0 && newest_uploaded().as_ref() == Some(&newest_name);
        (ready && local.contains(&newest_name) && local.contains(&active)).then_some(())
    });
    assert!(
        found.is_some(),
        "{:?}, {:?}, end {end}",
        newest_uploaded(),
        local_segments(&broker)
    );
    drop(conn);
    let status = broker.process.stop();
    assert!(status.success(), "{status}");
    assert_eq!(newest_uploaded().as_ref(), Some(&newest_name));
    let commitlog = set_dir.join("commitlog");
    let own_copy = commitlog.join(format!("{newest_name}.{own}"));
    let deposed = commitlog.join(format!("{newest_name}.00000000deadbeef"));
    let unrecorded = commitlog.join(format!("{active}.00000000deadbeef"));
    std::fs::copy(&own_copy, &deposed).unwrap();
    std::fs::copy(&own_copy, &unrecorded).unwrap();
    broker.start_again();
    let swept = wait_for(Duration::from_secs(30), || {
        (!deposed.exists()).then_some(())
    });
    assert!(swept.is_some(), "{} stayed", deposed.display());
    assert!(own_copy.exists(), "its own copy was deleted");
    assert!(
        unrecorded.exists(),
        "an object at a start it has not uploaded was deleted"
    );
    // Not swept as stale: the segment is still local.
    assert!(local_segments(&broker).contains(&newest_name));
    pull_all(&mut broker.connect(), &topic, 400);
}

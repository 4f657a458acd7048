//! Tiered storage against a real broker: sealed CommitLog segments go to
//! object storage (a local directory, and a real S3-compatible server,
//! `s3s-fs`, run as its own process), leave the local disk only once their
//! remote copy is verified, and a consumer of a new group reads everything
//! from offset 0 through object storage. A kill -9 loses nothing and the
//! uploads resume; a store that is down stops neither sends nor data.

mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::{free_port, ServerProcess};
use harness::requests::{pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SEGMENT_BYTES: u64 = 64 * 1024;
const BODY_BYTES: usize = 1000;

fn tier_args(backend: &[String]) -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let mut keys = vec![
        "tieredStorageLevel=NOT_IN_DISK".to_string(),
        "tieredStoreUploadIntervalMs=100".to_string(),
        // Two sealed segments stay local; older offloaded ones go.
        format!("tieredStoreLocalMaxBytes={}", 3 * SEGMENT_BYTES),
        "tieredStoreReadAheadBytes=16384".to_string(),
        "tieredStoreReadCacheBytes=65536".to_string(),
        "cleanResourceInterval=200".to_string(),
        // Broker-wide retention never deletes anything here.
        format!("deleteWhen={}", every_hour.join(";")),
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ];
    keys.extend(backend.iter().cloned());
    keys.into_iter()
        .flat_map(|kv| ["--set".to_string(), kv])
        .collect()
}

fn start_broker(namesrv: &Namesrv, backend: &[String]) -> Broker {
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: tier_args(backend),
            ..BrokerOpts::default()
        },
    )
}

fn body(n: i64) -> Vec<u8> {
    let mut body = format!("m{n}-").into_bytes();
    body.resize(BODY_BYTES, b't');
    body
}

/// Sends messages `from..to` to queue 0; every one must be stored.
fn send_range(conn: &mut RemotingConn, topic: &str, from: i64, to: i64) {
    for n in from..to {
        let header = send_header("tier_pg", topic, 0);
        let response = conn.request(send_request(&header, body(n)));
        assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
        assert_eq!(
            response.ext_fields.get("queueOffset").unwrap(),
            &n.to_string()
        );
    }
}

/// A consumer of a new group pulls queue 0 from offset 0 to `count`: every
/// message, in order, with its body.
fn pull_all(conn: &mut RemotingConn, topic: &str, count: i64) {
    let group = unique_name("tier_cg");
    let mut offset = 0;
    let pulled = wait_for(Duration::from_secs(60), || {
        let answer = conn.request(pull_request(&group, topic, 0, offset, 32, 0));
        if answer.code == response_code::SUCCESS {
            for record in records(&answer.body, true) {
                let record = record.unwrap();
                assert_eq!(record.queue_offset, offset);
                assert_eq!(record.body, body(offset), "message {offset}");
                offset += 1;
            }
        } else {
            assert!(
                answer.code == response_code::PULL_NOT_FOUND
                    || answer.code == response_code::PULL_RETRY_IMMEDIATELY
                    || answer.code == response_code::SYSTEM_ERROR,
                "{answer:?}"
            );
        }
        (offset >= count).then_some(())
    });
    assert!(
        pulled.is_some(),
        "a new consumer read only {offset} of {count} messages"
    );
}

fn runtime_info(conn: &mut RemotingConn) -> serde_json::Value {
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let info: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    info["table"].clone()
}

fn info_number(conn: &mut RemotingConn, key: &str) -> u64 {
    runtime_info(conn)[key]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the runtime info"))
}

fn local_segments(broker: &Broker) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(broker.store_dir().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.len() == 20)
        .collect();
    names.sort();
    names
}

/// Waits until every sealed segment is offloaded and the oldest are gone
/// from the local disk.
fn wait_offloaded_and_dropped(conn: &mut RemotingConn, broker: &Broker) {
    let settled = wait_for(Duration::from_secs(60), || {
        let pending = info_number(conn, "tieredPendingSegments");
        let first_local = local_segments(broker).first().cloned()?;
        (pending == 0 && first_local != "00000000000000000000").then_some(())
    });
    assert!(
        settled.is_some(),
        "segments were not offloaded and dropped: local {:?}, info {}",
        local_segments(broker),
        runtime_info(conn)
    );
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
    // The remote copies are whole segments, named as the local files.
    let first = remote
        .path()
        .join("DefaultCluster/broker-a/commitlog/00000000000000000000");
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

/// The `s3s-fs` binary: `FERROCKET_S3S_FS`, else where scripts/test-all.sh
/// installs it. `None` (skip) only outside that script.
fn s3s_fs_binary() -> Option<PathBuf> {
    let path = std::env::var_os("FERROCKET_S3S_FS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/s3s/bin/s3s-fs"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("FERROCKET_TEST_ALL").is_none(),
        "scripts/test-all.sh should have installed s3s-fs at {}",
        path.display()
    );
    eprintln!(
        "SKIPPED: no s3s-fs at {} (scripts/test-all.sh installs it; or set FERROCKET_S3S_FS)",
        path.display()
    );
    None
}

/// An S3-compatible server on 127.0.0.1 serving `root` (bucket = a directory).
fn start_s3(binary: &Path, root: &Path, port: u16) -> ServerProcess {
    let args: Vec<String> = [
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--access-key",
        "tierak",
        "--secret-key",
        "tiersk",
        &root.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut server = ServerProcess::spawn_program(binary, &args, root).unwrap();
    let up = wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "s3s-fs did not listen: {}", server.output());
    let _ = server.is_running();
    server
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
    let backend = vec![
        "tieredBackendServiceProvider=s3".to_string(),
        format!("objectStoreEndpoint=http://127.0.0.1:{port}"),
        "objectStoreBucket=tier-bucket".to_string(),
        "objectStoreAccessKey=tierak".to_string(),
        "objectStoreSecretKey=tiersk".to_string(),
        "tieredStoreFilePath=broker-a".to_string(),
    ];
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
    let object = root
        .path()
        .join("tier-bucket/broker-a/DefaultCluster/broker-a/commitlog/00000000000000000000");
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
    let backend = vec![
        "tieredBackendServiceProvider=s3".to_string(),
        format!("objectStoreEndpoint=http://127.0.0.1:{}", proxy.port),
        "objectStoreBucket=flaky".to_string(),
        "objectStoreAccessKey=tierak".to_string(),
        "objectStoreSecretKey=tiersk".to_string(),
    ];
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

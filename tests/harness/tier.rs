//! Tiered storage set-up shared by the tiered tests: a broker with small
//! CommitLog segments that offloads them fast and keeps few locally, its
//! object store (a local directory, or `s3s-fs`, a real S3-compatible
//! server run as its own process), and waits on what the broker reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use super::process::ServerProcess;
use super::requests::{pull_request, send_header, send_request};
use super::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

/// CommitLog segment size of a tiered test broker.
pub const SEGMENT_BYTES: u64 = 64 * 1024;
/// Body size of the messages [`send_range`] sends.
pub const BODY_BYTES: usize = 1000;
/// The first segment's name under the store root and the object prefix.
pub const FIRST_OBJECT: &str = "commitlog/00000000000000000000";
/// The replica set's own directory under the object prefix (its cluster
/// and broker name).
pub const SET_PREFIX: &str = "DefaultCluster/broker-a";

/// The objects of the segment at `start` in a replica set's directory
/// `set_dir` (one per uploader: `commitlog/{start:020}.{uploader}`, or
/// `{start:020}` as the layout before uploader ids named it), sorted.
pub fn segment_objects(set_dir: &Path, start: i64) -> Vec<PathBuf> {
    let name = format!("{start:020}");
    let mut found: Vec<PathBuf> = std::fs::read_dir(set_dir.join("commitlog"))
        .map(|listing| {
            listing
                .filter_map(|item| item.ok())
                .filter(|item| {
                    let file = item.file_name().to_string_lossy().into_owned();
                    file == name || file.starts_with(&format!("{name}."))
                })
                .map(|item| item.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The first segment's object of the default replica set ([`SET_PREFIX`])
/// under the object store directory `remote`, when there is one.
pub fn first_remote(remote: &Path) -> Option<PathBuf> {
    let mut found = segment_objects(&remote.join(SET_PREFIX), 0);
    assert!(found.len() <= 1, "one uploader, several objects: {found:?}");
    found.pop()
}

/// The uploader id of a broker's store (the first line of `tier/uploader`;
/// the second names the directory it is bound to).
pub fn uploader_id(broker: &Broker) -> String {
    let file = std::fs::read_to_string(broker.store_dir().join("tier/uploader")).unwrap();
    file.lines().next().unwrap_or_default().to_string()
}

/// The backend keys of a directory as the object store.
pub fn posix(remote: &Path) -> Vec<String> {
    vec![
        "tieredBackendServiceProvider=posix".to_string(),
        format!("tieredStoreFilePath={}", remote.display()),
    ]
}

/// The backend keys of an `s3s-fs` bucket on 127.0.0.1:`port` (the
/// credentials [`start_s3`] gives it).
pub fn s3(port: u16, bucket: &str) -> Vec<String> {
    vec![
        "tieredBackendServiceProvider=s3".to_string(),
        format!("objectStoreEndpoint=http://127.0.0.1:{port}"),
        format!("objectStoreBucket={bucket}"),
        "objectStoreAccessKey=tierak".to_string(),
        "objectStoreSecretKey=tiersk".to_string(),
    ]
}

/// The keys of a tiered test broker offloading to `backend`: uploads every
/// 100 ms, `local_segments` segments' bytes kept locally (older offloaded
/// ones go), broker-wide retention off.
fn tier_keys(backend: &[String], local_segments: u64) -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let mut keys = vec![
        "tieredStorageLevel=NOT_IN_DISK".to_string(),
        "tieredStoreUploadIntervalMs=100".to_string(),
        format!(
            "tieredStoreLocalMaxBytes={}",
            local_segments * SEGMENT_BYTES
        ),
        "cleanResourceInterval=200".to_string(),
        format!("deleteWhen={}", every_hour.join(";")),
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ];
    keys.extend(backend.iter().cloned());
    keys
}

fn as_args(keys: Vec<String>) -> Vec<String> {
    keys.into_iter()
        .flat_map(|kv| ["--set".to_string(), kv])
        .collect()
}

/// Starts a two-shard broker offloading to `backend`: uploads every
/// 100 ms, two sealed segments kept locally (older offloaded ones go),
/// broker-wide retention off; `extra` keys are added last (they win).
pub fn start_broker(namesrv: &Namesrv, backend: &[String], extra: &[&str]) -> Broker {
    let mut keys = tier_keys(backend, 3);
    keys.extend(extra.iter().map(|s| s.to_string()));
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: as_args(keys),
            ..BrokerOpts::default()
        },
    )
}

/// A one-shard broker of the failover set ([`super::failover::SET`]) in
/// controller mode (the controllers at `controllers`), offloading to
/// `backend` as [`start_broker`]'s do, four segments kept locally; `extra`
/// keys are added last.
pub fn controller_broker(
    namesrv: &Namesrv,
    controllers: &str,
    backend: &[String],
    extra: &[&str],
) -> Broker {
    let mut keys = tier_keys(backend, 4);
    keys.extend([
        "enableControllerMode=true".to_string(),
        format!("controllerAddr={controllers}"),
        format!("haListenPort={}", super::process::free_port()),
        "allAckInSyncStateSet=true".into(),
        "syncBrokerMetadataPeriod=1000".into(),
        "checkSyncStateSetPeriod=1000".into(),
        "slaveTimeout=3000".into(),
    ]);
    keys.extend(extra.iter().map(|s| s.to_string()));
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(super::failover::SET.into()),
            shards: Some(1),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: as_args(keys),
            ..BrokerOpts::default()
        },
    )
}

/// Message `n`'s body: `m{n}-` padded to [`BODY_BYTES`].
pub fn body(n: i64) -> Vec<u8> {
    let mut body = format!("m{n}-").into_bytes();
    body.resize(BODY_BYTES, b't');
    body
}

/// Sends messages `from..to` to queue 0 of `topic` (whose queue 0 holds
/// `from` messages): every one must be stored at its number.
pub fn send_range(conn: &mut RemotingConn, topic: &str, from: i64, to: i64) {
    for n in from..to {
        let header = send_header("tier_pg", topic, 0);
        let response = conn.request(send_request(&header, body(n)));
        assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
        assert_eq!(
            response.ext_fields.get("queueOffset"),
            Some(n.to_string().as_str())
        );
    }
}

/// A consumer of a new group pulls queue 0 of `topic` from offset 0 to
/// `count`: every message, in order, with its [`body`].
pub fn pull_all(conn: &mut RemotingConn, topic: &str, count: i64) {
    pull_expecting(conn, topic, count, &body);
}

/// As [`pull_all`], each body as `expect` says.
pub fn pull_expecting(
    conn: &mut RemotingConn,
    topic: &str,
    count: i64,
    expect: &dyn Fn(i64) -> Vec<u8>,
) {
    let group = unique_name("tier_cg");
    let mut offset = 0;
    let mut last = String::new();
    let pulled = wait_for(Duration::from_secs(60), || {
        let answer = conn.request(pull_request(&group, topic, 0, offset, 32, 0));
        last = format!(
            "{} {:?} {:?}",
            answer.code, answer.remark, answer.ext_fields
        );
        if answer.code == response_code::SUCCESS {
            for record in records(&answer.body, true) {
                let record = record.unwrap();
                assert_eq!(record.queue_offset, offset);
                assert_eq!(
                    String::from_utf8_lossy(record.body),
                    String::from_utf8_lossy(&expect(offset)),
                    "message {offset}"
                );
                offset += 1;
            }
        }
        (offset >= count).then_some(())
    });
    assert!(
        pulled.is_some(),
        "a new consumer read only {offset} of {count} messages; last answer: {last}"
    );
}

/// The broker's runtime info table (`GET_BROKER_RUNTIME_INFO`).
pub fn runtime_info(conn: &mut RemotingConn) -> serde_json::Value {
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let info: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    info["table"].clone()
}

/// A number of the runtime info.
pub fn info_number(conn: &mut RemotingConn, key: &str) -> u64 {
    runtime_info(conn)[key]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the runtime info"))
}

/// The broker's local CommitLog segment names, oldest first.
pub fn local_segments(broker: &Broker) -> Vec<String> {
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
pub fn wait_offloaded_and_dropped(conn: &mut RemotingConn, broker: &Broker) {
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

/// Waits until the segment holding CommitLog offset `physical_offset` is
/// offloaded and gone from the local disk.
pub fn wait_dropped_locally(conn: &mut RemotingConn, broker: &Broker, physical_offset: i64) {
    let dropped = wait_for(Duration::from_secs(60), || {
        let first: i64 = local_segments(broker).first()?.parse().ok()?;
        (first > physical_offset).then_some(())
    });
    assert!(
        dropped.is_some(),
        "offset {physical_offset} stayed local: local {:?}, info {}",
        local_segments(broker),
        runtime_info(conn)
    );
}

/// The `s3s-fs` binary: `FERROCKET_S3S_FS`, else where scripts/test-all.sh
/// installs it. `None` (skip) only outside that script.
pub fn s3s_fs_binary() -> Option<PathBuf> {
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

/// An S3-compatible server on 127.0.0.1:`port` serving `root` (a bucket is
/// a directory under it), with the credentials [`s3`] names.
pub fn start_s3(binary: &Path, root: &Path, port: u16) -> ServerProcess {
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

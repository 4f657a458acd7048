//! Controllers as brokers see them: real Remoting connections to one and to
//! three controllers on 127.0.0.1, each with its own store directory.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_client::{Connection, ConnectionConfig};
use ferrocket_controller::config::{parse_peers, ControllerConfig};
use ferrocket_controller::{start_on, ControllerHandle};
use ferrocket_protocol::body::{encode_json, SyncStateSet};
use ferrocket_protocol::codes::{request_code as code, response_code as rc};
use ferrocket_protocol::header::controller::*;
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{ExtFields, FrameDecoder, RemotingCommand};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

fn config(peers: &str, self_id: &str, dir: &std::path::Path) -> ControllerConfig {
    ControllerConfig {
        peers: parse_peers(peers).unwrap(),
        self_id: self_id.into(),
        store_path: dir.join(self_id),
        election_timeout_ms: 600,
        scan_not_active_broker_interval_ms: 200,
        scan_inactive_master_interval_ms: 200,
        ..ControllerConfig::default()
    }
}

/// Binds `n` listeners on 127.0.0.1 and returns them with their peer list.
fn listeners(n: usize) -> (Vec<TcpListener>, String) {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let peers: Vec<String> = listeners
        .iter()
        .enumerate()
        .map(|(i, l)| format!("n{i}-{}", l.local_addr().unwrap()))
        .collect();
    (listeners, peers.join(";"))
}

async fn connect(addr: &str) -> Connection {
    Connection::connect(addr, ConnectionConfig::default(), None)
        .await
        .unwrap()
}

async fn call(
    conn: &Connection,
    request_code: i32,
    ext: ExtFields,
    body: Vec<u8>,
) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code).with_body(body);
    request.ext_fields = ext;
    conn.invoke(request).await.unwrap()
}

/// Waits until one of `handles` leads and returns its index.
async fn leader_of(handles: &[Option<ControllerHandle>]) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        let leaders: Vec<usize> = handles
            .iter()
            .enumerate()
            .filter(|(_, h)| h.as_ref().is_some_and(|h| h.is_leader()))
            .map(|(i, _)| i)
            .collect();
        if leaders.len() == 1 {
            return leaders[0];
        }
        assert!(Instant::now() < deadline, "no single leader: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Registers broker `id` of set "b" the way a broker starts: next id,
/// apply, register; then one heartbeat on the same connection.
async fn register(conn: &Connection, id: i64, addr: &str, epoch: i32, max_offset: i64) {
    let names = GetNextBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
    };
    let next = call(
        conn,
        code::CONTROLLER_GET_NEXT_BROKER_ID,
        names.to_ext(),
        vec![],
    )
    .await;
    assert_eq!(next.code, rc::SUCCESS, "{:?}", next.remark);
    let next = GetNextBrokerIdResponseHeader::from_ext(&next.ext_fields).unwrap();
    assert_eq!(next.next_broker_id, id);
    let apply = ApplyBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        applied_broker_id: id,
        register_check_code: format!("{addr};1"),
    };
    let applied = call(
        conn,
        code::CONTROLLER_APPLY_BROKER_ID,
        apply.to_ext(),
        vec![],
    )
    .await;
    assert_eq!(applied.code, rc::SUCCESS, "{:?}", applied.remark);
    let register = RegisterBrokerToControllerRequestHeader {
        cluster_name: "c".into(),
        broker_name: "b".into(),
        broker_id: id,
        broker_address: addr.into(),
        invoke_time: None,
    };
    let registered = call(
        conn,
        code::CONTROLLER_REGISTER_BROKER,
        register.to_ext(),
        vec![],
    )
    .await;
    assert_eq!(registered.code, rc::SUCCESS, "{:?}", registered.remark);
    heartbeat(conn, id, addr, epoch, max_offset).await;
}

async fn heartbeat(conn: &Connection, id: i64, addr: &str, epoch: i32, max_offset: i64) {
    let beat = BrokerHeartbeatRequestHeader {
        cluster_name: "c".into(),
        broker_addr: addr.into(),
        broker_name: "b".into(),
        broker_id: Some(id),
        epoch: Some(epoch),
        max_offset: Some(max_offset),
        heartbeat_timeout_mills: Some(60_000),
        ..Default::default()
    };
    let answer = call(conn, code::BROKER_HEARTBEAT, beat.to_ext(), vec![]).await;
    assert_eq!(answer.code, rc::SUCCESS, "{:?}", answer.remark);
}

async fn elect(conn: &Connection, id: i64) -> RemotingCommand {
    let request = ElectMasterRequestHeader {
        cluster_name: Some("c".into()),
        broker_name: "b".into(),
        broker_id: Some(id),
        ..Default::default()
    };
    call(
        conn,
        code::CONTROLLER_ELECT_MASTER,
        request.to_ext(),
        vec![],
    )
    .await
}

async fn replica_info(conn: &Connection) -> (RemotingCommand, GetReplicaInfoResponseHeader) {
    let request = GetReplicaInfoRequestHeader {
        broker_name: "b".into(),
    };
    let answer = call(
        conn,
        code::CONTROLLER_GET_REPLICA_INFO,
        request.to_ext(),
        vec![],
    )
    .await;
    let header = GetReplicaInfoResponseHeader::from_ext(&answer.ext_fields).unwrap();
    (answer, header)
}

/// A stand-in broker port that reports the request codes it receives.
async fn fake_broker() -> (String, mpsc::UnboundedReceiver<RemotingCommand>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
                let mut buf = BytesMut::new();
                while stream.read_buf(&mut buf).await.is_ok_and(|n| n > 0) {
                    while let Ok(Some(frame)) = decoder.next_frame(&mut buf) {
                        let _ = tx.send(frame);
                    }
                }
            });
        }
    });
    (addr, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_controller_elects_replaces_a_dead_master_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut listeners, peers) = listeners(1);
    let handle = start_on(config(&peers, "n0", dir.path()), listeners.remove(0)).unwrap();
    let addr = handle.addr().to_string();
    let handles = [Some(handle)];
    leader_of(&handles).await;

    let broker1 = connect(&addr).await;
    let broker2 = connect(&addr).await;
    let (broker2_addr, mut notified) = fake_broker().await;
    register(&broker1, 1, "127.0.0.1:1", 0, 0).await;
    register(&broker2, 2, &broker2_addr, 0, 0).await;

    let first = elect(&broker1, 1).await;
    assert_eq!(first.code, rc::SUCCESS, "{:?}", first.remark);
    let header = ElectMasterResponseHeader::from_ext(&first.ext_fields).unwrap();
    assert_eq!(
        (header.master_broker_id, header.master_epoch),
        (Some(1), Some(1))
    );
    assert_eq!(
        elect(&broker2, 2).await.code,
        rc::CONTROLLER_MASTER_STILL_EXIST
    );

    // The master adds broker 2 to the in-sync set.
    let alter = AlterSyncStateSetRequestHeader {
        broker_name: "b".into(),
        master_broker_id: Some(1),
        master_epoch: Some(1),
        invoke_time: None,
    };
    let proposed = SyncStateSet {
        sync_state_set: [1, 2].into(),
        sync_state_set_epoch: 1,
    };
    let altered = call(
        &broker1,
        code::CONTROLLER_ALTER_SYNC_STATE_SET,
        alter.to_ext(),
        encode_json(&proposed),
    )
    .await;
    assert_eq!(altered.code, rc::SUCCESS, "{:?}", altered.remark);
    // A proposal made against the old set is fenced.
    let shrink = SyncStateSet {
        sync_state_set: [1].into(),
        sync_state_set_epoch: 1,
    };
    let stale = call(
        &broker1,
        code::CONTROLLER_ALTER_SYNC_STATE_SET,
        alter.to_ext(),
        encode_json(&shrink),
    )
    .await;
    assert_eq!(stale.code, rc::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH);

    // The master's connection closes (kill -9): broker 2 is elected at once
    // and told so.
    broker1.close();
    let deadline = Instant::now() + WAIT;
    // (The first election was announced too: skip to the new master's.)
    let notice = loop {
        let frame = tokio::time::timeout(WAIT, notified.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(Instant::now() < deadline);
        if frame.code != code::NOTIFY_BROKER_ROLE_CHANGED {
            continue;
        }
        let notice = NotifyBrokerRoleChangedRequestHeader::from_ext(&frame.ext_fields).unwrap();
        if notice.master_broker_id == Some(2) {
            break notice;
        }
        assert_eq!(notice.master_broker_id, Some(1));
    };
    assert_eq!(notice.master_epoch, Some(2));
    assert_eq!(
        notice.master_address.as_deref(),
        Some(broker2_addr.as_str())
    );
    let (answer, info) = replica_info(&broker2).await;
    assert_eq!(answer.code, rc::SUCCESS);
    assert_eq!(
        (info.master_broker_id, info.master_epoch),
        (Some(2), Some(2))
    );

    // Restart on the same store: the state is still there.
    let [handle] = handles;
    handle.unwrap().stop();
    let listener = TcpListener::bind(&addr).unwrap();
    let handle = start_on(config(&peers, "n0", dir.path()), listener).unwrap();
    let handles = [Some(handle)];
    leader_of(&handles).await;
    let conn = connect(&addr).await;
    let (answer, info) = replica_info(&conn).await;
    assert_eq!(answer.code, rc::SUCCESS, "{:?}", answer.remark);
    assert_eq!(
        (info.master_broker_id, info.master_epoch),
        (Some(2), Some(2))
    );
    let set: SyncStateSet = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        (set.sync_state_set, set.sync_state_set_epoch),
        ([2].into(), 3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_keep_the_state_when_the_leader_dies() {
    let dir = tempfile::tempdir().unwrap();
    let (listeners, peers) = listeners(3);
    let mut handles: Vec<Option<ControllerHandle>> = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| Some(start_on(config(&peers, &format!("n{i}"), dir.path()), l).unwrap()))
        .collect();
    let addrs: Vec<String> = handles
        .iter()
        .map(|h| h.as_ref().unwrap().addr().to_string())
        .collect();

    // A follower refuses with CONTROLLER_NOT_LEADER and says who leads.
    // (It learns the leader from its first heartbeat; on a busy machine
    // leadership may still move: look again until the view is stable.)
    let deadline = Instant::now() + WAIT;
    let leader = loop {
        let leader = leader_of(&handles).await;
        let follower = connect(&addrs[(leader + 1) % 3]).await;
        let (refused, _) = replica_info(&follower).await;
        let meta = call(
            &follower,
            code::CONTROLLER_GET_METADATA_INFO,
            ExtFields::new(),
            vec![],
        )
        .await;
        let meta = GetMetaDataResponseHeader::from_ext(&meta.ext_fields).unwrap();
        let named = meta.controller_leader_address.as_deref() == Some(addrs[leader].as_str());
        if refused.code == rc::CONTROLLER_NOT_LEADER && !meta.is_leader && named {
            break leader;
        }
        assert!(Instant::now() < deadline, "no stable leader: {meta:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    // Brokers send heartbeats to every controller, as Java's do.
    let mut conns = Vec::new();
    for addr in &addrs {
        conns.push(connect(addr).await);
    }
    register(&conns[leader], 1, "127.0.0.1:1", 0, 0).await;
    for conn in &conns {
        heartbeat(conn, 1, "127.0.0.1:1", 0, 0).await;
    }
    assert_eq!(elect(&conns[leader], 1).await.code, rc::SUCCESS);

    // The leader dies; another takes over with the same state.
    handles[leader].take().unwrap().stop();
    let next = leader_of(&handles).await;
    assert_ne!(next, leader);
    let (answer, info) = replica_info(&conns[next]).await;
    assert_eq!(answer.code, rc::SUCCESS, "{:?}", answer.remark);
    assert_eq!(
        (info.master_broker_id, info.master_epoch),
        (Some(1), Some(1))
    );
    // And it still takes writes: a second broker joins.
    register(&conns[next], 2, "127.0.0.1:2", 0, 0).await;
    for handle in handles.into_iter().flatten() {
        handle.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_get_ids_through_identity_files_and_learn_the_master() {
    use ferrocket_controller::member::{read_identity, temp_path, ControllerClient, Member};
    let dir = tempfile::tempdir().unwrap();
    let (mut listeners, peers) = listeners(1);
    let handle = start_on(config(&peers, "n0", dir.path()), listeners.remove(0)).unwrap();
    let handles = [Some(handle)];
    leader_of(&handles).await;
    let addr = handles[0].as_ref().unwrap().addr().to_string();
    // A dead address first: the client must skip it to find the leader.
    let client = ControllerClient::new(vec!["127.0.0.1:1".into(), addr], Duration::from_secs(2));
    let member = |n: u8| Member {
        cluster: "c".into(),
        broker_name: "b".into(),
        address: format!("127.0.0.1:{n}"),
    };
    let identity_a = dir.path().join("a").join("brokerIdentity");
    let (id_a, master) = client.register(&member(1), &identity_a).await.unwrap();
    assert_eq!((id_a, master), (1, None));
    assert_eq!(std::fs::read_to_string(&identity_a).unwrap(), "c#b#1");
    assert!(!temp_path(&identity_a).exists());
    // Registering again keeps the id.
    assert_eq!(client.register(&member(1), &identity_a).await.unwrap().0, 1);

    // A crash after the temp file: the pending id is applied for, not a new one.
    let identity_b = dir.path().join("b").join("brokerIdentity");
    std::fs::create_dir_all(identity_b.parent().unwrap()).unwrap();
    std::fs::write(temp_path(&identity_b), "c#b#2#127.0.0.1:2;5").unwrap();
    let (id_b, _) = client.register(&member(2), &identity_b).await.unwrap();
    assert_eq!(id_b, 2);
    assert_eq!(read_identity(&identity_b, &member(2)).unwrap(), Some(2));

    // A heartbeat, then an election: A is master, and B learns it.
    let beat = BrokerHeartbeatRequestHeader {
        cluster_name: "c".into(),
        broker_addr: "127.0.0.1:1".into(),
        broker_name: "b".into(),
        broker_id: Some(1),
        ..Default::default()
    };
    client.heartbeat_all(&beat).await;
    let elected = client.elect(&member(1), 1).await.unwrap().unwrap();
    assert_eq!((elected.broker_id, elected.epoch), (1, 1));
    let seen = client.replica_info("b").await.unwrap().unwrap();
    assert_eq!((seen.broker_id, seen.address.as_str()), (1, "127.0.0.1:1"));
    let still = client.elect(&member(2), 2).await.unwrap().unwrap();
    assert_eq!(still.broker_id, 1, "MASTER_STILL_EXIST names the master");

    // An identity file of another set is refused.
    let other = Member {
        broker_name: "other".into(),
        ..member(1)
    };
    assert!(client.register(&other, &identity_a).await.is_err());
}

/// Registers a broker of set `name` (id 1) through `conn`: one log entry.
async fn apply_first_id(conn: &Connection, name: &str) -> i32 {
    let apply = ApplyBrokerIdRequestHeader {
        cluster_name: "c".into(),
        broker_name: name.into(),
        applied_broker_id: 1,
        register_check_code: format!("127.0.0.1:1;{name}"),
    };
    call(
        conn,
        code::CONTROLLER_APPLY_BROKER_ID,
        apply.to_ext(),
        vec![],
    )
    .await
    .code
}

/// Applies for set `name` on whichever controller leads, retrying while
/// leadership moves (a rejoining controller may start an election).
async fn apply_on_leader(handles: &[Option<ControllerHandle>], addrs: &[String], name: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let leader = leader_of(handles).await;
        let conn = connect(&addrs[leader]).await;
        let code = apply_first_id(&conn, name).await;
        if code == rc::SUCCESS {
            return;
        }
        assert!(Instant::now() < deadline, "{name}: still {code}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_controller_catches_up_from_a_snapshot_after_the_log_was_purged() {
    let dir = tempfile::tempdir().unwrap();
    let (listeners, peers) = listeners(3);
    let configs: Vec<ControllerConfig> = (0..3)
        .map(|i| ControllerConfig {
            snapshot_logs: 5,
            ..config(&peers, &format!("n{i}"), dir.path())
        })
        .collect();
    let addrs: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let mut handles: Vec<Option<ControllerHandle>> = listeners
        .into_iter()
        .zip(configs.clone())
        .map(|(l, c)| Some(start_on(c, l).unwrap()))
        .collect();
    let leader = leader_of(&handles).await;
    let (lagging, other) = ((leader + 1) % 3, (leader + 2) % 3);
    handles[lagging].take().unwrap().stop();

    // Thirty entries: several snapshots, and the log purged behind them.
    for n in 0..30 {
        apply_on_leader(&handles, &addrs, &format!("set-{n}")).await;
    }
    let leader = leader_of(&handles).await;
    let snapshot = dir
        .path()
        .join(format!("n{leader}"))
        .join("raft-snapshot.json");
    assert!(snapshot.exists(), "the leader took a snapshot");

    // The lagging one returns; with the other gone, a write needs it.
    let listener = TcpListener::bind(&addrs[lagging]).unwrap();
    handles[lagging] = Some(start_on(configs[lagging].clone(), listener).unwrap());
    handles[other].take().unwrap().stop();
    apply_on_leader(&handles, &addrs, "after").await;
    let installed = dir
        .path()
        .join(format!("n{lagging}"))
        .join("raft-snapshot.json");
    assert!(
        installed.exists(),
        "the lagging controller holds a snapshot"
    );

    // The other returns and the leader goes: whoever leads has every set.
    let listener = TcpListener::bind(&addrs[other]).unwrap();
    handles[other] = Some(start_on(configs[other].clone(), listener).unwrap());
    let leader = leader_of(&handles).await;
    handles[leader].take().unwrap().stop();
    let next = leader_of(&handles).await;
    let conn = connect(&addrs[next]).await;
    for name in ["set-0", "set-29", "after"] {
        let request = GetReplicaInfoRequestHeader {
            broker_name: name.into(),
        };
        let answer = call(
            &conn,
            code::CONTROLLER_GET_REPLICA_INFO,
            request.to_ext(),
            vec![],
        )
        .await;
        assert_eq!(answer.code, rc::SUCCESS, "{name}: {:?}", answer.remark);
    }
    for handle in handles.into_iter().flatten() {
        handle.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_are_shown_and_the_live_ones_change() {
    let dir = tempfile::tempdir().unwrap();
    let (mut listeners, peers) = listeners(1);
    let handle = start_on(config(&peers, "n0", dir.path()), listeners.remove(0)).unwrap();
    let conn = connect(&handle.addr().to_string()).await;
    let show = |conn| async move {
        let answer = call(
            conn,
            code::GET_CONTROLLER_CONFIG,
            ExtFields::default(),
            Vec::new(),
        )
        .await;
        assert_eq!(answer.code, rc::SUCCESS, "{:?}", answer.remark);
        String::from_utf8(answer.body.to_vec()).unwrap()
    };
    let before = show(&conn).await;
    assert!(
        before.contains(&format!("controllerDLegerPeers={peers}\n")),
        "{before}"
    );
    assert!(
        before.contains("enableElectUncleanMaster=false\n"),
        "{before}"
    );

    let update = |conn, body: &'static [u8]| async move {
        let ext = ExtFields::default();
        call(conn, code::UPDATE_CONTROLLER_CONFIG, ext, body.to_vec()).await
    };
    let answer = update(&conn, b"enableElectUncleanMaster=true\n").await;
    assert_eq!(answer.code, rc::SUCCESS, "{:?}", answer.remark);
    assert!(show(&conn)
        .await
        .contains("enableElectUncleanMaster=true\n"));
    let answer = update(&conn, b"configStorePath=/tmp/elsewhere\n").await;
    assert_eq!(answer.code, rc::NO_PERMISSION);
    let answer = update(&conn, b"controllerDLegerSelfId=n1\n").await;
    assert_eq!(answer.code, rc::INVALID_PARAMETER);
    assert!(answer
        .remark
        .unwrap()
        .contains("`controllerDLegerSelfId` is read at start"));
    handle.stop();
}

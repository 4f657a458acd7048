//! Broker settings read and changed while the broker runs, over raw
//! Remoting (GET_BROKER_CONFIG 26, UPDATE_BROKER_CONFIG 25): a change
//! takes effect at once, is written into the broker's -c file (comments
//! kept, a .bak beside it) and survives a restart; keys read only at start,
//! black-listed keys, unknown keys and bad values are refused with words
//! that say why, and change nothing.

mod harness;

use std::os::unix::fs::PermissionsExt;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::RemotingConn;
use harness::requests::{send_header, send_request};
use harness::{ready_timeout, unique_name, wait_for, BrokerOpts};

fn get_config(conn: &mut RemotingConn) -> (String, String) {
    let answer = conn.request(RemotingCommand::request(request_code::GET_BROKER_CONFIG));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let version = answer.ext_fields.get("version").unwrap_or("").to_string();
    (String::from_utf8_lossy(&answer.body).into_owned(), version)
}

fn update(conn: &mut RemotingConn, body: &str) -> RemotingCommand {
    let request = RemotingCommand::request(request_code::UPDATE_BROKER_CONFIG)
        .with_body(body.as_bytes().to_vec());
    conn.request(request)
}

fn send_code(conn: &mut RemotingConn, topic: &str) -> i32 {
    conn.request(send_request(&send_header("PG", topic, 0), "x"))
        .code
}

fn config_opts(file: &std::path::Path) -> BrokerOpts {
    BrokerOpts {
        extra_args: vec!["-c".into(), file.display().to_string()],
        // Two shards: a change must reach the shard it was not made on.
        shards: Some(2),
        ..BrokerOpts::default()
    }
}

#[test]
fn a_change_takes_effect_is_written_back_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // A symlinked, owner-only broker.conf (it may hold credentials).
    let real = dir.path().join("real.conf");
    std::fs::write(&real, "# my broker\nautoCreateTopicEnable = true\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file = dir.path().join("broker.conf");
    std::os::unix::fs::symlink(&real, &file).unwrap();
    let namesrv = harness::Namesrv::start();
    let mut broker = harness::Broker::start(&namesrv.addr(), config_opts(&file));
    let mut conn = broker.connect();
    let (text, version) = get_config(&mut conn);
    assert!(text.contains("autoCreateTopicEnable=true\n"), "{text}");
    assert!(text.contains("brokerPermission=6\n"), "{text}");
    assert!(version.contains("\"counter\":0"), "{version}");
    let keys: Vec<&str> = text.lines().map(|l| l.split('=').next().unwrap()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "keys are sorted, as Java sends them");
    assert_eq!(
        send_code(&mut conn, &unique_name("Auto")),
        response_code::SUCCESS
    );

    let answer = update(&mut conn, "autoCreateTopicEnable=false\n");
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let (text, version) = get_config(&mut conn);
    assert!(text.contains("autoCreateTopicEnable=false\n"), "{text}");
    assert!(version.contains("\"counter\":1"), "{version}");
    // Every shard follows at once: a new topic is no longer made.
    for _ in 0..4 {
        let mut other = broker.connect();
        assert_eq!(
            send_code(&mut other, &unique_name("NoAuto")),
            response_code::TOPIC_NOT_EXIST
        );
    }
    let written = std::fs::read_to_string(&real).unwrap();
    assert_eq!(written, "# my broker\nautoCreateTopicEnable=false\n");
    assert!(dir.path().join("real.conf.bak").exists());
    assert!(std::fs::symlink_metadata(&file)
        .unwrap()
        .file_type()
        .is_symlink());
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    broker.restart();
    let mut conn = broker.connect();
    let (text, _) = get_config(&mut conn);
    assert!(text.contains("autoCreateTopicEnable=false\n"), "{text}");
    assert_eq!(
        send_code(&mut conn, &unique_name("NoAuto")),
        response_code::TOPIC_NOT_EXIST
    );
}

#[test]
fn a_read_only_permission_is_routed_and_refuses_pulls() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broker.conf");
    std::fs::write(&file, "brokerPermission=6\n").unwrap();
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), config_opts(&file));
    let mut conn = broker.connect();
    let topic = unique_name("Perm");
    harness::requests::create_topic(&mut conn, &topic, 2);
    let answer = update(&mut conn, "brokerPermission=4");
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    // The name server routes the topic read-only soon after.
    let routed = wait_for(ready_timeout(), || {
        let mut ns = namesrv.connect();
        let mut request = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC);
        request.ext_fields.insert("topic", &topic);
        let route = ns.request(request);
        let body = String::from_utf8_lossy(&route.body).into_owned();
        (route.code == response_code::SUCCESS && body.contains("\"perm\":4")).then_some(())
    });
    assert!(routed.is_some(), "the route never became read-only");
    let answer = update(&mut conn, "brokerPermission=2");
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let pull = harness::requests::pull_request("G", &topic, 0, 0, 8, 0);
    let refused = conn.request(pull);
    assert_eq!(refused.code, response_code::NO_PERMISSION, "{refused:?}");
    assert!(refused
        .remark
        .unwrap_or_default()
        .contains("pulling message is forbidden"));
    assert_eq!(
        update(&mut conn, "brokerPermission=9").code,
        response_code::INVALID_PARAMETER
    );
}

#[test]
fn keys_that_cannot_change_online_are_refused_and_change_nothing() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let cases = [
        (
            "flushDiskType=SYNC_FLUSH",
            response_code::INVALID_PARAMETER,
            "read at start",
        ),
        (
            "rocketmqHome=/tmp",
            response_code::NO_PERMISSION,
            "Can not update config in black list.",
        ),
        (
            "traceOn=maybe\nregionId=r2",
            response_code::INVALID_PARAMETER,
            "expected true or false",
        ),
        (
            "noSuchKey=1",
            response_code::INVALID_PARAMETER,
            "unknown broker config key `noSuchKey`",
        ),
        (
            "maxMesageSize=1024",
            response_code::INVALID_PARAMETER,
            "unknown broker config key `maxMesageSize`: did you mean `maxMessageSize`?",
        ),
    ];
    for (body, code, words) in cases {
        let answer = update(&mut conn, body);
        assert_eq!(answer.code, code, "{body}: {answer:?}");
        let remark = answer.remark.unwrap_or_default();
        assert!(remark.contains(words), "{body}: {remark}");
    }
    let (text, version) = get_config(&mut conn);
    assert!(text.contains("regionId=DefaultRegion\n"), "{text}");
    assert!(version.contains("\"counter\":0"), "{version}");
    // Without a -c file a change lasts until the broker stops.
    assert_eq!(
        update(&mut conn, "regionId=r2").code,
        response_code::SUCCESS
    );
    assert!(get_config(&mut conn).0.contains("regionId=r2\n"));
    assert_eq!(update(&mut conn, "").code, response_code::SUCCESS);
}

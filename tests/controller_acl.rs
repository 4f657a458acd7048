//! The controller with `aclEnable=true` (and TLS on its port), as processes
//! on 127.0.0.1: only requests signed by an admin account are served, Raft
//! between controllers and controller-mode brokers sign with
//! `innerClientAuthenticationCredentials`, and failover still works;
//! `ferrocket admin controller` signs with `--access-key`; with
//! `aclAdminSignatureWindowMs` every one of them stamps its code and time.

mod harness;

use std::collections::BTreeSet;
use std::time::Duration;

use ferrocket_protocol::body::{decode_json, encode_json, BrokerReplicasInfo};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::controller::*;
use ferrocket_protocol::RemotingCommand;
use harness::failover::*;
use harness::{wait_for, Namesrv, RemotingConn, ServerProcess};

const ACCOUNTS: &str = "accounts:\n  - accessKey: adminAccess1\n    secretKey: adminSecret1\n    admin: true\n  - accessKey: appAccess1\n    secretKey: appSecret1\n";
const ADMIN: (&str, &str) = ("adminAccess1", "adminSecret1");
const APP: (&str, &str) = ("appAccess1", "appSecret1");
const INNER: &str = r#"innerClientAuthenticationCredentials={"accessKey":"adminAccess1","secretKey":"adminSecret1"}"#;
const ACL_EXCEPTION: &str = "org.apache.rocketmq.acl.common.AclException: ";
const WAIT: Duration = Duration::from_secs(60);

/// A RocketMQ home whose `conf/plain_acl.yml` holds an admin and an app
/// account, and the controller settings that turn the ACL on with it.
fn acl_home() -> (tempfile::TempDir, Vec<String>) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACCOUNTS).unwrap();
    let settings = vec![
        "aclEnable=true".to_string(),
        format!("rocketmqHome={}", home.path().display()),
        INNER.to_string(),
        // Ferrocket's replay guard: every signer here is a Ferrocket tool.
        "aclAdminSignatureWindowMs=60000".to_string(),
    ];
    (home, settings)
}

/// Signed as Ferrocket's tools sign: the code and time stamped.
fn signed(mut request: RemotingCommand, account: (&str, &str)) -> RemotingCommand {
    ferrocket_acl::sign_request_stamped(&mut request, account.0, account.1);
    request
}

fn with_ext(code: i32, ext: ferrocket_protocol::ExtFields) -> RemotingCommand {
    let mut request = RemotingCommand::request(code);
    request.ext_fields = ext;
    request
}

/// The controller requests a stranger must not make, each well formed.
fn guarded_requests() -> Vec<RemotingCommand> {
    let elect = ElectMasterRequestHeader {
        cluster_name: Some("DefaultCluster".into()),
        broker_name: SET.into(),
        broker_id: Some(2),
        designate_elect: true,
        invoke_time: None,
    };
    let clean = CleanControllerBrokerDataRequestHeader {
        cluster_name: Some("DefaultCluster".into()),
        broker_name: SET.into(),
        broker_controller_ids_to_clean: None,
        is_clean_living_broker: true,
        invoke_time: None,
    };
    let register = RegisterBrokerToControllerRequestHeader {
        cluster_name: "DefaultCluster".into(),
        broker_name: SET.into(),
        broker_id: 9,
        broker_address: "127.0.0.1:1".into(),
        invoke_time: None,
    };
    let apply = ApplyBrokerIdRequestHeader {
        cluster_name: "DefaultCluster".into(),
        broker_name: SET.into(),
        applied_broker_id: 9,
        register_check_code: "127.0.0.1:1;0".into(),
    };
    vec![
        RemotingCommand::request(request_code::UPDATE_CONTROLLER_CONFIG)
            .with_body(b"enableElectUncleanMaster=true\n".to_vec()),
        with_ext(request_code::CONTROLLER_ELECT_MASTER, elect.to_ext()),
        with_ext(request_code::CLEAN_BROKER_DATA, clean.to_ext()),
        with_ext(request_code::CONTROLLER_REGISTER_BROKER, register.to_ext()),
        with_ext(request_code::CONTROLLER_APPLY_BROKER_ID, apply.to_ext()),
        RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
            .with_body(encode_json(&vec![SET.to_string()])),
        RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO),
        RemotingCommand::request(request_code::RAFT_VOTE).with_body(b"{}".to_vec()),
    ]
}

/// Each guarded request, unsigned, badly signed or signed by a non-admin,
/// is refused with Java's ACL answer.
fn assert_strangers_refused(addr: &str) {
    let mut conn = RemotingConn::connect(addr).unwrap();
    for request in guarded_requests() {
        let code = request.code;
        let mut forged = signed(request.clone(), ADMIN);
        forged.ext_fields.insert("Signature", "AAAA");
        for (request, why) in [
            (request.clone(), "No accessKey is configured".to_string()),
            (forged, "Check signature failed for accessKey=adminAccess1".into()),
            (
                signed(request, APP),
                format!("Need admin permission for request code={code}, but accessKey=appAccess1 is not"),
            ),
        ] {
            let answer = conn.request(request);
            assert_eq!(answer.code, response_code::SYSTEM_ERROR, "code {code}");
            assert_eq!(answer.remark, Some(format!("{ACL_EXCEPTION}{why}")), "code {code}");
        }
    }
}

/// The set as the leading controller sees it, asked with the admin's
/// signature.
fn signed_sync_state(addrs: &str) -> Option<SetState> {
    addrs.split(';').find_map(|addr| {
        let mut conn = RemotingConn::connect(addr).ok()?;
        let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
            .with_body(encode_json(&vec![SET.to_string()]));
        let answer = conn.request(signed(request, ADMIN));
        if answer.code != response_code::SUCCESS {
            return None;
        }
        let info: BrokerReplicasInfo = decode_json(&answer.body).ok()?;
        let set = info.replicas_info_table.get(SET)?;
        Some(SetState {
            in_sync: set.in_sync_replicas.iter().map(|r| r.broker_id).collect(),
            master: set.master_broker_id,
            master_epoch: set.master_epoch,
            master_address: set.master_address.clone(),
        })
    })
}

/// The leader's address, asked with the admin's signature.
fn leader(addrs: &str) -> String {
    let ask = || {
        addrs.split(';').find_map(|addr| {
            let mut conn = RemotingConn::connect(addr).ok()?;
            let request = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
            let answer = conn.request(signed(request, ADMIN));
            let header = GetMetaDataResponseHeader::from_ext(&answer.ext_fields).ok()?;
            header.is_leader.then(|| addr.to_string())
        })
    };
    wait_for(WAIT, ask).expect("no controller became leader")
}

/// The refused REGISTER and APPLY_BROKER_ID left no trace on the leader.
fn assert_no_set(leader: &str) {
    let mut conn = RemotingConn::connect(leader).unwrap();
    // A new leader reads once its first entry is committed.
    let mut ask = |request: RemotingCommand| {
        let request = signed(request, ADMIN);
        let answer = wait_for(WAIT, || {
            let answer = conn.request(request.clone());
            (answer.code != response_code::CONTROLLER_NOT_LEADER).then_some(answer)
        });
        answer.expect("the leader never served reads")
    };
    let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
        .with_body(encode_json(&vec![SET.to_string()]));
    let answer = ask(request);
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    let info: BrokerReplicasInfo = decode_json(&answer.body).unwrap();
    assert!(info.replicas_info_table.is_empty(), "{info:?}");
    let next = GetNextBrokerIdRequestHeader {
        cluster_name: "DefaultCluster".into(),
        broker_name: SET.into(),
    };
    let request = with_ext(request_code::CONTROLLER_GET_NEXT_BROKER_ID, next.to_ext());
    let answer = ask(request);
    assert_eq!(
        answer.ext_fields.get("nextBrokerId"),
        Some("1"),
        "{answer:?}"
    );
}

fn wait_state(addrs: &str, what: &str, ok: impl Fn(&SetState) -> bool) -> SetState {
    wait_for(WAIT, || signed_sync_state(addrs).filter(|s| ok(s)))
        .unwrap_or_else(|| panic!("{what}: the set stayed {:?}", signed_sync_state(addrs)))
}

/// `enableElectUncleanMaster` as the controller at `addr` shows it.
fn unclean_setting(addr: &str) -> String {
    let mut conn = RemotingConn::connect(addr).unwrap();
    let request = RemotingCommand::request(request_code::GET_CONTROLLER_CONFIG);
    let answer = conn.request(signed(request, ADMIN));
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("enableElectUncleanMaster="));
    line.unwrap_or_default().to_string()
}

#[test]
fn with_acl_on_controllers_serve_only_admins_and_signed_brokers_fail_over() {
    let dir = tempfile::tempdir().unwrap();
    let (_home, settings) = acl_home();
    // Three controllers: a leader is elected only if Raft's signed
    // messages pass each other's ACL.
    let controllers = controllers_with(dir.path(), 3, &settings);
    let addrs = controller_addr(&controllers);
    for controller in &controllers {
        assert_strangers_refused(controller.addr());
    }
    let first_addr = controllers[0].addr().to_string();
    assert_eq!(
        unclean_setting(&first_addr),
        "enableElectUncleanMaster=false"
    );
    assert_no_set(&leader(&addrs));

    let namesrv = Namesrv::start();
    let mut first = controller_broker_with(&namesrv, &addrs, &[INNER]);
    let _second = controller_broker_with(&namesrv, &addrs, &[INNER]);
    let joined = wait_state(&addrs, "the slave joins", |s| {
        s.master == Some(1) && s.in_sync == BTreeSet::from([1, 2])
    });
    // Unsigned elections and cleanups change nothing now either, nor an
    // admin's election signed as Java's tools sign (no stamp).
    for controller in &controllers {
        assert_strangers_refused(controller.addr());
    }
    let mut java = guarded_requests().swap_remove(1);
    ferrocket_acl::sign_request(&mut java, ADMIN.0, ADMIN.1);
    let answer = RemotingConn::connect(&addrs[..addrs.find(';').unwrap()])
        .unwrap()
        .request(java);
    assert_eq!(answer.code, response_code::SYSTEM_ERROR);
    assert!(answer
        .remark
        .unwrap_or_default()
        .ends_with("no ferrocketSigned field"));
    assert_eq!(signed_sync_state(&addrs), Some(joined.clone()));

    first.process.kill();
    let after = wait_state(&addrs, "the slave is elected", |s| s.master == Some(2));
    assert_eq!(after.master_epoch, joined.master_epoch + 1);

    // An admin's signed change is applied.
    let update = RemotingCommand::request(request_code::UPDATE_CONTROLLER_CONFIG)
        .with_body(b"enableElectUncleanMaster=true\n".to_vec());
    let mut conn = RemotingConn::connect(&first_addr).unwrap();
    let answer = conn.request(signed(update, ADMIN));
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    assert_eq!(
        unclean_setting(&first_addr),
        "enableElectUncleanMaster=true"
    );
}

fn admin_sync_state_set(addr: &str, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["admin", "-n", "127.0.0.1:1"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["controller", "sync-state-set", "-a", addr, "-b", SET]);
    std::process::Command::new(harness::ferrocket_bin())
        .args(&args)
        .output()
        .unwrap()
}

#[test]
fn an_enforcing_tls_controller_serves_brokers_and_admins_that_sign_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (_home, mut settings) = acl_home();
    settings.push("tls.server.mode=enforcing".into());
    let controllers = controllers_with(dir.path(), 1, &settings);
    let addr = controllers[0].addr().to_string();
    // Plaintext is closed unanswered.
    let mut plain = RemotingConn::connect(&addr).unwrap();
    let asked = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
    assert!(plain.try_request(signed(asked, ADMIN)).is_none());

    // The broker dials TLS (tls.enable) and signs; it is elected.
    let namesrv = Namesrv::start();
    let _broker = controller_broker_with(&namesrv, &addr, &[INNER, "tls.enable=true"]);
    let admin = ["--tls", "--access-key", ADMIN.0, "--secret-key", ADMIN.1];
    let shown = wait_for(WAIT, || {
        Some(admin_sync_state_set(&addr, &admin)).filter(|o| o.status.success())
    })
    .unwrap_or_else(|| {
        let output = admin_sync_state_set(&addr, &admin);
        panic!("{}", String::from_utf8_lossy(&output.stderr))
    });
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.contains("#MasterBrokerId\t1"), "{shown}");

    let unsigned = admin_sync_state_set(&addr, &["--tls"]);
    let said = String::from_utf8_lossy(&unsigned.stderr).into_owned();
    assert!(
        !unsigned.status.success() && said.contains("No accessKey is configured"),
        "{said}"
    );
    let plaintext = admin_sync_state_set(&addr, &admin[1..]);
    assert!(!plaintext.status.success());
    drop(controllers);
}

#[test]
fn acl_on_without_accounts_stops_the_controller_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "controller",
        "--listen-port",
        "0",
        "--set",
        "aclEnable=true",
        "--set",
        &format!("rocketmqHome={}", dir.path().join("none").display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut process = ServerProcess::spawn("controller", &args, dir.path()).unwrap();
    let status = process.wait_exit(Duration::from_secs(20));
    assert!(
        matches!(status, Some(s) if !s.success()),
        "{}",
        process.output()
    );
    assert!(
        process.output().contains("plain_acl.yml"),
        "{}",
        process.output()
    );
}

/// `aclEnable=true` on the brokers too: a controller-mode broker's calls to
/// itself and to its set's master (log end, HA status, epochs) are signed,
/// so the slave joins the in-sync set, takes over, and the old master
/// rejoins behind it.
#[test]
fn brokers_with_acl_on_keep_their_in_sync_set_and_fail_over() {
    let dir = tempfile::tempdir().unwrap();
    let (home, settings) = acl_home();
    let controllers = controllers_with(dir.path(), 1, &settings);
    let addr = controllers[0].addr().to_string();
    let namesrv = Namesrv::start();
    let home_setting = format!("rocketmqHome={}", home.path().display());
    let broker_settings = [INNER, "aclEnable=true", home_setting.as_str()];
    let mut first = controller_broker_with(&namesrv, &addr, &broker_settings);
    let _second = controller_broker_with(&namesrv, &addr, &broker_settings);
    let joined = wait_state(&addr, "the slave joins", |s| {
        s.master == Some(1) && s.in_sync == BTreeSet::from([1, 2])
    });
    // Signed sends the in-sync slave must acknowledge (allAckInSyncStateSet).
    let topic = harness::unique_name("AclFailover");
    let mut conn = first.connect();
    for n in 0..20 {
        let header = harness::requests::send_header("acl-producer", &topic, n % QUEUES);
        let send = harness::requests::send_request(&header, format!("acl-{n}"));
        let answer = conn.request(signed(send, ADMIN));
        assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    }
    first.process.kill();
    wait_state(&addr, "the slave is elected", |s| s.master == Some(2));
    first.start_again();
    let rejoined = wait_state(&addr, "the old master rejoins", |s| {
        s.master == Some(2) && s.in_sync == BTreeSet::from([1, 2])
    });
    assert_eq!(rejoined.master_epoch, joined.master_epoch + 1);
}

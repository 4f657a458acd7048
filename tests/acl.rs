//! ACL 1.0 on the broker over raw Remoting: refusals answered as Java
//! answers them (SYSTEM_ERROR, the AclException's text), signed requests
//! let through, the files reloaded when they change, and a start without
//! the files refused.

mod harness;

use std::process::{Command, Stdio};
use std::time::Duration;

use ferrocket_protocol::codes::response_code;
use harness::requests::{send_header, send_request};
use harness::{ferrocket_bin, ready_timeout, wait_for, BrokerOpts};

const ACCOUNT: &str =
    "accounts:\n  - accessKey: appAccess1\n    secretKey: appSecret1\n    defaultTopicPerm: PUB\n";

fn acl_opts(home: &std::path::Path) -> BrokerOpts {
    BrokerOpts {
        auto_create_topic: Some(true),
        extra_args: vec![
            "--set".into(),
            "aclEnable=true".into(),
            "--set".into(),
            format!("rocketmqHome={}", home.display()),
        ],
        ..BrokerOpts::default()
    }
}

#[test]
fn unsigned_requests_are_refused_and_signed_ones_pass_until_the_file_changes() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    let file = home.path().join("conf/plain_acl.yml");
    std::fs::write(&file, ACCOUNT).unwrap();
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), acl_opts(home.path()));
    let mut conn = broker.connect();
    let send = send_request(&send_header("PG", "AclTopic", 0), "x");

    let unsigned = conn.request(send.clone());
    assert_eq!(unsigned.code, response_code::SYSTEM_ERROR, "{unsigned:?}");
    assert_eq!(
        unsigned.remark.as_deref(),
        Some("org.apache.rocketmq.acl.common.AclException: No accessKey is configured")
    );
    let signed = |key: &str, secret: &str| {
        let mut request = send.clone();
        ferrocket_acl::sign_request(&mut request, key, secret);
        request
    };
    assert_eq!(
        conn.request(signed("appAccess1", "appSecret1")).code,
        response_code::SUCCESS
    );
    let other = conn.request(signed("otherAccess1", "otherSecret1"));
    assert!(other
        .remark
        .unwrap_or_default()
        .ends_with("No acl config for otherAccess1"));

    // A second account appears once the broker reloads the file.
    let both = format!("{ACCOUNT}  - accessKey: otherAccess1\n    secretKey: otherSecret1\n    defaultTopicPerm: PUB\n");
    std::fs::write(&file, both).unwrap();
    let reloaded = wait_for(ready_timeout(), || {
        let answer = conn.request(signed("otherAccess1", "otherSecret1"));
        (answer.code == response_code::SUCCESS).then_some(())
    });
    assert!(reloaded.is_some(), "the new account never worked");
    // A file that no longer parses keeps the ACL in force.
    std::fs::write(&file, "accounts: [ {").unwrap();
    std::thread::sleep(Duration::from_millis(
        ferrocket_acl::RELOAD_INTERVAL_MS + 1_000,
    ));
    assert_eq!(
        conn.request(signed("appAccess1", "appSecret1")).code,
        response_code::SUCCESS
    );
    // Both accounts still known, and still checked: not an ACL switched off.
    let other = conn.request(signed("otherAccess1", "otherSecret1"));
    assert_eq!(other.code, response_code::SUCCESS);
    assert_eq!(conn.request(send.clone()).code, response_code::SYSTEM_ERROR);
    let log = broker.process.output();
    assert!(log.contains("do not load; the old ACL stays"), "{log}");
}

#[test]
fn a_broker_with_acl_on_and_no_acl_file_does_not_start() {
    let home = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let output = Command::new(ferrocket_bin())
        .args(["broker", "--set", "aclEnable=true", "--set"])
        .arg(format!("rocketmqHome={}", home.path().display()))
        .arg("--store-path-root-dir")
        .arg(store.path())
        .args(["--listen-port", &harness::free_port().to_string()])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("conf/plain_acl.yml") && stderr.contains("aclEnable=true"),
        "{stderr}"
    );
}

const NAMESRV_ACCOUNTS: &str = "accounts:\n  - accessKey: adminAccess1\n    secretKey: adminSecret1\n    admin: true\n  - accessKey: appAccess1\n    secretKey: appSecret1\n";

#[test]
fn the_name_server_takes_writes_only_from_admins_and_brokers_sign_theirs() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), NAMESRV_ACCOUNTS).unwrap();
    let acl_args = vec![
        "--set".to_string(),
        "aclEnable=true".to_string(),
        "--set".to_string(),
        format!("rocketmqHome={}", home.path().display()),
    ];
    let namesrv = harness::Namesrv::start_with(harness::NamesrvOpts {
        extra_args: acl_args,
        ..Default::default()
    });
    let mut conn = namesrv.connect();
    let put_kv = || {
        let mut request = ferrocket_protocol::RemotingCommand::request(
            ferrocket_protocol::codes::request_code::PUT_KV_CONFIG,
        );
        request.ext_fields.insert("namespace", "ns");
        request.ext_fields.insert("key", "k");
        request.ext_fields.insert("value", "v");
        request
    };
    let unsigned = conn.request(put_kv());
    assert_eq!(unsigned.code, response_code::SYSTEM_ERROR);
    assert!(unsigned
        .remark
        .unwrap_or_default()
        .ends_with("No accessKey is configured"));
    let mut normal = put_kv();
    ferrocket_acl::sign_request(&mut normal, "appAccess1", "appSecret1");
    let normal = conn.request(normal);
    assert!(normal
        .remark
        .unwrap_or_default()
        .ends_with("Need admin permission for request code=100, but accessKey=appAccess1 is not"));
    let mut admin = put_kv();
    ferrocket_acl::sign_request(&mut admin, "adminAccess1", "adminSecret1");
    assert_eq!(conn.request(admin).code, response_code::SUCCESS);
    // Reads stay open: clients look routes up unsigned.
    let route = harness::remoting::route_request("NoSuchTopic");
    assert_eq!(conn.request(route).code, response_code::TOPIC_NOT_EXIST);
    // A broker with the admin credentials registers (Broker::start waits for it).
    let credentials = r#"innerClientAuthenticationCredentials={"accessKey":"adminAccess1","secretKey":"adminSecret1"}"#;
    let _broker = harness::Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec!["--set".into(), credentials.into()],
            ..BrokerOpts::default()
        },
    );
}

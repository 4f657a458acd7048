//! `aclAdminSignatureWindowMs` (Ferrocket's replay guard, off by default)
//! on a broker and a name server with ACL 1.0: a request signed by an admin
//! account must carry a stamp of its own code and a fresh time, covered by
//! the signature. A captured admin read replayed as DELETE_TOPIC_IN_BROKER,
//! a stale one and an unstamped (Java-signed) one are refused; Ferrocket's
//! own tools (a broker's registration, `ferrocket admin`) stamp and pass;
//! other accounts are not asked for a stamp.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{send_header, send_request};
use harness::{BrokerOpts, NamesrvOpts};

const ACCOUNTS: &str = "accounts:\n  - accessKey: adminAccess1\n    secretKey: adminSecret1\n    admin: true\n  - accessKey: appAccess1\n    secretKey: appSecret1\n    defaultTopicPerm: PUB|SUB\n";
const ADMIN: (&str, &str) = ("adminAccess1", "adminSecret1");
const WINDOW_MS: u64 = 60_000;
const REFUSED: &str = "org.apache.rocketmq.acl.common.AclException: admin requests must sign \
                       their request code and time (aclAdminSignatureWindowMs=60000): ";

fn settings(home: &std::path::Path) -> Vec<String> {
    [
        "aclEnable=true".to_string(),
        format!("rocketmqHome={}", home.display()),
        format!("aclAdminSignatureWindowMs={WINDOW_MS}"),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

fn stamped_at(mut request: RemotingCommand, at_ms: u64) -> RemotingCommand {
    ferrocket_acl::stamp(&mut request, at_ms);
    ferrocket_acl::sign_request(&mut request, ADMIN.0, ADMIN.1);
    request
}

fn assert_refused(answer: &RemotingCommand, why: &str) {
    assert_eq!(answer.code, response_code::SYSTEM_ERROR, "{answer:?}");
    assert_eq!(answer.remark, Some(format!("{REFUSED}{why}")));
}

#[test]
fn admin_requests_need_a_fresh_stamp_of_their_own_code() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACCOUNTS).unwrap();
    let namesrv = harness::Namesrv::start_with(NamesrvOpts {
        extra_args: settings(home.path()),
        ..Default::default()
    });
    // The broker's registrations are stamped (Broker::start waits for one).
    let inner = r#"innerClientAuthenticationCredentials={"accessKey":"adminAccess1","secretKey":"adminSecret1"}"#;
    let mut extra_args = settings(home.path());
    extra_args.extend(["--set".into(), inner.into()]);
    let broker = harness::Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args,
            ..BrokerOpts::default()
        },
    );

    // `ferrocket admin` stamps: it creates the topic.
    let topic = harness::unique_name("Stamped");
    let keys = ["--access-key", ADMIN.0, "--secret-key", ADMIN.1];
    let mut create = keys.to_vec();
    create.extend(["topic", "create", "-t", &topic, "-c", "DefaultCluster"]);
    harness::admin_ok(&namesrv.addr(), &create);

    let mut conn = broker.connect();
    let stats =
        RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", &topic);
    let now = ferrocket_acl::now_ms();
    let read = stamped_at(stats.clone(), now);
    assert_eq!(conn.request(read.clone()).code, response_code::SUCCESS);
    // The captured read, replayed as a delete: refused, the topic stays.
    let mut replayed = read.clone();
    replayed.code = request_code::DELETE_TOPIC_IN_BROKER;
    assert_refused(
        &conn.request(replayed),
        "signed for request code=202, sent as code=215",
    );
    assert_eq!(conn.request(read).code, response_code::SUCCESS);
    let stale = stamped_at(stats.clone(), now - 2 * WINDOW_MS);
    let answer = conn.request(stale);
    assert_eq!(answer.code, response_code::SYSTEM_ERROR);
    assert!(answer
        .remark
        .unwrap_or_default()
        .contains("ms from this server's clock"));
    // Signed as Java's tools sign, without the stamp.
    let mut java = stats;
    ferrocket_acl::sign_request(&mut java, ADMIN.0, ADMIN.1);
    assert_refused(&conn.request(java), "no ferrocketSigned field");

    // Another account's requests are not asked for a stamp.
    let mut send = send_request(&send_header("PG", &topic, 0), "x");
    ferrocket_acl::sign_request(&mut send, "appAccess1", "appSecret1");
    assert_eq!(conn.request(send).code, response_code::SUCCESS);

    // The name server asks the same of its admin writes.
    let mut ns = namesrv.connect();
    let mut put = RemotingCommand::request(request_code::PUT_KV_CONFIG)
        .with_ext("namespace", "ns")
        .with_ext("key", "k")
        .with_ext("value", "v");
    let good = stamped_at(put.clone(), ferrocket_acl::now_ms());
    assert_eq!(ns.request(good).code, response_code::SUCCESS);
    ferrocket_acl::sign_request(&mut put, ADMIN.0, ADMIN.1);
    assert_refused(&ns.request(put), "no ferrocketSigned field");
}

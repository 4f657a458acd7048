//! ACL 2.0 on the broker: users and ACLs made with `ferrocket admin user|acl`
//! (codes 3001-3010), requests signed by a user and checked against its
//! ACL, refusals answered NO_PERMISSION with Java's words, and the users
//! and ACLs kept across a restart. The C++ client's side is in
//! tests/interop/test_acl2.py.

mod harness;

use std::process::Output;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic_request, send_header, send_request};
use harness::{succeeded as ok, BrokerOpts};

const ROOT: (&str, &str) = ("root", "rootSecret1");
const ALICE: (&str, &str) = ("alice", "aliceSecret1");

fn auth_opts() -> BrokerOpts {
    let init = format!(
        r#"initAuthenticationUser={{"username":"{}","password":"{}"}}"#,
        ROOT.0, ROOT.1
    );
    let settings = [
        "authenticationEnabled=true",
        "authorizationEnabled=true",
        &init,
    ];
    BrokerOpts {
        auto_create_topic: Some(false),
        extra_args: settings
            .iter()
            .flat_map(|s| ["--set".to_string(), s.to_string()])
            .collect(),
        ..BrokerOpts::default()
    }
}

/// `ferrocket admin` signed by `user`.
fn admin(namesrv: &str, user: (&str, &str), args: &[&str]) -> Output {
    let signed = [&["--access-key", user.0, "--secret-key", user.1], args].concat();
    harness::admin(namesrv, &signed)
}

/// Grants `User:alice` `actions` on `resources`, as root.
fn grant_alice(namesrv: &str, addr: &str, resources: &str, actions: &str) {
    let acl = [
        "acl",
        "create",
        "-b",
        addr,
        "-s",
        "User:alice",
        "-r",
        resources,
        "-a",
        actions,
        "-d",
        "Allow",
    ];
    ok(admin(namesrv, ROOT, &acl));
}

fn signed(mut request: RemotingCommand, user: (&str, &str)) -> RemotingCommand {
    ferrocket_acl::sign_request(&mut request, user.0, user.1);
    request
}

#[test]
fn users_and_acls_decide_each_request_and_survive_a_restart() {
    let namesrv = harness::Namesrv::start();
    let mut broker = harness::Broker::start(&namesrv.addr(), auth_opts());
    let (ns, addr) = (namesrv.addr(), broker.addr());
    let mut conn = broker.connect();
    for topic in ["Granted", "Other"] {
        let created = conn.request(signed(create_topic_request(topic, 2), ROOT));
        assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    }
    ok(admin(
        &ns,
        ROOT,
        &["user", "create", "-b", &addr, "-u", ALICE.0, "-p", ALICE.1],
    ));
    grant_alice(&ns, &addr, "Topic:Granted,Group:G1", "Pub,Sub");

    let send = |topic: &str| send_request(&send_header("PG", topic, 0), "x");
    let unsigned = conn.request(send("Granted"));
    assert_eq!(unsigned.code, response_code::NO_PERMISSION, "{unsigned:?}");
    assert_eq!(unsigned.remark.as_deref(), Some("username cannot be null."));
    let mut forged = signed(send("Granted"), ALICE);
    forged.ext_fields.insert("b", "Other");
    forged.ext_fields.insert("topic", "Other");
    assert_eq!(
        conn.request(forged).remark.as_deref(),
        Some("check signature failed.")
    );
    assert_eq!(
        conn.request(signed(send("Granted"), ALICE)).code,
        response_code::SUCCESS
    );
    let refused = conn.request(signed(send("Other"), ALICE));
    assert_eq!(refused.code, response_code::NO_PERMISSION);
    assert_eq!(
        refused.remark.as_deref(),
        Some("User:alice has no permission to access Topic:Other from 127.0.0.1, no matched policies.")
    );
    // A normal user may not manage users (Update on the cluster).
    let by_alice = admin(
        &ns,
        ALICE,
        &[
            "user",
            "create",
            "-b",
            &addr,
            "-u",
            "eve",
            "-p",
            "eveSecret1",
        ],
    );
    assert!(!by_alice.status.success());
    assert!(String::from_utf8_lossy(&by_alice.stderr).contains("Cluster:DefaultCluster"));

    // A normal user that may read the cluster sees users, not passwords.
    grant_alice(&ns, &addr, "Cluster:*", "Get");
    let seen = ok(admin(&ns, ALICE, &["user", "list", "-b", &addr]));
    assert!(seen.contains("root") && !seen.contains(ROOT.1), "{seen}");

    // Kept across a restart.
    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    assert_eq!(
        conn.request(signed(send("Granted"), ALICE)).code,
        response_code::SUCCESS
    );
    let users = ok(admin(&ns, ROOT, &["user", "list", "-b", &addr]));
    assert!(
        users.contains("alice") && users.contains("Normal"),
        "{users}"
    );
    let acls = ok(admin(
        &ns,
        ROOT,
        &["acl", "get", "-b", &addr, "-s", "User:alice"],
    ));
    assert!(
        acls.contains("Topic:Granted") && acls.contains("Pub,Sub"),
        "{acls}"
    );

    // Deleting the user takes its ACL and its access.
    ok(admin(
        &ns,
        ROOT,
        &["user", "delete", "-b", &addr, "-u", ALICE.0],
    ));
    let gone = conn.request(signed(send("Granted"), ALICE));
    assert_eq!(gone.remark.as_deref(), Some("User:alice is not found."));
}

#[test]
fn bad_admin_requests_get_javas_answers() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), auth_opts());
    let mut conn = broker.connect();
    let mut request = |code: i32, fields: &[(&str, &str)], body: &str| {
        let mut request = RemotingCommand::request(code).with_body(body.as_bytes().to_vec());
        for (k, v) in fields {
            request.ext_fields.insert(*k, *v);
        }
        conn.request(signed(request, ROOT))
    };
    let blank = request(3001, &[("username", " ")], r#"{"password":"x"}"#);
    assert_eq!(
        (blank.code, blank.remark.as_deref()),
        (
            response_code::INVALID_PARAMETER,
            Some("The username is blank")
        )
    );
    let created = request(
        3001,
        &[("username", "bob")],
        r#"{"password":"bobSecret1","userType":"Normal"}"#,
    );
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    let again = request(3001, &[("username", "bob")], r#"{"password":"y"}"#);
    assert_eq!(
        (again.code, again.remark.as_deref()),
        (response_code::NO_PERMISSION, Some("The user is existed"))
    );
    let no_body = request(3006, &[("subject", "User:bob")], "");
    assert_eq!(no_body.code, response_code::SYSTEM_ERROR);
    assert!(no_body
        .remark
        .unwrap_or_default()
        .ends_with("The body of acl is null"));
    let typo = r#"{"subject":"User:bob","policies":[{"entries":[{"resource":"Topic:t","actions":["Publish"],"decision":"Allow"}]}]}"#;
    let typo = request(3006, &[], typo);
    assert_eq!(typo.code, response_code::NO_PERMISSION);
    assert!(typo.remark.unwrap_or_default().contains("Publish"));
    let got = request(3004, &[("username", "bob")], "");
    let user: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(user["userType"], "Normal");
    assert_eq!(user["userStatus"], "enable");
    let missing = request(3004, &[("username", "nobody")], "");
    assert!(missing.code == response_code::SUCCESS && missing.body.is_empty());
    let deleted = request(3003, &[("username", "nobody")], "");
    assert_eq!(deleted.code, response_code::SUCCESS);
    let acl_of_nobody = request(3009, &[("subject", "User:nobody")], "");
    assert_eq!(
        acl_of_nobody.remark.as_deref(),
        Some("The subject is not exist.")
    );
    // Requests that need no ACL still need a signature.
    let unsigned = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    assert_eq!(unsigned.code, response_code::NO_PERMISSION);
}

#[test]
fn with_acl_2_off_users_are_not_served() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let listed = broker.connect().request(RemotingCommand::request(3005));
    assert_eq!(listed.code, response_code::NO_PERMISSION);
    assert!(listed.remark.unwrap_or_default().contains("ACL 2.0 is off"));
}

/// A request that names a CommitLog offset is checked against the topic
/// of the message stored there, whatever topic its header names
/// (`ferrocket_acl::stored`, beyond Java's ACL 2.0).
#[test]
fn a_stored_message_is_read_only_with_its_topics_permission() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), auth_opts());
    let (ns, addr) = (namesrv.addr(), broker.addr());
    let mut conn = broker.connect();
    for topic in ["Granted", "Other"] {
        let created = conn.request(signed(create_topic_request(topic, 2), ROOT));
        assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    }
    ok(admin(
        &ns,
        ROOT,
        &["user", "create", "-b", &addr, "-u", ALICE.0, "-p", ALICE.1],
    ));
    grant_alice(&ns, &addr, "Topic:Granted,Group:G1", "Pub,Sub,Get");
    let offset_of = |conn: &mut harness::RemotingConn, topic: &str, body: &'static str| {
        let sent = conn.request(signed(
            send_request(&send_header("PG", topic, 0), body),
            ROOT,
        ));
        assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
        let id = sent.ext_fields.get("msgId").expect("an offset message id");
        i64::from_str_radix(&id[id.len() - 16..], 16).expect("hex offset")
    };
    let secret = offset_of(&mut conn, "Other", "not for alice");
    let open = offset_of(&mut conn, "Granted", "for alice");
    let view = |offset: i64| {
        let mut request = RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID);
        request.ext_fields.insert("offset", offset.to_string());
        request.ext_fields.insert("topic", "Granted");
        signed(request, ALICE)
    };
    let refused = conn.request(view(secret));
    assert_eq!(refused.code, response_code::NO_PERMISSION, "{refused:?}");
    assert!(!String::from_utf8_lossy(&refused.body).contains("not for alice"));
    assert!(
        refused
            .remark
            .as_deref()
            .is_some_and(|r| r.contains("Topic:Other")),
        "{refused:?}"
    );
    let served = conn.request(view(open));
    assert_eq!(served.code, response_code::SUCCESS, "{served:?}");
    assert!(String::from_utf8_lossy(&served.body).contains("for alice"));
}

/// A lite subscription needs Sub on each parent topic it names, and the
/// broker-to-broker HAND_BACK Update on the cluster.
#[test]
fn lite_subscriptions_and_hand_back_need_their_actions() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), auth_opts());
    let (ns, addr) = (namesrv.addr(), broker.addr());
    let mut conn = broker.connect();
    ok(admin(
        &ns,
        ROOT,
        &["user", "create", "-b", &addr, "-u", ALICE.0, "-p", ALICE.1],
    ));
    grant_alice(&ns, &addr, "Topic:Granted,Group:G1", "Sub");
    let ctl = |topic: &str| {
        let body = serde_json::json!({"subscriptionSet": [{"action": "PARTIAL_ADD",
            "clientId": "c1", "group": "G1", "topic": topic, "liteTopicSet": ["a"]}]});
        let request = RemotingCommand::request(request_code::LITE_SUBSCRIPTION_CTL)
            .with_body(serde_json::to_vec(&body).unwrap());
        signed(request, ALICE)
    };
    let refused = conn.request(ctl("Other"));
    assert_eq!(refused.code, response_code::NO_PERMISSION, "{refused:?}");
    assert!(
        refused
            .remark
            .as_deref()
            .is_some_and(|r| r.contains("Topic:Other")),
        "{refused:?}"
    );
    let hand_back = RemotingCommand::request(request_code::HAND_BACK).with_ext("brokerAddr", "m:1");
    let refused = conn.request(signed(hand_back, ALICE));
    assert_eq!(refused.code, response_code::NO_PERMISSION, "{refused:?}");
}

//! Requests that reach a stored message by offset or id, or name a topic
//! Java's ACL 1.0 does not check (issue 39): every code of the table in
//! `ferrocket_acl::stored` is tried by an account denied the topic, which
//! must be refused and read no body, and by an admin, whose same request
//! must pass the ACL (so the request is one the broker serves).

mod harness;

use ferrocket_acl::stored::RULES;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{send_header, send_request};
use harness::{Broker, BrokerOpts, Namesrv};

const SECRET_TOPIC: &str = "SecretTopic";
const OPEN_TOPIC: &str = "OpenTopic";
const GROUP: &str = "ReaderGroup";
const BODY: &str = "the body only admins may read";
const KEY: &str = "secret-key-1";

const ACCOUNTS: &str = "accounts:
  - accessKey: adminAccess1
    secretKey: adminSecret1
    admin: true
  - accessKey: readerAccess1
    secretKey: readerSecret1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms: [\"SecretTopic=DENY\"]
";

fn signed(mut request: RemotingCommand, admin: bool) -> RemotingCommand {
    let (key, secret) = match admin {
        true => ("adminAccess1", "adminSecret1"),
        false => ("readerAccess1", "readerSecret1"),
    };
    ferrocket_acl::sign_request(&mut request, key, secret);
    request
}

fn request(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut request = RemotingCommand::request(code);
    for (key, value) in fields {
        request.ext_fields.insert(key, value);
    }
    request
}

/// The request for `code`, reaching the stored message at `offset`; the
/// reader names the open topic where a topic field is free to lie.
fn request_for(code: i32, offset: i64, msg_id: &str) -> RemotingCommand {
    use request_code::*;
    let offset = offset.to_string();
    match code {
        // Not a half message: the denied account is refused before the
        // transaction shard looks, the admin is told no half is there.
        END_TRANSACTION => request(
            code,
            &[
                ("producerGroup", "AnyProducers".to_string()),
                ("tranStateTableOffset", "0".to_string()),
                ("commitLogOffset", offset),
                ("commitOrRollback", "8".to_string()),
                ("topic", OPEN_TOPIC.to_string()),
            ],
        ),
        CONSUME_MESSAGE_DIRECTLY => request(
            code,
            &[
                ("consumerGroup", GROUP.to_string()),
                ("clientId", "nobody@1".to_string()),
                ("msgId", msg_id.to_string()),
                ("topic", OPEN_TOPIC.to_string()),
            ],
        ),
        VIEW_MESSAGE_BY_ID => request(
            code,
            &[("offset", offset), ("topic", OPEN_TOPIC.to_string())],
        ),
        QUERY_MESSAGE => request(
            code,
            &[
                ("topic", SECRET_TOPIC.to_string()),
                ("key", KEY.to_string()),
                ("maxNum", "32".to_string()),
                ("beginTimestamp", "0".to_string()),
                ("endTimestamp", i64::MAX.to_string()),
            ],
        ),
        CONSUMER_SEND_MSG_BACK => request(
            code,
            &[
                ("offset", offset),
                ("group", GROUP.to_string()),
                ("delayLevel", "0".to_string()),
            ],
        ),
        INVOKE_BROKER_TO_RESET_OFFSET => request(
            code,
            &[
                ("topic", SECRET_TOPIC.to_string()),
                ("group", GROUP.to_string()),
                ("timestamp", "0".to_string()),
                ("isForce", "true".to_string()),
            ],
        ),
        GET_CONSUME_STATS => request(
            code,
            &[
                ("consumerGroup", GROUP.to_string()),
                ("topic", SECRET_TOPIC.to_string()),
            ],
        ),
        other => panic!("the table has code {other}: add its request here"),
    }
}

fn acl_refusal(answer: &RemotingCommand) -> bool {
    answer.code == response_code::SYSTEM_ERROR
        && answer
            .remark
            .as_deref()
            .is_some_and(|r| r.starts_with("org.apache.rocketmq.acl.common.AclException"))
}

#[test]
fn an_account_denied_a_topic_reads_none_of_it_through_any_code_of_the_table() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACCOUNTS).unwrap();
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            auto_create_topic: Some(true),
            extra_args: vec![
                "--set".into(),
                "aclEnable=true".into(),
                "--set".into(),
                format!("rocketmqHome={}", home.path().display()),
            ],
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let mut header = send_header("AdminProducers", SECRET_TOPIC, 0);
    header.properties = Some(format!("KEYS\u{1}{KEY}\u{2}"));
    let sent = conn.request(signed(send_request(&header, BODY), true));
    assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    let msg_id = sent.ext_fields.get("msgId").expect("an offset message id");
    let offset = i64::from_str_radix(&msg_id[msg_id.len() - 16..], 16).expect("hex offset");

    let mut codes: Vec<i32> = RULES.iter().map(|r| r.code).collect();
    codes.dedup();
    assert!(codes.len() >= 7, "the table lost rows: {codes:?}");
    for code in codes {
        let denied = conn.request(signed(request_for(code, offset, msg_id), false));
        assert!(acl_refusal(&denied), "code {code} not refused: {denied:?}");
        assert!(
            !String::from_utf8_lossy(&denied.body).contains(BODY),
            "code {code} answered the body"
        );
        let allowed = conn.request(signed(request_for(code, offset, msg_id), true));
        assert!(
            !acl_refusal(&allowed),
            "code {code} refused an admin: {allowed:?}"
        );
    }
    // The control: the admin's view really is the body.
    let viewed = conn.request(signed(
        request_for(request_code::VIEW_MESSAGE_BY_ID, offset, msg_id),
        true,
    ));
    assert!(String::from_utf8_lossy(&viewed.body).contains(BODY));
}

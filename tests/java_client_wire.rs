//! Requests of Apache RocketMQ's Java client that the other suites' clients
//! do not make (tests/interop-java runs the Java client itself):
//! CHECK_CLIENT_CONFIG (46), sent by a push consumer at start for each
//! subscription not by tag; LITE_PULL_MESSAGE (361), a 5.x lite pull
//! consumer's pull; and the `transactionId` of a half message's send
//! answer, which becomes TransactionSendResult's transaction id.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

/// The body the Java client sends (`CheckClientRequestBody`, fastjson).
fn check_client(expression_type: &str, expression: &str) -> RemotingCommand {
    let body = format!(
        "{{\"clientId\":\"127.0.0.1@1#2\",\"group\":\"check_cg\",\"subscriptionData\":{{\
         \"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"{expression_type}\",\
         \"subString\":\"{expression}\",\"subVersion\":1700000000000,\"tagsSet\":[],\
         \"topic\":\"check_t\"}}}}"
    );
    RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG).with_body(body)
}

fn broker_with(namesrv: &Namesrv, property_filter: bool) -> Broker {
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec![
                "--set".into(),
                format!("enablePropertyFilter={property_filter}"),
            ],
            ..BrokerOpts::default()
        },
    )
}

#[test]
fn check_client_config_answers_as_java_does() {
    let namesrv = Namesrv::start();
    let filtering = broker_with(&namesrv, true);
    let mut conn = filtering.connect();
    let ok = |r: &RemotingCommand| r.code == response_code::SUCCESS;

    let tag = conn.request(check_client("TAG", "a || b"));
    assert!(ok(&tag), "{tag:?}");
    let sql = conn.request(check_client("SQL92", "a BETWEEN 1 AND 3"));
    assert!(ok(&sql), "{sql:?}");
    let bad = conn.request(check_client("SQL92", "a BETWEEN AND"));
    assert_eq!(
        bad.code,
        response_code::SUBSCRIPTION_PARSE_FAILED,
        "{bad:?}"
    );
    // No subscription: nothing to check.
    let none = RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG)
        .with_body(r#"{"clientId":"c","group":"g"}"#);
    let none = conn.request(none);
    assert!(ok(&none), "{none:?}");
    // A body that is not JSON is refused, not dropped.
    let junk = RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG).with_body("{");
    let junk = conn.request(junk);
    assert_ne!(junk.code, response_code::SUCCESS, "{junk:?}");

    let plain = broker_with(&namesrv, false);
    let mut conn = plain.connect();
    let tag = conn.request(check_client("TAG", "*"));
    assert!(ok(&tag), "{tag:?}");
    let sql = conn.request(check_client("SQL92", "a > 1"));
    assert_eq!(sql.code, response_code::SYSTEM_ERROR, "{sql:?}");
    assert!(
        sql.remark.as_deref().unwrap_or("").contains("SQL92"),
        "{sql:?}"
    );
}

#[test]
fn lite_pull_and_half_message_transaction_id() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("lite_t");
    create_topic(&mut conn, &topic, 1);

    let sent = conn.request(send_request(
        &send_header("lite_pg", &topic, 0),
        "lite body",
    ));
    assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    // Only a half message's answer names a transaction.
    assert_eq!(sent.ext_fields.get("transactionId"), None, "{sent:?}");

    let mut lite = pull_request("lite_cg", &topic, 0, 0, 32, 0);
    lite.code = request_code::LITE_PULL_MESSAGE;
    let pulled = conn.request(lite);
    assert_eq!(pulled.code, response_code::SUCCESS, "{pulled:?}");
    assert_eq!(pulled.ext_fields.get("nextBeginOffset"), Some("1"));
    assert!(
        pulled.body.windows(9).any(|w| w == b"lite body"),
        "{pulled:?}"
    );

    let mut props = Properties::new();
    props.insert(properties::UNIQ_KEY, "7F0000010001000000000000000000AB");
    props.insert("TRAN_MSG", "true");
    props.insert("PGROUP", "tx_pg");
    let header = send_header("tx_pg", &topic, 0);
    let header = ferrocket_protocol::header::SendMessageRequestHeader {
        sys_flag: Some(4), // TRANSACTION_PREPARED_TYPE
        properties: Some(props.to_encoded_string()),
        ..header
    };
    let half = conn.request(send_request(&header, "half"));
    assert_eq!(half.code, response_code::SUCCESS, "{half:?}");
    assert_eq!(
        half.ext_fields.get("transactionId"),
        Some("7F0000010001000000000000000000AB"),
        "{half:?}"
    );
}

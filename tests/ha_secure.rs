//! The HA port's optional protection (issue 39 item 4, Ferrocket keys):
//! with `haAuthSecret` and `haTlsEnable` a slave that knows the secret
//! replicates over TLS, while a slave without it, and a bare TCP client
//! that speaks the classic HA protocol, get no CommitLog byte.

mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::requests::{create_topic, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SECRET: &str = "ha-secret-of-the-set";
const CATCH_UP: Duration = Duration::from_secs(60);

fn broker(namesrv: &Namesrv, name: &str, settings: &[String]) -> Broker {
    let opts = BrokerOpts {
        broker_name: Some(name.to_string()),
        commit_log_segment_bytes: Some(1024 * 1024),
        extra_args: settings
            .iter()
            .flat_map(|s| ["--set".to_string(), s.clone()])
            .collect(),
        ..BrokerOpts::default()
    };
    Broker::start(&namesrv.addr(), opts)
}

fn slave_settings(secret: Option<&str>) -> Vec<String> {
    let mut settings = vec![
        "brokerId=1".to_string(),
        "brokerRole=SLAVE".to_string(),
        format!("haListenPort={}", free_port()),
        "haTlsEnable=true".to_string(),
    ];
    settings.extend(secret.map(|s| format!("haAuthSecret={s}")));
    settings
}

/// `commitLogMaxOffset` from GET_BROKER_RUNTIME_INFO.
fn commit_log_end(broker: &Broker) -> Option<i64> {
    let mut conn = RemotingConn::connect(broker.addr()).ok()?;
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    value["table"]["commitLogMaxOffset"].as_str()?.parse().ok()
}

#[test]
fn only_a_slave_with_the_secret_gets_the_commitlog() {
    let namesrv = Namesrv::start();
    let name = unique_name("ha-secure");
    let ha_port = free_port();
    let mut master = broker(
        &namesrv,
        &name,
        &[
            format!("haListenPort={ha_port}"),
            format!("haAuthSecret={SECRET}"),
            "haTlsEnable=true".to_string(),
        ],
    );
    let mut conn = master.connect();
    create_topic(&mut conn, "HaSecureTopic", 2);
    for n in 0..50 {
        let header = send_header("ha-producer", "HaSecureTopic", n % 2);
        let sent = conn.request(send_request(&header, format!("secret body {n}")));
        assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    }
    let end = commit_log_end(&master).expect("the master answers");
    assert!(end > 0);

    // A bare client speaking the classic protocol (an 8-byte offset
    // report) gets the challenge only, then the master closes the link.
    let mut bare = TcpStream::connect(("127.0.0.1", ha_port)).expect("HA port");
    bare.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut received = Vec::new();
    // TLS comes first: plaintext bytes are not a ClientHello, so the
    // handshake fails and nothing of the log is sent.
    bare.write_all(&0i64.to_be_bytes()).unwrap();
    let _ = bare.read_to_end(&mut received);
    // At most one TLS alert record (content type 21, 7 bytes) comes back.
    let alert_only = received.is_empty() || (received[0] == 21 && received.len() <= 7);
    assert!(
        alert_only && !contains(&received, b"secret body"),
        "a bare client got {received:?}"
    );

    master
        .process
        .wait_for_line("HA link refused", CATCH_UP)
        .expect("the master refuses the bare client");

    // A slave without the secret is refused; one with it replicates.
    let stranger = broker(&namesrv, &name, &slave_settings(None));
    master
        .process
        .wait_for_line("HA link refused", CATCH_UP)
        .expect("the master refuses the slave without the secret");
    assert_eq!(commit_log_end(&stranger), Some(0), "the stranger got data");
    drop(stranger);

    let slave = broker(&namesrv, &name, &slave_settings(Some(SECRET)));
    let caught_up = wait_for(CATCH_UP, || commit_log_end(&slave).filter(|s| *s == end));
    assert!(
        caught_up.is_some(),
        "the slave with the secret did not reach {end}:\n{}",
        slave.process.output()
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

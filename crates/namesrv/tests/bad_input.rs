//! Bad input never takes the name server down: malformed frames close that
//! connection, malformed requests get error responses, and other clients
//! keep being served.

mod common;

use common::*;
use ferrocket_protocol::body::perm;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

fn frame(header: &[u8], declared_header_len: u32, serialize_type: u8) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(4 + header.len() as i32).to_be_bytes());
    bytes.extend_from_slice(&(((serialize_type as u32) << 24) | declared_header_len).to_be_bytes());
    bytes.extend_from_slice(header);
    bytes
}

#[test]
fn malformed_frames_close_only_their_connection() {
    let namesrv = start_namesrv();
    let mut bystander = RemotingConn::connect(namesrv.addr()).unwrap();
    let json = br#"{"code":105,"opaque":1,"extFields":{"topic":"T"}}"#;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "garbage",
            b"\xde\xad\xbe\xef garbage garbage garbage".to_vec(),
        ),
        (
            "oversized length prefix",
            (64 * 1024 * 1024i32).to_be_bytes().to_vec(),
        ),
        ("length prefix below 4", vec![0, 0, 0, 1, 9]),
        ("header length beyond frame", frame(json, 10_000, 0)),
        ("invalid JSON header", frame(b"{not json", 9, 0)),
        ("JSON header that is not an object", frame(b"[1,2]", 5, 0)),
        ("unknown serialize type", frame(json, json.len() as u32, 9)),
        ("truncated binary header", frame(&[0, 105, 0], 3, 1)),
    ];
    for (name, bytes) in cases {
        let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
        client.send_raw(&bytes).unwrap();
        assert!(
            client.recv().is_none(),
            "{name}: the connection should be closed"
        );
        let response = bystander.request(route_request("Missing"));
        assert_eq!(
            response.code,
            response_code::TOPIC_NOT_EXIST,
            "after {name}"
        );
    }
    let mut fresh = RemotingConn::connect(namesrv.addr()).unwrap();
    assert_eq!(
        fresh.request(route_request("Missing")).code,
        response_code::TOPIC_NOT_EXIST
    );
}

#[test]
fn unknown_code_is_not_supported() {
    let namesrv = start_namesrv();
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();
    let response = client.request(RemotingCommand::request(9999));
    assert_eq!(response.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    assert_eq!(
        response.remark.as_deref(),
        Some(" request type 9999 not supported")
    );
    assert_eq!(
        client.request(route_request("T")).code,
        response_code::TOPIC_NOT_EXIST
    );
}

#[test]
fn bad_headers_and_bodies_get_error_responses_on_a_live_connection() {
    let namesrv = start_namesrv();
    let mut client = RemotingConn::connect(namesrv.addr()).unwrap();

    let no_topic = client.request(RemotingCommand::request(
        request_code::GET_ROUTEINFO_BY_TOPIC,
    ));
    assert_eq!(no_topic.code, response_code::INVALID_PARAMETER);
    assert!(no_topic.remark.unwrap_or_default().contains("topic"));

    let mut bad_id = register_request("c1", "broker-a", "127.0.0.1:10911", &[]);
    bad_id.ext_fields.insert("brokerId", "zero");
    let response = client.request(bad_id);
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    assert!(response.remark.unwrap_or_default().contains("brokerId"));

    let bad_body = register_request("c1", "broker-a", "127.0.0.1:10911", &[]).with_body("{oops");
    let response = client.request(bad_body);
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert!(response.remark.unwrap_or_default().contains("invalid body"));

    // A compressed registration whose body is not a zlib stream.
    let mut compressed = register_request("c1", "broker-a", "127.0.0.1:10911", &[]);
    compressed.ext_fields.insert("compressed", "true");
    let response = client.request(compressed);
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    let remark = response.remark.unwrap_or_default();
    assert!(
        remark.starts_with("Failed to decode RegisterBrokerBody (compressed)"),
        "{remark}"
    );

    let mut bad_crc = register_request("c1", "broker-a", "127.0.0.1:10911", &[]);
    bad_crc.ext_fields.insert("bodyCrc32", "12345");
    let response = client.request(bad_crc);
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert_eq!(response.remark.as_deref(), Some("crc32 not match"));

    let no_value = kv_request(request_code::PUT_KV_CONFIG, "ns", "k");
    assert_eq!(
        client.request(no_value).code,
        response_code::INVALID_PARAMETER
    );

    let bad_version = RemotingCommand::request(request_code::QUERY_DATA_VERSION)
        .with_ext("clusterName", "c1")
        .with_ext("brokerAddr", "x")
        .with_body("nope");
    assert_eq!(
        client.request(bad_version).code,
        response_code::SYSTEM_ERROR
    );

    // The connection still works, and a correct registration succeeds.
    let rw = perm::READ_WRITE;
    let mut good = register_request(
        "c1",
        "broker-a",
        "127.0.0.1:10911",
        &[("T", 4, rw), ("U", 1, rw)],
    );
    let crc = crc32_java(&good.body);
    good.ext_fields.insert("bodyCrc32", crc.to_string());
    assert_eq!(client.request(good).code, response_code::SUCCESS);
    assert_eq!(
        client.request(route_request("T")).code,
        response_code::SUCCESS
    );
}

/// RocketMQ's `UtilAll.crc32`: CRC32 with the sign bit cleared.
fn crc32_java(bytes: &[u8]) -> i32 {
    let mut crc: u32 = 0xFFFF_FFFF;
    for byte in bytes {
        crc ^= *byte as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    ((!crc) & 0x7FFF_FFFF) as i32
}

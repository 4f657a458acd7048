//! Golden byte vectors written by hand from the RocketMQ layouts (see
//! shared/PROTOCOL.md), not produced by our encoders. Each test decodes the
//! golden bytes and checks every field; where encoding is deterministic it
//! also encodes and compares bytes (JSON headers are compared as parsed JSON,
//! since key order is free).

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::{decode_batch, encode_batch, BatchItem};
use ferrocket_protocol::frame::FLAG_RESPONSE;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{
    decode_record, records, sys_flag, NewRecord, MAGIC_V1, QUEUE_OFFSET_POS,
};
use ferrocket_protocol::{ExtFields, FrameDecoder, LanguageCode, RemotingCommand, SerializeType};
use serde_json::{json, Value};

/// Hex to bytes; spaces, newlines and `|` are for readability.
fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'|')
        .collect();
    let pairs = digits.chunks_exact(2);
    assert!(pairs.remainder().is_empty(), "odd hex length");
    pairs
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn ext(pairs: &[(&str, &str)]) -> ExtFields {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn decode_one(bytes: &[u8]) -> RemotingCommand {
    let mut buf = BytesMut::from(bytes);
    let command = FrameDecoder::default()
        .next_frame(&mut buf)
        .unwrap()
        .expect("a whole frame");
    assert!(buf.is_empty(), "the frame left {} bytes", buf.len());
    assert_eq!(
        command,
        RemotingCommand::decode(Bytes::copy_from_slice(bytes)).unwrap()
    );
    command
}

/// Splits an encoded JSON frame into (parsed header, body) after checking
/// the two length words.
fn split_json_frame(frame: &[u8]) -> (Value, Vec<u8>) {
    let total = u32::from_be_bytes(frame[0..4].try_into().unwrap()) as usize;
    assert_eq!(total, frame.len() - 4);
    let marked = u32::from_be_bytes(frame[4..8].try_into().unwrap());
    assert_eq!(marked >> 24, 0, "JSON serialize type");
    let header_len = (marked & 0x00FF_FFFF) as usize;
    let header = serde_json::from_slice(&frame[8..8 + header_len]).unwrap();
    (header, frame[8 + header_len..].to_vec())
}

const JSON_REQUEST_HEADER: &str = r#"{"code":10,"language":"JAVA","version":453,"opaque":7,"flag":0,"remark":null,"extFields":{"topic":"T","queueId":"0"},"serializeTypeCurrentRPC":"JSON"}"#;

#[test]
fn json_request_frame() {
    assert_eq!(JSON_REQUEST_HEADER.len(), 0x96);
    let golden = [
        hex("0000009C | 00000096"),
        JSON_REQUEST_HEADER.as_bytes().to_vec(),
        b"hi".to_vec(),
    ]
    .concat();
    let command = decode_one(&golden);
    assert_eq!(command.code, 10);
    assert_eq!(command.language, LanguageCode::Java);
    assert_eq!(command.version, 453);
    assert_eq!(command.opaque, 7);
    assert_eq!(command.flag, 0);
    assert!(!command.is_response() && !command.is_oneway());
    assert_eq!(command.remark, None);
    assert_eq!(command.ext_fields.get("topic"), Some("T"));
    assert_eq!(command.ext_fields.get_i32("queueId").unwrap(), Some(0));
    assert_eq!(command.ext_fields.len(), 2);
    assert_eq!(command.serialize_type, SerializeType::Json);
    assert_eq!(&command.body[..], b"hi");

    let (header, body) = split_json_frame(&command.to_bytes());
    let expected: Value = serde_json::from_str(JSON_REQUEST_HEADER).unwrap();
    assert_eq!(header, expected);
    assert_eq!(body, b"hi");
}

#[test]
fn json_response_frame() {
    let header = r#"{"code":0,"language":"JAVA","version":453,"opaque":7,"flag":1,"remark":"done","extFields":{"msgId":"C0A8000100002A9F0000000000001234","queueOffset":"42"},"serializeTypeCurrentRPC":"JSON"}"#;
    assert_eq!(header.len(), 0xBB);
    let golden = [hex("000000BF 000000BB"), header.as_bytes().to_vec()].concat();
    let command = decode_one(&golden);
    assert_eq!(command.code, 0);
    assert_eq!(command.opaque, 7);
    assert_eq!(command.flag, FLAG_RESPONSE);
    assert!(command.is_response());
    assert_eq!(command.remark.as_deref(), Some("done"));
    assert_eq!(command.ext_fields.get_i64("queueOffset").unwrap(), Some(42));
    assert!(command.body.is_empty());

    let request = RemotingCommand {
        opaque: 7,
        ..RemotingCommand::request(10)
    };
    let response = RemotingCommand::response_to(&request, 0, Some("done".into()))
        .with_ext("msgId", "C0A8000100002A9F0000000000001234")
        .with_ext("queueOffset", 42);
    let (parsed, body) = split_json_frame(&response.to_bytes());
    assert_eq!(parsed, serde_json::from_str::<Value>(header).unwrap());
    assert!(body.is_empty());
}

#[test]
fn rocketmq_binary_request_frame() {
    let golden = hex("00000035 | 0100002F
         000A | 00 | 01C5 | 00000007 | 00000000
         00000000
         0000001A
           0005 746F706963 | 00000001 54
           0007 71756575654964 | 00000001 30
         6869");
    let command = decode_one(&golden);
    let expected = RemotingCommand {
        code: 10,
        language: LanguageCode::Java,
        version: 453,
        opaque: 7,
        flag: 0,
        remark: None,
        ext_fields: ext(&[("topic", "T"), ("queueId", "0")]),
        serialize_type: SerializeType::RocketMq,
        body: Bytes::from_static(b"hi"),
    };
    assert_eq!(command, expected);
    assert_eq!(&expected.to_bytes()[..], &golden[..]);
}

#[test]
fn rocketmq_binary_response_frame() {
    let golden = hex("0000001B | 01000017
         0000 | 0C | 01C5 | 00000007 | 00000001
         00000002 6F6B
         00000000");
    let command = decode_one(&golden);
    let expected = RemotingCommand {
        code: 0,
        language: LanguageCode::Rust,
        version: 453,
        opaque: 7,
        flag: FLAG_RESPONSE,
        remark: Some("ok".into()),
        ext_fields: ExtFields::new(),
        serialize_type: SerializeType::RocketMq,
        body: Bytes::new(),
    };
    assert_eq!(command, expected);
    assert_eq!(&expected.to_bytes()[..], &golden[..]);
}

/// A SEND_MESSAGE request as the Apache C++ client 1.0.1 sends it: no
/// serializeTypeCurrentRPC, language CPP, version 63, empty remark, numbers
/// in extFields, booleans as "0", ACL fields present.
#[test]
fn cpp_client_send_message_header() {
    let header = concat!(
        r#"{"code":10,"extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"","#,
        r#""batch":"0","bornTimestamp":"1700000000000","defaultTopic":"TBW102","#,
        r#""defaultTopicQueueNums":4,"flag":0,"producerGroup":"G","#,
        r#""properties":"TAGS\u0001TagA\u0002WAIT\u0001true\u0002","queueId":0,"#,
        r#""reconsumeTimes":"0","sysFlag":0,"topic":"T","unitMode":"0"},"#,
        r#""flag":0,"language":"CPP","opaque":1,"remark":"","version":63}"#
    );
    let mut golden = (4 + header.len() as u32 + 4).to_be_bytes().to_vec();
    golden.extend_from_slice(&(header.len() as u32).to_be_bytes());
    golden.extend_from_slice(header.as_bytes());
    golden.extend_from_slice(b"body");
    let command = decode_one(&golden);
    assert_eq!(command.code, 10);
    assert_eq!(command.language, LanguageCode::Cpp);
    assert_eq!(command.version, 63);
    assert_eq!(command.opaque, 1);
    assert_eq!(command.remark.as_deref(), Some(""));
    assert_eq!(command.serialize_type, SerializeType::Json);
    let f = &command.ext_fields;
    assert_eq!(f.get_i32("queueId").unwrap(), Some(0));
    assert_eq!(f.get_i32("sysFlag").unwrap(), Some(0));
    assert_eq!(f.get_i32("flag").unwrap(), Some(0));
    assert_eq!(f.get_i32("defaultTopicQueueNums").unwrap(), Some(4));
    assert_eq!(f.get_i64("bornTimestamp").unwrap(), Some(1_700_000_000_000));
    assert_eq!(f.get_bool("batch"), Some(false));
    assert_eq!(f.get_bool("unitMode"), Some(false));
    assert_eq!(f.get("AccessKey"), Some(""));
    let props = Properties::decode_str(f.get("properties").unwrap());
    assert_eq!(props.tags(), Some("TagA"));
    assert_eq!(props.get(properties::WAIT), Some("true"));
    assert_eq!(&command.body[..], b"body");

    let response = RemotingCommand::response_to(&command, 0, None);
    assert_eq!(response.serialize_type, SerializeType::Json);
    let (parsed, _) = split_json_frame(&response.to_bytes());
    assert_eq!(parsed["opaque"], json!(1));
    assert_eq!(parsed["flag"], json!(1));
}

fn host(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

const RECORD_V4: &str = "
    00000093 | DAA320A7 | 69C865ED | 00000001 | 00000000
    0000000000000005 | 0000000000001000 | 00000000
    0000018BCFE56800 | C0A8010A 0000D431
    0000018BCFE5687B | C0A80102 00002A9F
    00000000 | 0000000000000000
    0000000E 48656C6C6F20526F636B65744D51
    09 546F70696354657374
    0021 54414753 01 54616741 02 4B455953 01 6F726465722D31 02 57414954 01 74727565 02";

const RECORD_V4_PROPERTIES: &[u8] = b"TAGS\x01TagA\x02KEYS\x01order-1\x02WAIT\x01true\x02";

#[test]
fn stored_record_ipv4() {
    let golden = hex(RECORD_V4);
    assert_eq!(golden.len(), 0x93);
    let view = decode_record(&golden, true).unwrap();
    assert_eq!(view.total_size, 147);
    assert_eq!(view.magic, MAGIC_V1);
    assert_eq!(view.body_crc, 0x69C8_65ED);
    assert_eq!(view.queue_id, 1);
    assert_eq!(view.flag, 0);
    assert_eq!(view.queue_offset, 5);
    assert_eq!(view.physical_offset, 4096);
    assert_eq!(view.sys_flag, 0);
    assert_eq!(view.born_timestamp_ms, 1_700_000_000_000);
    assert_eq!(view.born_host, host("192.168.1.10:54321"));
    assert_eq!(view.store_timestamp_ms, 1_700_000_000_123);
    assert_eq!(view.store_host, host("192.168.1.2:10911"));
    assert_eq!(view.reconsume_times, 0);
    assert_eq!(view.prepared_transaction_offset, 0);
    assert_eq!(view.body, b"Hello RocketMQ");
    assert_eq!(view.topic, "TopicTest");
    assert_eq!(view.properties, RECORD_V4_PROPERTIES);
    let props = view.properties();
    assert_eq!(props.tags(), Some("TagA"));
    assert_eq!(props.keys().collect::<Vec<_>>(), vec!["order-1"]);
    assert_eq!(view.offset_msg_id(), "C0A8010200002A9F0000000000001000");
    assert_eq!(view.record, &golden[..]);

    let record = NewRecord {
        topic: "TopicTest",
        queue_id: 1,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: host("192.168.1.10:54321"),
        store_timestamp_ms: 1_700_000_000_123,
        store_host: host("192.168.1.2:10911"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: b"Hello RocketMQ",
        properties: RECORD_V4_PROPERTIES,
    };
    assert_eq!(record.encoded_len(), 147);
    let mut out = BytesMut::new();
    assert_eq!(record.encode(5, 4096, &mut out).unwrap(), 147);
    assert_eq!(&out[..], &golden[..]);

    // The appender's path: encode with zero offsets, then patch them.
    let mut out = BytesMut::new();
    record.encode(0, 0, &mut out).unwrap();
    assert_ne!(&out[..], &golden[..]);
    ferrocket_protocol::record::patch_offsets(&mut out, 5, 4096);
    assert_eq!(&out[..], &golden[..]);
    assert_eq!(
        &out[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8],
        &hex("0000000000000005")[..]
    );
}

const RECORD_V6: &str = "
    00000077 | DAA320A7 | 77065916 | 00000003 | 00000007
    0000000000000000 | 0000010000000000 | 00000034
    0000018BCFE56800 | 20010DB8000000000000000000000001 0000D431
    0000018BCFE5687B | 20010DB8000000000000000000000002 00002A9F
    00000002 | 0000000000000000
    00000002 7636
    02 5436
    0000";

#[test]
fn stored_record_ipv6() {
    let golden = hex(RECORD_V6);
    assert_eq!(golden.len(), 119);
    let view = decode_record(&golden, true).unwrap();
    assert_eq!(view.total_size, 119);
    // CRC32("v6") is 0xF7065916; RocketMQ keeps the low 31 bits.
    assert_eq!(view.body_crc, 0x7706_5916);
    assert_eq!(view.queue_id, 3);
    assert_eq!(view.flag, 7);
    assert_eq!(view.physical_offset, 1 << 40);
    assert_eq!(
        view.sys_flag,
        sys_flag::BORN_HOST_V6 | sys_flag::STORE_HOST_V6 | sys_flag::TRANSACTION_PREPARED
    );
    assert_eq!(
        sys_flag::transaction_type(view.sys_flag),
        sys_flag::TRANSACTION_PREPARED
    );
    assert_eq!(view.born_host, host("[2001:db8::1]:54321"));
    assert_eq!(view.store_host, host("[2001:db8::2]:10911"));
    assert_eq!(view.reconsume_times, 2);
    assert_eq!(view.body, b"v6");
    assert_eq!(view.topic, "T6");
    assert!(view.properties.is_empty());
    assert_eq!(
        view.offset_msg_id(),
        "20010DB800000000000000000000000200002A9F0000010000000000"
    );

    let record = NewRecord {
        topic: "T6",
        queue_id: 3,
        flag: 7,
        // The host-version bits come from the hosts themselves.
        sys_flag: sys_flag::TRANSACTION_PREPARED,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: host("[2001:db8::1]:54321"),
        store_timestamp_ms: 1_700_000_000_123,
        store_host: host("[2001:db8::2]:10911"),
        reconsume_times: 2,
        prepared_transaction_offset: 0,
        body: b"v6",
        properties: b"",
    };
    let mut out = BytesMut::new();
    record.encode(0, 1 << 40, &mut out).unwrap();
    assert_eq!(&out[..], &golden[..]);
}

#[test]
fn pull_body_of_two_records() {
    let body = [hex(RECORD_V4), hex(RECORD_V6)].concat();
    let views: Vec<_> = records(&body, true).collect::<Result<_, _>>().unwrap();
    assert_eq!(views.len(), 2);
    assert_eq!(views[0].topic, "TopicTest");
    assert_eq!(views[1].topic, "T6");
}

const BATCH: &str = "
    0000001E | 00000000 | 00000000 | 00000000 | 00000001 61 | 0007 54414753017802
    00000016 | 00000000 | 00000000 | 00000001 | 00000000    | 0000";

#[test]
fn batch_body() {
    let golden = Bytes::from(hex(BATCH));
    let items = decode_batch(&golden).unwrap();
    let expected = vec![
        BatchItem {
            flag: 0,
            body: Bytes::from_static(b"a"),
            properties: Bytes::from_static(b"TAGS\x01x\x02"),
        },
        BatchItem {
            flag: 1,
            body: Bytes::new(),
            properties: Bytes::new(),
        },
    ];
    assert_eq!(items, expected);
    assert_eq!(encode_batch(&expected).unwrap(), golden);
}

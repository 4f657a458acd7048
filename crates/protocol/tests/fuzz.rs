//! Fuzz target: arbitrary and mutated bytes fed to every decoder must give
//! `Ok` or `Err`, never a panic.
//!
//! Cases default to 20,000 so a normal test run stays fast; set
//! `PROPTEST_CASES` for a long run, e.g.
//! `PROPTEST_CASES=1000000 cargo test -p ferrocket-protocol --release --test fuzz`.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::{decode_batch, encode_batch, BatchItem};
use ferrocket_protocol::message_id::{decode_offset_msg_id, decode_unique_key, offset_msg_id};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::{decode_record, index_fields, peek_record, records, NewRecord};
use ferrocket_protocol::{FrameDecoder, RemotingCommand, SerializeType};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const CASES_DEFAULT: u32 = 20_000;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(CASES_DEFAULT)
}

/// Valid encodings the mutator starts from.
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let request = RemotingCommand::request(10)
        .with_ext("topic", "T")
        .with_ext("queueId", 3)
        .with_body(&b"body"[..]);
    seeds.push(request.to_bytes().to_vec());
    let mut binary = request.clone();
    binary.serialize_type = SerializeType::RocketMq;
    binary.remark = Some("remark".into());
    seeds.push(binary.to_bytes().to_vec());
    seeds.push(
        br#"{"code":10,"extFields":{"queueId":0,"batch":"0"},"language":"CPP","opaque":1,"remark":"","version":63}"#
            .to_vec(),
    );

    let hosts: [(SocketAddr, SocketAddr); 2] = [
        ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap()),
        (
            "[fe80::1]:1".parse().unwrap(),
            "[fe80::2]:2".parse().unwrap(),
        ),
    ];
    let long_topic = "t".repeat(130);
    let mut pull_body = BytesMut::new();
    for (i, (born, store)) in hosts.iter().enumerate() {
        for topic in ["TopicTest", long_topic.as_str()] {
            let record = NewRecord {
                topic,
                queue_id: 1,
                flag: 0,
                sys_flag: 0,
                born_timestamp_ms: 1,
                born_host: *born,
                store_timestamp_ms: 2,
                store_host: *store,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: b"hello",
                properties: b"TAGS\x01a\x02UNIQ_KEY\x01K\x02",
            };
            let mut one = BytesMut::new();
            record.encode(i as i64, 0, &mut one).unwrap();
            seeds.push(one.to_vec());
            pull_body.extend_from_slice(&one);
        }
    }
    seeds.push(pull_body.to_vec());

    let batch = encode_batch(&[
        BatchItem {
            flag: 1,
            body: Bytes::from_static(b"a"),
            properties: Bytes::from_static(b"TAGS\x01x\x02"),
        },
        BatchItem::default(),
    ])
    .unwrap();
    seeds.push(batch.to_vec());
    seeds.push(offset_msg_id("10.0.0.2:10911".parse().unwrap(), 42).into_bytes());
    seeds.push(b"0A0000012345FFFFFFFE010203040000".to_vec());
    seeds
}

#[derive(Debug, Clone)]
enum Mutation {
    SetByte(prop::sample::Index, u8),
    SetI32(prop::sample::Index, i32),
    Truncate(prop::sample::Index),
    Insert(prop::sample::Index, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just(0i32),
        Just(-1),
        Just(1),
        Just(i32::MAX),
        Just(i32::MIN),
        Just(0x0100_0000),
        0i32..512,
        any::<i32>(),
    ];
    prop_oneof![
        4 => (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::SetByte(i, b)),
        3 => (any::<prop::sample::Index>(), interesting).prop_map(|(i, v)| Mutation::SetI32(i, v)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        1 => (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        match m {
            Mutation::SetByte(i, b) if len > 0 => bytes[i.index(len)] = *b,
            Mutation::SetI32(i, v) if len >= 4 => {
                let at = i.index(len - 3);
                bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            Mutation::Truncate(i) => bytes.truncate(i.index(len + 1)),
            Mutation::Insert(i, extra) => {
                let at = i.index(len + 1);
                bytes.splice(at..at, extra.iter().copied());
            }
            _ => {}
        }
    }
    bytes
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    let seed_count = seeds.len();
    let mutated = (0..seed_count, prop::collection::vec(mutation(), 0..6))
        .prop_map(move |(i, ms)| apply(seeds[i].clone(), &ms));
    // A correct length prefix in front of random header bytes.
    let framed = (
        0u8..3,
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(kind, header_len, rest)| {
            let mut out = ((4 + rest.len()) as u32).to_be_bytes().to_vec();
            let marked = (u32::from(kind) << 24) | (header_len % (rest.len() as u32 + 2));
            out.extend_from_slice(&marked.to_be_bytes());
            out.extend_from_slice(&rest);
            out
        });
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..300),
        6 => mutated,
        2 => framed,
        1 => "[0-9A-Fa-f]{0,60}".prop_map(String::into_bytes),
    ]
}

/// Everything a broker or client would do with untrusted bytes.
fn exercise(input: &[u8]) {
    let decoder = FrameDecoder::default();
    let mut stream = BytesMut::from(input);
    while let Ok(Some(command)) = decoder.next_frame(&mut stream) {
        let _ = command.to_bytes();
    }
    if let Ok(command) = RemotingCommand::decode(Bytes::copy_from_slice(input)) {
        let mut other = command.clone();
        other.serialize_type = match command.serialize_type {
            SerializeType::Json => SerializeType::RocketMq,
            SerializeType::RocketMq => SerializeType::Json,
        };
        let _ = other.to_bytes();
    }
    // Also as a bare header: decode expects the length words first.
    let mut framed = ((4 + input.len()) as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&(input.len() as u32 & 0x00FF_FFFF).to_be_bytes());
    framed.extend_from_slice(input);
    let _ = RemotingCommand::decode(Bytes::from(framed));

    let _ = peek_record(input);
    for verify in [false, true] {
        if let Ok(view) = decode_record(input, verify) {
            let _ = view.properties();
            let _ = view.offset_msg_id();
            // What the index feed reads agrees with the full decode.
            let index = index_fields(input).expect("a decodable record has index fields");
            assert_eq!(index.topic, view.topic);
            assert_eq!(index.properties, view.properties);
            assert_eq!(index.store_timestamp_ms, view.store_timestamp_ms);
        }
        for view in records(input, verify).flatten() {
            let _ = view.properties().tags();
        }
    }
    if let Ok(items) = decode_batch(&Bytes::copy_from_slice(input)) {
        let _ = encode_batch(&items);
    }
    let properties = Properties::decode(input);
    let _ = properties.keys().count();
    let _ = properties.to_bytes();

    let text = String::from_utf8_lossy(input);
    let _ = decode_offset_msg_id(&text);
    let _ = decode_unique_key(&text);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn decoders_never_panic(input in input()) {
        exercise(&input);
    }
}

#[test]
fn seeds_are_valid() {
    // The mutator starts from real encodings; check they decode.
    let seeds = seeds();
    assert!(RemotingCommand::decode(Bytes::from(seeds[0].clone())).is_ok());
    assert!(RemotingCommand::decode(Bytes::from(seeds[1].clone())).is_ok());
    for record in &seeds[3..8] {
        assert!(decode_record(record, true).is_ok());
    }
    assert_eq!(records(&seeds[7], true).filter(Result::is_ok).count(), 4);
    assert_eq!(
        decode_batch(&Bytes::from(seeds[8].clone())).unwrap().len(),
        2
    );
    assert!(decode_offset_msg_id(std::str::from_utf8(&seeds[9]).unwrap()).is_ok());
    assert!(decode_unique_key(std::str::from_utf8(&seeds[10]).unwrap()).is_ok());
}

//! Behaviour of the stored-record codec beyond the golden vectors: version
//! choice, limits, recovery peeks and every rejection path.

use std::net::SocketAddr;

use bytes::BytesMut;
use ferrocket_protocol::limits::PROPERTIES_BYTES_MAX;
use ferrocket_protocol::record::{
    decode_record, encode_blank, index_fields, patch_offsets, peek_record, record_len, records,
    sys_flag, NewRecord, RecordPeek, BLANK_MAGIC, BODY_CRC_POS, MAGIC_V1, MAGIC_V2,
    RECORD_BYTES_MIN, TOPIC_BYTES_MAX_V1,
};
use ferrocket_protocol::ProtocolError;

fn host(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn sample<'a>(topic: &'a str, body: &'a [u8], properties: &'a [u8]) -> NewRecord<'a> {
    NewRecord {
        topic,
        queue_id: 2,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1,
        born_host: host("10.0.0.1:1234"),
        store_timestamp_ms: 2,
        store_host: host("10.0.0.2:10911"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        properties,
    }
}

fn encode(record: &NewRecord<'_>) -> Vec<u8> {
    let mut out = BytesMut::new();
    record.encode(7, 100, &mut out).unwrap();
    out.to_vec()
}

/// Position of the BODY length field with IPv4 hosts.
const BODY_LEN_POS_V4: usize = 84;

#[test]
fn smallest_record() {
    assert_eq!(RECORD_BYTES_MIN, record_len(0, false, 0, 0, 0));
    let bytes = encode(&sample("", b"", b""));
    assert_eq!(bytes.len(), RECORD_BYTES_MIN);
    let view = decode_record(&bytes, true).unwrap();
    assert_eq!(view.topic, "");
    assert!(view.body.is_empty() && view.properties.is_empty());
}

#[test]
fn long_topics_use_v2() {
    let at_limit = "t".repeat(TOPIC_BYTES_MAX_V1);
    let bytes = encode(&sample(&at_limit, b"x", b""));
    assert_eq!(decode_record(&bytes, true).unwrap().magic, MAGIC_V1);

    let long = "t".repeat(TOPIC_BYTES_MAX_V1 + 1);
    let record = sample(&long, b"x", b"");
    assert_eq!(record.magic(), MAGIC_V2);
    let bytes = encode(&record);
    assert_eq!(bytes.len(), record.encoded_len());
    let view = decode_record(&bytes, true).unwrap();
    assert_eq!(view.magic, MAGIC_V2);
    assert_eq!(view.topic, long);
}

#[test]
fn oversized_fields_are_rejected_without_writing() {
    let properties = vec![b'a'; PROPERTIES_BYTES_MAX + 1];
    let mut out = BytesMut::from(&b"keep"[..]);
    let result = sample("T", b"", &properties).encode(0, 0, &mut out);
    assert!(matches!(result, Err(ProtocolError::Record(_))));
    assert_eq!(&out[..], b"keep");

    let topic = "t".repeat(i16::MAX as usize + 1);
    assert!(sample(&topic, b"", b"").encode(0, 0, &mut out).is_err());
    assert_eq!(&out[..], b"keep");

    let properties = vec![b'a'; PROPERTIES_BYTES_MAX];
    let bytes = encode(&sample("T", b"", &properties));
    assert_eq!(
        decode_record(&bytes, true).unwrap().properties.len(),
        PROPERTIES_BYTES_MAX
    );
}

#[test]
fn hosts_set_their_flags_and_mapped_ipv6_is_ipv4() {
    let mut record = sample("T", b"b", b"");
    record.sys_flag = sys_flag::BORN_HOST_V6 | sys_flag::MULTI_TAGS;
    record.born_host = host("[::ffff:10.1.2.3]:5");
    record.store_host = host("[fe80::1]:6");
    assert_eq!(
        record.effective_sys_flag(),
        sys_flag::STORE_HOST_V6 | sys_flag::MULTI_TAGS
    );
    let bytes = encode(&record);
    let view = decode_record(&bytes, true).unwrap();
    assert_eq!(view.born_host, host("10.1.2.3:5"));
    assert_eq!(view.store_host, host("[fe80::1]:6"));
    assert_eq!(
        view.sys_flag,
        sys_flag::STORE_HOST_V6 | sys_flag::MULTI_TAGS
    );
}

#[test]
fn sys_flag_helpers() {
    let flag = sys_flag::COMPRESSED | sys_flag::COMPRESSION_ZLIB | sys_flag::TRANSACTION_PREPARED;
    assert_eq!(sys_flag::compression_type(flag), 3);
    assert_eq!(
        sys_flag::transaction_type(flag),
        sys_flag::TRANSACTION_PREPARED
    );
    let committed = sys_flag::with_transaction_type(flag, sys_flag::TRANSACTION_COMMIT);
    assert_eq!(
        sys_flag::transaction_type(committed),
        sys_flag::TRANSACTION_COMMIT
    );
    assert_eq!(
        committed & !sys_flag::TRANSACTION_MASK,
        flag & !sys_flag::TRANSACTION_MASK
    );
}

#[test]
fn peeks_for_recovery() {
    let bytes = encode(&sample("T", b"body", b""));
    assert_eq!(
        peek_record(&bytes[..8]).unwrap(),
        RecordPeek::Message {
            total_size: bytes.len(),
            magic: MAGIC_V1
        }
    );
    assert_eq!(peek_record(&[0u8; 64]).unwrap(), RecordPeek::Unwritten);
    assert!(matches!(
        peek_record(&bytes[..7]),
        Err(ProtocolError::Truncated { .. })
    ));

    let mut blank = BytesMut::new();
    encode_blank(40, &mut blank);
    assert_eq!(blank.len(), 40);
    assert_eq!(&blank[4..8], &BLANK_MAGIC.to_be_bytes());
    assert_eq!(
        peek_record(&blank).unwrap(),
        RecordPeek::Blank { total_size: 40 }
    );
    assert!(decode_record(&blank, false).is_err());

    let mut bad_magic = bytes.clone();
    bad_magic[4] ^= 0xFF;
    assert!(peek_record(&bad_magic).is_err());
    let mut too_small = bytes.clone();
    too_small[..4].copy_from_slice(&(RECORD_BYTES_MIN as i32 - 1).to_be_bytes());
    assert!(peek_record(&too_small).is_err());
    let mut negative = bytes;
    negative[..4].copy_from_slice(&(-5i32).to_be_bytes());
    assert!(peek_record(&negative).is_err());
}

#[test]
fn crc_is_checked_only_when_asked() {
    let mut bytes = encode(&sample("T", b"body", b""));
    bytes[BODY_CRC_POS + 3] ^= 1;
    assert!(matches!(
        decode_record(&bytes, true),
        Err(ProtocolError::Record(_))
    ));
    let view = decode_record(&bytes, false).unwrap();
    assert!(!view.body_crc_matches());
}

#[test]
fn inconsistent_lengths_are_rejected() {
    let bytes = encode(&sample("T", b"body", b"a\x01b\x02"));
    // Truncated buffer.
    assert!(matches!(
        decode_record(&bytes[..bytes.len() - 1], false),
        Err(ProtocolError::Truncated { .. })
    ));
    // Total size larger than the fields (with a longer buffer behind it).
    let mut longer = bytes.clone();
    longer.push(0);
    let total = bytes.len() as i32 + 1;
    longer[..4].copy_from_slice(&total.to_be_bytes());
    assert!(decode_record(&longer, false).is_err());
    // Body length overrunning the record, and negative.
    for body_len in [1000i32, -1, i32::MAX, i32::MIN] {
        let mut bad = bytes.clone();
        bad[BODY_LEN_POS_V4..BODY_LEN_POS_V4 + 4].copy_from_slice(&body_len.to_be_bytes());
        assert!(
            decode_record(&bad, false).is_err(),
            "body length {body_len}"
        );
    }
    // Negative properties length.
    let mut bad = bytes.clone();
    let props_len_pos = bytes.len() - 4 - 2;
    bad[props_len_pos..props_len_pos + 2].copy_from_slice(&(-1i16).to_be_bytes());
    assert!(decode_record(&bad, false).is_err());
    // A topic that is not UTF-8.
    let mut bad = bytes.clone();
    bad[BODY_LEN_POS_V4 + 4 + 4 + 1] = 0xFF;
    assert!(decode_record(&bad, false).is_err());
    // A port outside u16.
    let mut bad = bytes;
    bad[52..56].copy_from_slice(&70_000i32.to_be_bytes());
    assert!(decode_record(&bad, false).is_err());
}

#[test]
fn record_iterator_stops_at_the_first_bad_record() {
    let first = encode(&sample("A", b"1", b""));
    let second = encode(&sample("B", b"22", b""));
    let mut body = [first.clone(), second.clone(), first.clone()].concat();
    let mut iter = records(&body, true);
    assert_eq!(iter.next().unwrap().unwrap().topic, "A");
    assert_eq!(iter.position(), first.len());
    assert_eq!(iter.next().unwrap().unwrap().topic, "B");
    assert_eq!(iter.next().unwrap().unwrap().topic, "A");
    assert!(iter.next().is_none());
    assert_eq!(iter.position(), body.len());

    body.truncate(body.len() - 1);
    let results: Vec<_> = records(&body, true).collect();
    assert_eq!(results.len(), 3);
    assert!(results[2].is_err());
    assert!(records(&[], true).next().is_none());
}

#[test]
fn patching_offsets_in_place() {
    let mut bytes = encode(&sample("T", b"b", b""));
    patch_offsets(&mut bytes, i64::MAX, 1 << 33);
    let view = decode_record(&bytes, true).unwrap();
    assert_eq!(view.queue_offset, i64::MAX);
    assert_eq!(view.physical_offset, 1 << 33);
}

#[test]
fn index_fields_agree_with_the_full_decode() {
    let long_topic = "T".repeat(TOPIC_BYTES_MAX_V1 + 1);
    for topic in ["T", long_topic.as_str()] {
        for (born, store) in [
            ("10.0.0.1:1", "10.0.0.2:2"),
            ("[fe80::1]:1", "10.0.0.2:2"),
            ("10.0.0.1:1", "[fe80::2]:2"),
            ("[fe80::1]:1", "[fe80::2]:2"),
        ] {
            let mut record = sample(topic, b"body", b"KEYS\x01k\x02");
            record.born_host = host(born);
            record.store_host = host(store);
            record.store_timestamp_ms = 1_764_800_000_123;
            let bytes = encode(&record);
            let view = decode_record(&bytes, true).unwrap();
            let index = index_fields(&bytes).unwrap();
            assert_eq!(index.topic, view.topic, "{born} {store}");
            assert_eq!(index.properties, view.properties);
            assert_eq!(index.store_timestamp_ms, 1_764_800_000_123);
            // Cut short: refused, not read past.
            assert!(index_fields(&bytes[..bytes.len() - 1]).is_err());
        }
    }
}

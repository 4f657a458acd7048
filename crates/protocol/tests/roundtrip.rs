//! Property tests: everything we encode decodes back to what we encoded.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::batch::{decode_batch, encode_batch, BatchItem};
use ferrocket_protocol::message_id::{
    decode_offset_msg_id, decode_unique_key, offset_msg_id, UniqueKeyGenerator,
};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::{decode_record, patch_offsets, records, NewRecord, MAGIC_V2};
use ferrocket_protocol::{ExtFields, FrameDecoder, LanguageCode, RemotingCommand, SerializeType};
use proptest::prelude::*;

fn language() -> impl Strategy<Value = LanguageCode> {
    (0i64..13).prop_map(LanguageCode::from_ordinal)
}

fn ext_fields() -> impl Strategy<Value = ExtFields> {
    prop::collection::vec(("[a-zA-Z][a-zA-Z0-9_]{0,12}", ".{0,24}"), 0..8)
        .prop_map(|pairs| pairs.into_iter().collect())
}

fn command(serialize_type: SerializeType) -> impl Strategy<Value = RemotingCommand> {
    let binary = serialize_type == SerializeType::RocketMq;
    (
        any::<i16>(),
        language(),
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        // The binary header cannot tell an empty remark from none.
        prop::option::of(if binary { ".{1,40}" } else { ".{0,40}" }),
        ext_fields(),
        prop::collection::vec(any::<u8>(), 0..256),
        any::<i32>(),
    )
        .prop_map(
            move |(code, language, version, opaque, flag, remark, ext_fields, body, wide)| {
                RemotingCommand {
                    // JSON carries any i32; the binary header an i16.
                    code: if binary { code.into() } else { wide },
                    language,
                    version: version.into(),
                    opaque,
                    flag,
                    remark,
                    ext_fields,
                    serialize_type,
                    body: Bytes::from(body),
                }
            },
        )
}

fn sorted(fields: &ExtFields) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pairs.sort();
    pairs
}

fn assert_same_command(decoded: &RemotingCommand, original: &RemotingCommand) {
    // JSON objects do not keep key order; compare extFields as sets.
    assert_eq!(sorted(&decoded.ext_fields), sorted(&original.ext_fields));
    let mut decoded = decoded.clone();
    decoded.ext_fields = original.ext_fields.clone();
    assert_eq!(&decoded, original);
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|b| IpAddr::V4(Ipv4Addr::from(b))),
        any::<[u8; 16]>().prop_map(|b| IpAddr::V6(Ipv6Addr::from(b))),
    ]
}

fn socket_addr() -> impl Strategy<Value = SocketAddr> {
    (ip(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::new(ip, port))
}

/// What a host reads back as: IPv4-mapped IPv6 addresses become IPv4.
fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), addr.port()),
            None => addr,
        },
        IpAddr::V4(_) => addr,
    }
}

#[derive(Debug, Clone)]
struct RecordInput {
    topic: String,
    queue_id: i32,
    flag: i32,
    sys_flag: i32,
    born_timestamp_ms: i64,
    born_host: SocketAddr,
    store_timestamp_ms: i64,
    store_host: SocketAddr,
    reconsume_times: i32,
    prepared_transaction_offset: i64,
    body: Vec<u8>,
    properties: Vec<u8>,
}

impl RecordInput {
    fn as_new(&self) -> NewRecord<'_> {
        NewRecord {
            topic: &self.topic,
            queue_id: self.queue_id,
            flag: self.flag,
            sys_flag: self.sys_flag,
            born_timestamp_ms: self.born_timestamp_ms,
            born_host: self.born_host,
            store_timestamp_ms: self.store_timestamp_ms,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: &self.body,
            properties: &self.properties,
        }
    }
}

fn record_input() -> impl Strategy<Value = RecordInput> {
    (
        prop_oneof![".{0,40}", "[a-z]{120,200}"],
        (any::<i32>(), any::<i32>(), any::<i32>()),
        (any::<i64>(), socket_addr(), any::<i64>(), socket_addr()),
        (any::<i32>(), any::<i64>()),
        prop::collection::vec(any::<u8>(), 0..1024),
        prop::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            |(topic, (queue_id, flag, sys_flag), (bt, bh, st, sh), (rt, pto), body, props)| {
                RecordInput {
                    topic,
                    queue_id,
                    flag,
                    sys_flag,
                    born_timestamp_ms: bt,
                    born_host: bh,
                    store_timestamp_ms: st,
                    store_host: sh,
                    reconsume_times: rt,
                    prepared_transaction_offset: pto,
                    body,
                    properties: props,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn frames_round_trip_json(original in command(SerializeType::Json)) {
        let bytes = original.to_bytes();
        let decoded = RemotingCommand::decode(bytes.clone()).unwrap();
        assert_same_command(&decoded, &original);
        // The size estimate holds for text that needs no JSON escape.
        let plain = |text: &str| !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        let fields_plain = original.ext_fields.iter().all(|(k, v)| plain(k) && plain(v));
        if original.remark.as_deref().is_none_or(plain) && fields_plain {
            prop_assert!(bytes.len() <= original.encoded_len_max());
        }
    }

    #[test]
    fn frames_round_trip_binary(original in command(SerializeType::RocketMq)) {
        let bytes = original.to_bytes();
        let decoded = RemotingCommand::decode(bytes.clone()).unwrap();
        prop_assert_eq!(&decoded, &original);
        prop_assert_eq!(decoded.to_bytes(), bytes);
    }

    #[test]
    fn frame_stream_split_anywhere(
        commands in prop::collection::vec(
            prop_oneof![command(SerializeType::Json), command(SerializeType::RocketMq)], 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut stream = BytesMut::new();
        for c in &commands {
            c.encode(&mut stream);
        }
        let cut = cut.index(stream.len() + 1);
        let decoder = FrameDecoder::default();
        let mut buf = BytesMut::from(&stream[..cut]);
        let mut decoded = Vec::new();
        while let Some(c) = decoder.next_frame(&mut buf).unwrap() {
            decoded.push(c);
        }
        buf.extend_from_slice(&stream[cut..]);
        while let Some(c) = decoder.next_frame(&mut buf).unwrap() {
            decoded.push(c);
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(decoded.len(), commands.len());
        for (d, c) in decoded.iter().zip(&commands) {
            assert_same_command(d, c);
        }
    }

    #[test]
    fn records_round_trip(input in record_input(), qo in any::<i64>(), po in any::<i64>()) {
        let record = input.as_new();
        let mut out = BytesMut::new();
        let written = record.encode(0, 0, &mut out).unwrap();
        prop_assert_eq!(written, out.len());
        prop_assert_eq!(written, record.encoded_len());
        patch_offsets(&mut out, qo, po);
        let view = decode_record(&out, true).unwrap();
        prop_assert_eq!(view.total_size, written);
        prop_assert_eq!(view.magic == MAGIC_V2, input.topic.len() > 127);
        prop_assert_eq!(view.queue_id, input.queue_id);
        prop_assert_eq!(view.flag, input.flag);
        prop_assert_eq!(view.queue_offset, qo);
        prop_assert_eq!(view.physical_offset, po);
        prop_assert_eq!(view.sys_flag, record.effective_sys_flag());
        prop_assert_eq!(view.sys_flag & !0x30, input.sys_flag & !0x30);
        prop_assert_eq!(view.born_timestamp_ms, input.born_timestamp_ms);
        prop_assert_eq!(view.born_host, canonical(input.born_host));
        prop_assert_eq!(view.store_timestamp_ms, input.store_timestamp_ms);
        prop_assert_eq!(view.store_host, canonical(input.store_host));
        prop_assert_eq!(view.reconsume_times, input.reconsume_times);
        prop_assert_eq!(view.prepared_transaction_offset, input.prepared_transaction_offset);
        prop_assert_eq!(view.body, &input.body[..]);
        prop_assert_eq!(view.topic, &input.topic[..]);
        prop_assert_eq!(view.properties, &input.properties[..]);
        prop_assert_eq!(
            decode_offset_msg_id(&view.offset_msg_id()).unwrap().commit_log_offset, po);
    }

    #[test]
    fn record_streams_round_trip(inputs in prop::collection::vec(record_input(), 0..6)) {
        let mut out = BytesMut::new();
        for (i, input) in inputs.iter().enumerate() {
            input.as_new().encode(i as i64, out.len() as i64, &mut out).unwrap();
        }
        let views: Vec<_> = records(&out, true).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(views.len(), inputs.len());
        let mut position = 0;
        for (i, (view, input)) in views.iter().zip(&inputs).enumerate() {
            prop_assert_eq!(view.queue_offset, i as i64);
            prop_assert_eq!(view.physical_offset, position as i64);
            prop_assert_eq!(view.body, &input.body[..]);
            position += view.total_size;
        }
    }

    #[test]
    fn batches_round_trip(
        items in prop::collection::vec(
            (any::<i32>(),
             prop::collection::vec(any::<u8>(), 0..200),
             prop::collection::vec(any::<u8>(), 0..100)),
            0..20)
    ) {
        let items: Vec<BatchItem> = items
            .into_iter()
            .map(|(flag, body, properties)| BatchItem {
                flag,
                body: Bytes::from(body),
                properties: Bytes::from(properties),
            })
            .collect();
        let body = encode_batch(&items).unwrap();
        prop_assert_eq!(body.len(), items.iter().map(BatchItem::encoded_len).sum::<usize>());
        prop_assert_eq!(decode_batch(&body).unwrap(), items);
    }

    #[test]
    fn properties_round_trip(
        pairs in prop::collection::vec(("[^\x01\x02]{1,12}", "[^\x01\x02]{1,30}"), 0..12)
    ) {
        let properties: Properties = pairs.into_iter().collect();
        let bytes = properties.to_bytes();
        prop_assert_eq!(bytes.len(), properties.encoded_len());
        prop_assert_eq!(&Properties::decode(&bytes), &properties);
        prop_assert_eq!(&Properties::decode_str(&properties.to_encoded_string()), &properties);
    }

    #[test]
    fn offset_msg_ids_round_trip(host in socket_addr(), offset in any::<i64>()) {
        let id = offset_msg_id(host, offset);
        let v4 = canonical(host).is_ipv4();
        prop_assert_eq!(id.len(), if v4 { 32 } else { 56 });
        prop_assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)));
        for text in [id.clone(), id.to_lowercase()] {
            let decoded = decode_offset_msg_id(&text).unwrap();
            prop_assert_eq!(decoded.store_host, canonical(host));
            prop_assert_eq!(decoded.commit_log_offset, offset);
        }
    }

    #[test]
    fn unique_keys_round_trip(
        ip in ip(),
        pid in any::<u32>(),
        hash in any::<i32>(),
        now_ms in 0i64..8_000_000_000_000,
        count in 1usize..4,
    ) {
        let mut generator = UniqueKeyGenerator::new(ip, pid, hash);
        for counter in 0..count {
            let key = generator.next_key(now_ms);
            let parts = decode_unique_key(&key).unwrap();
            prop_assert_eq!(SocketAddr::new(parts.ip, 0), canonical(SocketAddr::new(ip, 0)));
            prop_assert_eq!(parts.pid, pid as u16);
            prop_assert_eq!(parts.instance_hash, hash);
            // Within the month: at most 31 days, as Java's int wraps it.
            prop_assert!((parts.month_ms as u32) < 31 * 86_400_000);
            prop_assert_eq!(parts.counter as usize, counter);
        }
    }
}

//! Tests of the compressed registration decoder against bodies built the way
//! a Java broker's `RegisterBrokerBody.encode(true)` builds them.

use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::*;

/// One section of the inflated body, before compression.
#[derive(Default)]
struct Plain(Vec<u8>);

impl Plain {
    fn int(mut self, n: i32) -> Self {
        self.0.extend_from_slice(&n.to_be_bytes());
        self
    }

    fn item(self, bytes: &[u8]) -> Self {
        let mut this = self.int(bytes.len() as i32);
        this.0.extend_from_slice(bytes);
        this
    }

    fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }

    fn deflate(&self) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(&self.0).unwrap();
        encoder.finish().unwrap()
    }
}

/// `TopicConfig.encode()`: fields joined by spaces, attributes JSON last.
fn topic_line(config: &TopicConfig) -> String {
    format!(
        "{} {} {} {} {} {}",
        config.topic_name,
        config.read_queue_nums,
        config.write_queue_nums,
        config.perm,
        config.topic_filter_type,
        serde_json::to_string(&config.attributes).unwrap()
    )
}

/// What a 5.x Java broker sends: version, topics, filter servers, mappings.
fn java_encode(body: &RegisterBrokerBody, mappings: &[&str]) -> Vec<u8> {
    let wrapper = &body.topic_config_serialize_wrapper;
    let mut plain = Plain::default()
        .item(&serde_json::to_vec(&wrapper.data_version).unwrap())
        .int(wrapper.topic_config_table.len() as i32);
    for config in wrapper.topic_config_table.values() {
        plain = plain.item(topic_line(config).as_bytes());
    }
    plain = plain
        .item(&serde_json::to_vec(&body.filter_server_list).unwrap())
        .int(mappings.len() as i32);
    for mapping in mappings {
        plain = plain.item(mapping.as_bytes());
    }
    plain.deflate()
}

fn sample_body() -> RegisterBrokerBody {
    let mut body = RegisterBrokerBody {
        filter_server_list: vec!["127.0.0.1:30000".into()],
        ..Default::default()
    };
    let wrapper = &mut body.topic_config_serialize_wrapper;
    wrapper.data_version = DataVersion {
        state_version: 3,
        timestamp: 1_700_000_000_123,
        counter: 42,
    };
    for (name, queues, perm, filter) in [
        ("TopicA", 8, 6, "SINGLE_TAG"),
        ("TopicB", 4, 4, "MULTI_TAG"),
        ("broker-a", 1, 7, "SINGLE_TAG"),
    ] {
        let mut config = TopicConfig {
            topic_name: name.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            topic_filter_type: filter.into(),
            ..TopicConfig::default()
        };
        if name == "TopicA" {
            config
                .attributes
                .insert("+message.type".into(), "NORMAL".into());
        }
        wrapper.topic_config_table.insert(name.into(), config);
    }
    body
}

#[test]
fn decodes_what_a_java_5_broker_sends() {
    let body = sample_body();
    let mapping = r#"{"topic":"TopicA","bname":"broker-a","epoch":1,"totalQueues":8}"#;
    let decoded = decode_compressed(&java_encode(&body, &[mapping])).unwrap();
    assert_eq!(decoded, body);
}

#[test]
fn decodes_a_4x_body_without_the_mapping_section() {
    let body = sample_body();
    let wrapper = &body.topic_config_serialize_wrapper;
    let mut plain = Plain::default()
        .item(&serde_json::to_vec(&wrapper.data_version).unwrap())
        .int(wrapper.topic_config_table.len() as i32);
    for config in wrapper.topic_config_table.values() {
        plain = plain.item(topic_line(config).as_bytes());
    }
    plain = plain.item(br#"["127.0.0.1:30000"]"#);
    assert_eq!(decode_compressed(&plain.deflate()).unwrap(), body);
}

#[test]
fn golden_bytes_decode() {
    // Inflated form spelled out byte by byte, as Java writes it.
    let version = br#"{"counter":1,"stateVersion":0,"timestamp":1000}"#;
    let topic = b"T1 2 3 6 SINGLE_TAG {}";
    let mut plain = Vec::new();
    plain.extend_from_slice(&(version.len() as i32).to_be_bytes());
    plain.extend_from_slice(version);
    plain.extend_from_slice(&[0, 0, 0, 1]);
    plain.extend_from_slice(&(topic.len() as i32).to_be_bytes());
    plain.extend_from_slice(topic);
    plain.extend_from_slice(&[0, 0, 0, 2]);
    plain.extend_from_slice(b"[]");
    plain.extend_from_slice(&[0, 0, 0, 0]);
    let decoded = decode_compressed(&Plain(plain).deflate()).unwrap();
    let wrapper = decoded.topic_config_serialize_wrapper;
    assert_eq!(wrapper.data_version.counter, 1);
    assert_eq!(wrapper.data_version.timestamp, 1000);
    let t1 = &wrapper.topic_config_table["T1"];
    assert_eq!(
        (t1.read_queue_nums, t1.write_queue_nums, t1.perm),
        (2, 3, 6)
    );
    assert_eq!(t1.topic_filter_type, "SINGLE_TAG");
    assert!(t1.attributes.is_empty() && !t1.order && t1.topic_sys_flag == 0);
    assert!(decoded.filter_server_list.is_empty());
}

#[test]
fn topic_line_variants() {
    // No attributes (Java writes a trailing separator when they are null).
    let config = parse_topic_line(b"T 1 1 6 SINGLE_TAG ").unwrap();
    assert!(config.attributes.is_empty());
    let config = parse_topic_line(b"T 1 1 6 SINGLE_TAG").unwrap();
    assert_eq!(config.topic_name, "T");
    // Unreadable attributes are dropped, as in Java.
    let config = parse_topic_line(b"T 1 1 6 SINGLE_TAG {oops").unwrap();
    assert!(config.attributes.is_empty());
    // Attributes with a space survive here.
    let config = parse_topic_line(br#"T 1 1 6 SINGLE_TAG {"a":"b c"}"#).unwrap();
    assert_eq!(config.attributes["a"], "b c");
}

#[test]
fn malformed_topic_lines_are_errors() {
    for line in [
        &b"T 1 1 6"[..],
        b"T x 1 6 SINGLE_TAG {}",
        b"T 1 1 99999999999 SINGLE_TAG {}",
        b"T 1 1 6 NO_TAG {}",
        b" 1 1 6 SINGLE_TAG {}",
        b"",
    ] {
        let error = parse_topic_line(line).unwrap_err();
        assert!(
            matches!(error, CompressedBodyError::TopicConfig { .. }),
            "{line:?}: {error}"
        );
    }
}

#[test]
fn not_zlib_is_an_inflate_error() {
    let error = decode_compressed(b"{\"not\":\"zlib\"}").unwrap_err();
    assert!(matches!(error, CompressedBodyError::Inflate(_)), "{error}");
    let mut truncated = java_encode(&sample_body(), &[]);
    truncated.truncate(truncated.len() / 2);
    assert!(decode_compressed(&truncated).is_err());
}

#[test]
fn framing_errors_are_typed() {
    let version = br#"{"counter":1}"#;
    let cases: Vec<(Plain, CompressedBodyError)> = vec![
        (
            Plain::default(),
            CompressedBodyError::Truncated("data version"),
        ),
        (
            Plain::default().int(-1),
            CompressedBodyError::BadLength {
                what: "data version",
                len: -1,
                max: ITEM_BYTES_MAX,
            },
        ),
        (
            Plain::default().int(100).raw(b"{}"),
            CompressedBodyError::Truncated("data version"),
        ),
        (
            Plain::default().item(b"\"v1\""),
            CompressedBodyError::DataVersion(String::new()),
        ),
        (
            Plain::default().item(version).int(i32::MAX),
            CompressedBodyError::BadCount {
                what: "topic",
                count: i32::MAX,
                max: TOPIC_COUNT_MAX,
            },
        ),
        (
            Plain::default()
                .item(version)
                .int(3)
                .item(b"T 1 1 6 SINGLE_TAG"),
            CompressedBodyError::Truncated("topic config"),
        ),
        (
            Plain::default().item(version).int(3).int(0),
            CompressedBodyError::Truncated("topic"),
        ),
        (
            Plain::default().item(version).int(0),
            CompressedBodyError::Truncated("filter server list"),
        ),
        (
            Plain::default().item(version).int(0).item(b"[]").int(-5),
            CompressedBodyError::BadCount {
                what: "topic queue mapping",
                count: -5,
                max: QUEUE_MAPPING_COUNT_MAX,
            },
        ),
        (
            Plain::default()
                .item(version)
                .int(0)
                .item(b"[]")
                .int(1)
                .int(50),
            CompressedBodyError::Truncated("topic queue mapping"),
        ),
    ];
    for (plain, expected) in cases {
        let error = decode_compressed(&plain.deflate())
            .map(|_| ())
            .expect_err(&expected.to_string());
        match (&error, &expected) {
            (CompressedBodyError::DataVersion(_), CompressedBodyError::DataVersion(_)) => {}
            _ => assert_eq!(error, expected),
        }
    }
}

#[test]
fn unreadable_filter_server_list_is_ignored_like_java() {
    let plain = Plain::default()
        .item(br#"{"counter":1}"#)
        .int(0)
        .item(b"{oops")
        .int(0);
    let decoded = decode_compressed(&plain.deflate()).unwrap();
    assert!(decoded.filter_server_list.is_empty());
}

#[test]
fn inflated_size_is_capped() {
    // A tiny stream that inflates past the cap (zeros compress ~1000:1).
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..(INFLATED_BYTES_MAX / zeros.len() + 1) {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 1024 * 1024);
    assert_eq!(
        decode_compressed(&bomb).unwrap_err(),
        CompressedBodyError::TooLarge
    );
}

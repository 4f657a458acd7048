//! Cost of one send's Remoting header on the JSON path: decoding a
//! Java-style SEND_MESSAGE_V2 request frame, reading its typed header, and
//! encoding the send's answer. A loop over one frame (the header stays in
//! cache, as it does after the broker's read), reporting ns per operation.
//!
//!   cargo run --release -p ferrocket-protocol --example json_header [-- --dump]
use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::header::{SendMessageRequestHeader, SendMessageRequestView};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::{ExtFields, RemotingCommand, SerializeType};

const ROUNDS: u32 = 2_000_000;

fn send_frame() -> Bytes {
    let mut properties = Properties::new();
    properties.insert("WAIT", "true");
    properties.insert("KEYS", "order-1234567");
    properties.insert("TAGS", "TagA");
    properties.insert("UNIQ_KEY", "7F00000100002A9F0000000000000001");
    let header = SendMessageRequestHeader {
        producer_group: "ProducerGroupName".into(),
        topic: "BenchTopic".into(),
        default_topic: Some("TBW102".into()),
        default_topic_queue_nums: Some(4),
        queue_id: Some(3),
        sys_flag: Some(0),
        born_timestamp: Some(1_764_800_000_000),
        flag: Some(0),
        properties: Some(properties.to_encoded_string()),
        reconsume_times: Some(0),
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: Some("broker-a".into()),
    };
    let mut request = RemotingCommand::request(310);
    request.ext_fields = header.to_ext();
    request.serialize_type = SerializeType::Json;
    request.body = Bytes::from(vec![b'x'; 1024]);
    let mut out = BytesMut::new();
    request.encode(&mut out);
    out.freeze()
}

fn time(name: &str, mut op: impl FnMut()) {
    for _ in 0..ROUNDS / 10 {
        op();
    }
    let start = Instant::now();
    for _ in 0..ROUNDS {
        op();
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
    println!("{name:>28}: {ns:7.1} ns");
}

fn main() {
    if std::env::args().any(|a| a == "--dump") {
        return dump();
    }
    let frame = send_frame();
    let command = RemotingCommand::decode(frame.clone()).expect("decodes");
    time("decode frame", || {
        black_box(RemotingCommand::decode(black_box(frame.clone())).ok());
    });
    time("typed send header, owned", || {
        black_box(SendMessageRequestHeader::from_ext(black_box(&command.ext_fields)).ok());
    });
    time("typed send header, borrowed", || {
        black_box(SendMessageRequestView::from_ext(black_box(&command.ext_fields)).ok());
    });
    let mut answer = RemotingCommand::response_to(&command, 0, None);
    let mut fields = ExtFields::new();
    fields.insert("msgId", "7F00000100002A9F00000000000A1B2C");
    fields.insert_int("queueId", 3);
    fields.insert_int("queueOffset", 123_456);
    fields.insert("MSG_REGION", "DefaultRegion");
    fields.insert("TRACE_ON", "true");
    answer.ext_fields = fields;
    let mut out = BytesMut::with_capacity(512);
    time("encode send answer", || {
        out.clear();
        black_box(&answer).encode(&mut out);
        black_box(&out);
    });
}
/// `--dump`: the header text of the frame measured.
fn dump() {
    let frame = send_frame();
    println!("{}", String::from_utf8_lossy(&frame[8..frame.len() - 1024]));
}

//! Malformed byte streams every server must survive: each case should get
//! REQUEST_CODE_NOT_SUPPORTED (or another error answer) or a closed
//! connection, never a crash or a hang.

use std::time::Duration;

use ferrocket_protocol::codes::response_code;

use super::remoting::Outcome;
use super::RemotingConn;

/// How long a server may take to answer or close after bad input.
pub const REJECT_TIMEOUT_MS: u64 = 10_000;

/// One bad input: a name, the bytes, and whether we then close our side.
pub struct BadInput {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub then_close: bool,
}

/// A frame with a JSON header of our choosing and no body.
pub fn frame_with_json_header(header: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(4 + header.len() as i32).to_be_bytes());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header);
    out
}

fn prefix_then(total: i32, marked: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&marked.to_be_bytes());
    out.extend_from_slice(rest);
    out
}

/// The framing-level cases (garbage, lengths, headers).
pub fn frame_cases() -> Vec<BadInput> {
    let case = |name, bytes: Vec<u8>| BadInput {
        name,
        bytes,
        then_close: false,
    };
    let mut truncated = 100i32.to_be_bytes().to_vec();
    truncated.extend_from_slice(&[0u8; 10]);
    vec![
        case(
            "an HTTP request",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        case(
            "random bytes",
            (0..=255u8).rev().cycle().take(4096).collect(),
        ),
        case("oversized length", vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4]),
        case("negative length", vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        case("length below the minimum", vec![0, 0, 0, 1, 0]),
        case("header length > frame", prefix_then(8, 1000, b"{}{}")),
        case(
            "invalid JSON header",
            frame_with_json_header(b"{\"code\": 105, \"opaque\": "),
        ),
        case(
            "JSON header that is not an object",
            frame_with_json_header(b"[1,2,3]"),
        ),
        case(
            "non-UTF-8 header",
            frame_with_json_header(&[0xff, 0xfe, 0xfd, 0x80]),
        ),
        case(
            "unknown serialize type",
            prefix_then(6, (7 << 24) | 2, b"{}"),
        ),
        case(
            "binary header cut short",
            prefix_then(7, (1 << 24) | 3, &[0, 105, 0]),
        ),
        BadInput {
            name: "a truncated frame, then end of stream",
            bytes: truncated,
            then_close: true,
        },
    ]
}

/// Sends `input` on a fresh connection to `addr`; panics unless the server
/// answers with one of `accepted_codes` or closes the connection.
pub fn assert_rejected(addr: &str, input: &BadInput, accepted_codes: &[i32]) {
    let mut conn = RemotingConn::connect(addr).unwrap();
    // The server may close before reading everything; that is fine.
    let _ = conn.send_raw(&input.bytes);
    if input.then_close {
        conn.shutdown_write();
    }
    match conn.read_outcome(Duration::from_millis(REJECT_TIMEOUT_MS)) {
        Outcome::Closed => {}
        Outcome::Response(r) if accepted_codes.contains(&r.code) => {}
        other => panic!(
            "{}: expected one of codes {accepted_codes:?} or a closed connection, got {other:?}",
            input.name
        ),
    }
}

/// What a name server may answer bad input with.
pub const NAMESRV_REJECT_CODES: &[i32] = &[response_code::REQUEST_CODE_NOT_SUPPORTED];

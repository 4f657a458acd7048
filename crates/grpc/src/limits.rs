//! The proxy's limits, with RocketMQ's proxy defaults (`ProxyConfig`).

use ferrocket_settings::{decl, invalid, parse_value, positive_count, Decl, Setting, Table};

/// Largest message body (`maxMessageSize`).
pub const BODY_BYTES_MAX: usize = 4 << 20;
/// Largest message group name (`maxMessageGroupSize`).
pub const MESSAGE_GROUP_BYTES_MAX: usize = 64;
/// Furthest delivery time ahead of now (`maxDelayTimeMills`: one day).
pub const DELAY_MS_MAX: i64 = 24 * 3600 * 1000;
/// Invisible time of a receive that asks for none (`defaultInvisibleTimeMills`).
pub const INVISIBLE_MS_DEFAULT: i64 = 60_000;
/// Shortest invisible time of a receive (`minInvisibleTimeMillsForRecv`).
pub const INVISIBLE_MS_MIN: i64 = 10_000;
/// Longest invisible time (`maxInvisibleTimeMills`: 12 hours).
pub const INVISIBLE_MS_MAX: i64 = 12 * 3600 * 1000;
/// Long polling of a receive is clamped to this range.
pub const LONG_POLL_MS_MIN: i64 = 5_000;
pub const LONG_POLL_MS_MAX: i64 = 20_000;
/// Messages one receive may ask for (one pop).
pub const RECEIVE_BATCH_MAX: i32 = 32;
/// Messages one send may carry.
pub const SEND_BATCH_MAX: usize = 1024;
/// Entries one ack may carry.
pub const ACK_ENTRIES_MAX: usize = 1024;
/// Largest gRPC message accepted (`grpcMaxInboundMessageSize`: 130 MiB).
pub const GRPC_MESSAGE_BYTES_MAX: usize = 130 << 20;
/// Client sessions (Telemetry streams) the proxy keeps.
pub const CLIENTS_MAX: usize = 100_000;

/// What one client may make the gRPC endpoint hold: connections, streams,
/// and the bytes its calls keep buffered. Their keys are declared once in
/// [`GRPC_SETTINGS`]; the broker (`enableProxy=true`) and `ferrocket
/// proxy --set` take the same keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrpcLimits {
    /// `grpcMaxConcurrentStreams`: SETTINGS_MAX_CONCURRENT_STREAMS of every
    /// connection; a stream past it is reset with REFUSED_STREAM.
    pub streams_per_connection: u32,
    /// `grpcConnectionsMax`: connections at once (in their opening or
    /// served); more are closed as they arrive.
    pub connections_max: usize,
    /// `grpcConnectionCallBytesMax`: bytes the calls of one connection may
    /// hold (their headers and the messages they announce); a call past it
    /// ends with RESOURCE_EXHAUSTED.
    pub connection_call_bytes_max: usize,
    /// `grpcCallBytesMax`: the same over all connections.
    pub call_bytes_max: usize,
    /// `grpcUnauthenticatedStreamsMax`: with ACL on, the calls at once of a
    /// connection that has not yet presented valid credentials.
    pub unauthenticated_streams_max: usize,
    /// `grpcUnauthenticatedCallBytesMax`: the bytes such a connection's calls
    /// may hold.
    pub unauthenticated_call_bytes_max: usize,
    /// `grpcRequestTimeSkewMs`: how far a signed call's `x-mq-date-time`
    /// may be from the endpoint's clock, either way, before it is refused
    /// (a captured call replayed later is refused); 0: not checked.
    pub request_time_skew_ms: u64,
}

impl Default for GrpcLimits {
    fn default() -> Self {
        GrpcLimits {
            streams_per_connection: 128,
            connections_max: 1_024,
            connection_call_bytes_max: 2 * GRPC_MESSAGE_BYTES_MAX,
            call_bytes_max: 1 << 30,
            unauthenticated_streams_max: 4,
            unauthenticated_call_bytes_max: 64 << 10,
            request_time_skew_ms: 15 * 60 * 1000,
        }
    }
}

/// The endpoint's limit keys, each declared once: the broker's file and
/// `--set`, `ferrocket proxy --set`, "did you mean", `broker --help` and
/// the README's table read it.
pub static GRPC_SETTINGS: Table<GrpcLimits> = Table {
    sections: &[&GRPC_LIMITS],
};

static GRPC_LIMITS: [Decl<GrpcLimits>; 7] = [
    decl!(
        "grpcMaxConcurrentStreams",
        "128",
        start,
        "streams per connection; one past it is reset with REFUSED_STREAM",
        |c, k, s| c.streams_per_connection = positive_u32(k, s)?
    ),
    decl!(
        "grpcConnectionsMax",
        "1024",
        start,
        "connections at once; more are closed as they arrive",
        |c, k, s| c.connections_max = positive_count(k, s)?
    ),
    decl!(
        "grpcConnectionCallBytesMax",
        "272629760 (2 × 130 MiB)",
        start,
        "bytes one connection's calls hold",
        |c, k, s| c.connection_call_bytes_max = positive_count(k, s)?
    ),
    decl!(
        "grpcCallBytesMax",
        "1073741824 (1 GiB)",
        start,
        "bytes all connections' calls hold",
        |c, k, s| c.call_bytes_max = positive_count(k, s)?
    ),
    decl!(
        "grpcUnauthenticatedStreamsMax",
        "4",
        start,
        "with ACL on, calls at once of a connection not yet authenticated",
        |c, k, s| c.unauthenticated_streams_max = positive_count(k, s)?
    ),
    decl!(
        "grpcUnauthenticatedCallBytesMax",
        "65536",
        start,
        "bytes such a connection's calls hold",
        |c, k, s| c.unauthenticated_call_bytes_max = positive_count(k, s)?
    ),
    decl!(
        "grpcRequestTimeSkewMs",
        "900000",
        start,
        "ms a signed call's x-mq-date-time may be from the clock (0: not checked)",
        |c, k, s| c.request_time_skew_ms = parse_value(k, s)?
    ),
];

/// A whole number from 1 to `u32::MAX`.
fn positive_u32(key: &str, setting: &Setting) -> Result<u32, String> {
    match parse_value::<u32>(key, setting)? {
        0 => Err(invalid(key, setting, "expected a whole number, 1 or more")),
        n => Ok(n),
    }
}

impl GrpcLimits {
    /// Applies one setting (`origin`: where it came from, for its error):
    /// `Ok(false)` for a key that is not one of these, an error for a
    /// value out of range.
    pub fn set(&mut self, key: &str, value: &str, origin: &str) -> Result<bool, String> {
        let setting = Setting::from_flag(value.to_string(), origin.into());
        GRPC_SETTINGS.apply(self, key, &setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_settings::readme_defaults;

    #[test]
    fn every_key_applies_and_bad_values_are_refused() {
        for key in GRPC_SETTINGS.keys() {
            let mut limits = GrpcLimits::default();
            assert_eq!(limits.set(key, "7", "t"), Ok(true), "{key}");
            assert_ne!(limits, GrpcLimits::default(), "{key} changed nothing");
            assert!(limits.set(key, "seven", "t").is_err(), "{key}");
        }
        let mut limits = GrpcLimits::default();
        let zero = limits.set(
            "grpcMaxConcurrentStreams",
            "0",
            "--set grpcMaxConcurrentStreams=0",
        );
        assert_eq!(
            zero,
            Err("--set grpcMaxConcurrentStreams=0: invalid value `0` for \
                 grpcMaxConcurrentStreams: expected a whole number, 1 or more"
                .into())
        );
        assert!(limits.set("grpcConnectionsMax", "0", "t").is_err());
        assert_eq!(limits.set("grpcRequestTimeSkewMs", "0", "t"), Ok(true));
        assert_eq!(limits.set("listenPort", "1", "t"), Ok(false));
    }

    /// Each declared default is `GrpcLimits::default()`'s, and the
    /// README's table shows it.
    #[test]
    fn the_declared_defaults_are_the_configs_and_the_readmes() {
        for decl in GRPC_SETTINGS.decls() {
            let value = decl.default.split(' ').next().unwrap_or_default();
            let mut limits = GrpcLimits::default();
            assert_eq!(limits.set(decl.name, value, "t"), Ok(true));
            assert_eq!(limits, GrpcLimits::default(), "{} = {value}", decl.name);
        }
        let readme = include_str!("../../../README.md");
        let mut rows = 0;
        for (key, default) in readme_defaults(readme) {
            if let Some(decl) = GRPC_SETTINGS.find(&key) {
                assert_eq!(default, decl.default, "README default of {key}");
                rows += 1;
            }
        }
        assert_eq!(rows, GRPC_LIMITS.len(), "a README row per key");
    }
}

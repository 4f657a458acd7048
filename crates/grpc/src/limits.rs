//! The proxy's limits, with RocketMQ's proxy defaults (`ProxyConfig`).

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
/// and the bytes its calls keep buffered. Declared once here with their
/// keys and defaults; the broker (`enableProxy=true`) and `ferrocket
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

impl GrpcLimits {
    /// The keys [`GrpcLimits::set`] takes.
    pub const KEYS: &'static [&'static str] = &[
        "grpcMaxConcurrentStreams",
        "grpcConnectionsMax",
        "grpcConnectionCallBytesMax",
        "grpcCallBytesMax",
        "grpcUnauthenticatedStreamsMax",
        "grpcUnauthenticatedCallBytesMax",
        "grpcRequestTimeSkewMs",
    ];

    /// Applies one setting: `Ok(false)` for a key that is not one of
    /// these, an error for a value out of range.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let number = || -> Result<u64, String> {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("{key}={value}: expected a whole number"))
        };
        let positive = || -> Result<u64, String> {
            match number()? {
                0 => Err(format!("{key}={value}: expected at least 1")),
                n => Ok(n),
            }
        };
        let size = |n: u64| usize::try_from(n).map_err(|_| format!("{key}={value}: too large"));
        match key {
            "grpcMaxConcurrentStreams" => {
                self.streams_per_connection =
                    u32::try_from(positive()?).map_err(|_| format!("{key}={value}: too large"))?
            }
            "grpcConnectionsMax" => self.connections_max = size(positive()?)?,
            "grpcConnectionCallBytesMax" => self.connection_call_bytes_max = size(positive()?)?,
            "grpcCallBytesMax" => self.call_bytes_max = size(positive()?)?,
            "grpcUnauthenticatedStreamsMax" => {
                self.unauthenticated_streams_max = size(positive()?)?
            }
            "grpcUnauthenticatedCallBytesMax" => {
                self.unauthenticated_call_bytes_max = size(positive()?)?
            }
            "grpcRequestTimeSkewMs" => self.request_time_skew_ms = number()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::GrpcLimits;

    #[test]
    fn every_key_applies_and_bad_values_are_refused() {
        for key in GrpcLimits::KEYS {
            let mut limits = GrpcLimits::default();
            assert_eq!(limits.set(key, "7"), Ok(true), "{key}");
            assert_ne!(limits, GrpcLimits::default(), "{key} changed nothing");
            assert!(limits.set(key, "seven").is_err(), "{key}");
        }
        let mut limits = GrpcLimits::default();
        assert!(limits.set("grpcMaxConcurrentStreams", "0").is_err());
        assert_eq!(limits.set("grpcRequestTimeSkewMs", "0"), Ok(true));
        assert_eq!(limits.set("listenPort", "1"), Ok(false));
    }
}

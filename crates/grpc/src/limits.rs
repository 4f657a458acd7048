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

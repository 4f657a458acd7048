//! The Remoting server's limits (`ServerLimits`), keys of every server
//! that runs one: declared here once, for a config holding them in a
//! field.

/// The declarations of the server limits' keys, for a config type whose
/// `$field` is a `ServerLimits`: `server_limit_settings!(limits)`.
#[macro_export]
macro_rules! server_limit_settings {
    ($field:ident) => {
        &[
            $crate::decl!(
                "serverChannelMaxIdleTimeSeconds" | "channelMaxIdleTimeSeconds",
                "120",
                start,
                "seconds a connection with nothing in flight may stay silent",
                |c, k, s| c.$field.idle_timeout_ms =
                    $crate::settings::positive(k, s)?.saturating_mul(1000),
            ),
            $crate::decl!(
                "idleTimeoutMs",
                "120000",
                start,
                "ms a connection with nothing in flight may stay silent (Ferrocket key)",
                |c, k, s| c.$field.idle_timeout_ms = $crate::settings::positive(k, s)?,
                |c| c.$field.idle_timeout_ms.to_string(),
            ),
            $crate::decl!(
                "partialFrameTimeoutMs",
                "120000",
                start,
                "ms a frame may take to arrive whole before the connection closes",
                |c, k, s| c.$field.partial_frame_timeout_ms = $crate::settings::positive(k, s)?,
            ),
            $crate::decl!(
                "writeStallTimeoutMs",
                "60000",
                start,
                "ms a socket may take none of our output before it is closed",
                |c, k, s| c.$field.write_stall_timeout_ms = $crate::settings::positive(k, s)?,
            ),
            $crate::decl!(
                "connectionInflightBytesMax",
                "67108864",
                start,
                "request bytes in hand per connection before reading pauses",
                |c, k, s| c.$field.inflight_bytes_max = $crate::settings::positive_count(k, s)?,
            ),
            $crate::decl!(
                "connectionWriteQueueBytesMax",
                "67108864",
                start,
                "bytes queued for writing per connection before reading pauses",
                |c, k, s| c.$field.write_queue_bytes_max = $crate::settings::positive_count(k, s)?,
            ),
            $crate::decl!(
                "shardHeldBytesMax",
                "1073741824",
                start,
                "bytes one shard holds for all its connections before reading pauses",
                |c, k, s| c.$field.shard_bytes_max = $crate::settings::positive_count(k, s)?,
            ),
            $crate::decl!(
                "serverConnectionsMax",
                "10000",
                start,
                "connections per shard; more are accepted and closed at once",
                |c, k, s| c.$field.connections_max = $crate::settings::positive_count(k, s)?,
                |c| c.$field.connections_max.to_string(),
            ),
        ]
    };
}

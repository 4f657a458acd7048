//! Ferrocket's runtime: glommio executors (one per shard, pinned to a core),
//! cross-shard routing, and the Remoting server loop that both the name
//! server and the broker run on each of their executors.
//!
//! `server` accepts connections and runs the per-connection read/dispatch/
//! write loop; `shard` starts the pinned executors and carries typed calls
//! between them (the mesh) and holds the single-writer tables
//! (`Master`/`Replica`); `task_set` names each shard's background tasks and
//! bounds their shutdown; `sync` has the executor-local wake and stop
//! primitives; `settings` the declared-once settings every server's keys
//! use, with `suggest` for "did you mean"; `lock` the one-process-per-data-
//! directory lock. Depends on `ferrocket-protocol` and `ferrocket-tls`.

pub mod lock;
pub mod server;
/// Declared settings (`ferrocket_settings`), with the server limits'
/// declarations (`server_limit_settings!`).
pub mod settings {
    pub use ferrocket_settings::*;
}
pub use ferrocket_settings::decl;
mod server_limits;
pub mod shard;
pub use ferrocket_settings::suggest;
pub mod sync;
pub mod task_set;

//! Test helpers shared by the workspace's test suites (a dev-dependency
//! only; nothing here ships):
//!
//! - [`server`]: a fake Remoting server on tokio, scripted step by step or
//!   answering every request with a closure;
//! - [`broker`]: an in-memory fake broker and name server on top of it.

pub mod broker;
pub mod server;

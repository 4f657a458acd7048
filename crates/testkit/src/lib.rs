//! Test helpers shared by the workspace's test suites (a dev-dependency
//! only; nothing here ships):
//!
//! - [`remoting`]: a blocking Remoting client over `std::net`, independent
//!   of `ferrocket-client`, for tests that talk to a real server (and send
//!   it bad bytes);
//! - [`server`]: a fake Remoting server on tokio, scripted step by step or
//!   answering every request with a closure;
//! - [`broker`]: an in-memory fake broker and name server on top of it;
//! - [`pop`]: pop, the Java client's receipt handle, and ack.

pub mod broker;
pub mod pop;
pub mod remoting;
pub mod server;

//! Ferrocket's wire and disk codec for Apache RocketMQ compatibility.
//!
//! Owns: Remoting frames (JSON and ROCKETMQ binary headers), request and
//! response codes, typed request/response headers, the stored message record
//! layout (also the pull response body), batch bodies, message properties,
//! offset message ids and unique keys, and the JSON bodies exchanged with the
//! name server. It does no I/O and has no async code, so every other crate,
//! on any core, can use it; malformed input yields a typed [`ProtocolError`],
//! never a panic.

pub mod batch;
pub mod body;
pub mod codes;
pub mod error;
pub mod ext;
pub mod fastjson;
pub mod frame;
pub mod ha;
pub mod header;
pub mod limits;
pub mod lite;
pub mod message_id;
pub mod pop;
pub mod properties;
pub mod recall;
pub mod record;
pub mod version;

pub use error::ProtocolError;
pub use ext::ExtFields;
pub use frame::{FrameDecoder, LanguageCode, RemotingCommand, SerializeType};

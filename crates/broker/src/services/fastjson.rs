//! Java's fastjson writes maps with integer keys unquoted (`{1:5}`); the
//! rewrite lives in the protocol crate, shared with the store's config files.

pub(crate) use ferrocket_protocol::fastjson::quote_integer_keys;

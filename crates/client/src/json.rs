//! Reading JSON bodies from Java servers. fastjson, which the Java name
//! server uses for some bodies (GET_BROKER_CLUSTER_INFO, and routes for old
//! client versions), writes maps with integer keys unquoted
//! (`"brokerAddrs":{0:"127.0.0.1:10911"}`), which is not JSON. Bodies are
//! parsed as JSON first and, only if that fails, again after quoting such
//! keys.

use ferrocket_protocol::body::decode_json;
use ferrocket_protocol::ProtocolError;
use serde::de::DeserializeOwned;

use crate::object_keys::rewrite_keys;

/// Decodes a JSON body, accepting fastjson's unquoted integer map keys.
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ProtocolError> {
    match decode_json(body) {
        Ok(value) => Ok(value),
        Err(first) => match quote_integer_keys(body) {
            Some(fixed) => decode_json(&fixed).map_err(|_| first),
            None => Err(first),
        },
    }
}

/// Rewrites `{0:` / `,12 :` (outside strings) as `{"0":` / `,"12" :`.
/// Returns `None` when there was nothing to rewrite.
fn quote_integer_keys(body: &[u8]) -> Option<Vec<u8>> {
    rewrite_keys(body, |body, start| {
        if !(body[start].is_ascii_digit() || body[start] == b'-') {
            return None;
        }
        let mut end = start + 1;
        while end < body.len() && body[end].is_ascii_digit() {
            end += 1;
        }
        let mut after = end;
        while after < body.len() && body[after].is_ascii_whitespace() {
            after += 1;
        }
        if body.get(after) != Some(&b':') {
            return None;
        }
        let mut quoted = Vec::with_capacity(end - start + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&body[start..end]);
        quoted.push(b'"');
        Some((end, quoted))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::body::ClusterInfo;

    #[test]
    fn fastjson_integer_keys_are_accepted() {
        let body = br#"{"brokerAddrTable":{"b":{"brokerAddrs":{0:"127.0.0.1:10911", 1 :"x:1"},
            "brokerName":"b","cluster":"c"}},"clusterAddrTable":{"c":["b"]}}"#;
        let info: ClusterInfo = decode_body(body).unwrap();
        let broker = &info.broker_addr_table["b"];
        assert_eq!(broker.master_addr(), Some("127.0.0.1:10911"));
        assert_eq!(broker.broker_addrs[&1], "x:1");
    }

    #[test]
    fn strings_and_values_are_left_alone() {
        assert_eq!(quote_integer_keys(br#"{"a":[1,2],"b":"{3:4}"}"#), None);
        let fixed = quote_integer_keys(br#"{"m":{7:"{8:9}"}}"#).unwrap();
        assert_eq!(fixed, br#"{"m":{"7":"{8:9}"}}"#.to_vec());
        assert!(decode_body::<ClusterInfo>(b"{not json").is_err());
    }
}

//! The request signature (Java's `AclUtils.combineRequestContent` and
//! `AclSigner`): every header field but `Signature`, sorted by name, their
//! values concatenated with nothing between, then the body; HMAC-SHA1 with
//! the account's secret key; standard Base64 with padding. The C++ client
//! signs the same way (its `OnsChannel` field is one more value).

use base64::Engine;
use ferrocket_protocol::RemotingCommand;
use hmac::{KeyInit, Mac};

/// The field naming the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// The field carrying the signature.
pub const SIGNATURE: &str = "Signature";
/// Left out of the content for clients of version V4_9_3 (399) or older,
/// which did not sign it (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";
const UNSIGNED_QUERY_FLAG_VERSION_MAX: i32 = 399;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// The signed header fields, sorted by name.
fn signed_fields(request: &RemotingCommand) -> Vec<(&str, &str)> {
    let skip_flag = request.version <= UNSIGNED_QUERY_FLAG_VERSION_MAX;
    let mut fields: Vec<(&str, &str)> = request
        .ext_fields
        .iter()
        .filter(|(key, _)| *key != SIGNATURE && !(skip_flag && *key == UNIQUE_MSG_QUERY_FLAG))
        .collect();
    fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
    fields
}

/// The bytes a request's signature covers.
pub fn signed_content(request: &RemotingCommand) -> Vec<u8> {
    let fields = signed_fields(request);
    let text_bytes: usize = fields.iter().map(|(_, v)| v.len()).sum();
    let mut content = Vec::with_capacity(text_bytes + request.body.len());
    for (_, value) in fields {
        content.extend_from_slice(value.as_bytes());
    }
    content.extend_from_slice(&request.body);
    content
}

/// The signature of `request` under `secret_key`, fed to the MAC piece by
/// piece: no copy of the header values or the body.
fn request_signature(request: &RemotingCommand, secret_key: &str) -> String {
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("any key length");
    for (_, value) in signed_fields(request) {
        mac.update(value.as_bytes());
    }
    mac.update(&request.body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Base64 of HMAC-SHA1(`secret_key`, `content`).
pub fn sign(content: &[u8], secret_key: &str) -> String {
    // HMAC takes a key of any length.
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("any key length");
    mac.update(content);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Signs `request` as a client does: adds `AccessKey`, then `Signature`
/// over everything else.
pub fn sign_request(request: &mut RemotingCommand, access_key: &str, secret_key: &str) {
    request.ext_fields.insert(ACCESS_KEY, access_key);
    let signature = sign(&signed_content(request), secret_key);
    request.ext_fields.insert(SIGNATURE, signature);
}

/// Whether `signature` is `request`'s under `secret_key`, compared in
/// constant time.
pub(crate) fn verify(request: &RemotingCommand, secret_key: &str, signature: &str) -> bool {
    let expected = request_signature(request, secret_key);
    let (a, b) = (expected.as_bytes(), signature.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn hmac_sha1_base64_matches_the_published_vector() {
        // RFC 2202 style check: HMAC-SHA1("key", "The quick brown fox ...").
        let signature = sign(b"The quick brown fox jumps over the lazy dog", "key");
        assert_eq!(signature, "3nybhbi3iqa8ino29wqQcBydtNk=");
    }

    #[test]
    fn content_is_sorted_values_then_body_without_the_signature() {
        let mut request = RemotingCommand::request(310).with_body(Bytes::from_static(b"BODY"));
        request.ext_fields.insert("b", "TopicA");
        request.ext_fields.insert("a", "PG");
        request.ext_fields.insert("OnsChannel", "ALIYUN");
        request.version = 400;
        request.ext_fields.insert(UNIQUE_MSG_QUERY_FLAG, "true");
        sign_request(&mut request, "AK1234567", "SK1234567");
        // Uppercase sorts first: AccessKey, OnsChannel, _UNIQUE..., a, b.
        let content = signed_content(&request);
        assert_eq!(content, b"AK1234567ALIYUNtruePGTopicABODY");
        let signature = request.ext_fields.get(SIGNATURE).unwrap();
        assert_eq!(sign(&content, "SK1234567"), signature);
        assert!(verify(&request, "SK1234567", signature));
        assert!(!verify(&request, "SK7654321", signature));
        request.version = 399;
        assert_eq!(signed_content(&request), b"AK1234567ALIYUNPGTopicABODY");
    }
}

//! What the first bytes of a connection say. A TLS client opens with a
//! handshake record (first byte 0x16, as Java's `TlsModeHandler` tests);
//! a Remoting frame opens with its 4-byte length, whose first byte is 0
//! for every frame a server accepts. Over TLS, a gRPC client and a
//! Remoting client are told apart by the ALPN protocols of the ClientHello
//! (gRPC asks for `h2`), read in plaintext before the handshake.

/// The first byte of a TLS handshake record.
pub const TLS_HANDSHAKE_BYTE: u8 = 0x16;
/// Most bytes of a ClientHello looked at: one whole TLS record.
pub const CLIENT_HELLO_BYTES_MAX: usize = RECORD_HEADER_BYTES + RECORD_BYTES_MAX;

const RECORD_HEADER_BYTES: usize = 5;
const RECORD_BYTES_MAX: usize = 16 * 1024;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
const EXTENSION_ALPN: u16 = 16;

/// What a ClientHello asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloAlpn {
    /// The first record is not all here yet: this many bytes are needed.
    NeedBytes(usize),
    /// HTTP/2 is among the protocols asked for (a gRPC client).
    H2,
    /// No `h2` (a Remoting client), or a hello this test cannot read (the
    /// handshake then decides).
    Other,
}

/// Reads the ALPN protocols of the ClientHello at the start of `bytes`.
pub fn client_hello_alpn(bytes: &[u8]) -> HelloAlpn {
    if bytes.len() < RECORD_HEADER_BYTES {
        return HelloAlpn::NeedBytes(RECORD_HEADER_BYTES);
    }
    if bytes[0] != TLS_HANDSHAKE_BYTE {
        return HelloAlpn::Other;
    }
    let record_len = usize::from(u16::from_be_bytes([bytes[3], bytes[4]]));
    if record_len > RECORD_BYTES_MAX {
        return HelloAlpn::Other;
    }
    let total = RECORD_HEADER_BYTES + record_len;
    if bytes.len() < total {
        return HelloAlpn::NeedBytes(total);
    }
    match alpn_offers_h2(&bytes[RECORD_HEADER_BYTES..total]) {
        Some(true) => HelloAlpn::H2,
        _ => HelloAlpn::Other,
    }
}

/// `None`: not a ClientHello this can read (truncated to the first record,
/// say).
fn alpn_offers_h2(record: &[u8]) -> Option<bool> {
    let mut r = Reader(record);
    if r.u8()? != HANDSHAKE_CLIENT_HELLO {
        return None;
    }
    let body_len = r.u24()?;
    let mut hello = Reader(r.take(body_len)?);
    hello.take(2 + 32)?; // legacy version, random
    let session_id = usize::from(hello.u8()?);
    hello.take(session_id)?;
    let suites = hello.u16()?;
    hello.take(suites)?;
    let compressions = usize::from(hello.u8()?);
    hello.take(compressions)?;
    if hello.0.is_empty() {
        return Some(false);
    }
    let extensions_len = hello.u16()?;
    let mut extensions = Reader(hello.take(extensions_len)?);
    while !extensions.0.is_empty() {
        let kind = u16::try_from(extensions.u16()?).ok()?;
        let len = extensions.u16()?;
        let data = extensions.take(len)?;
        if kind == EXTENSION_ALPN {
            return Some(names_h2(data));
        }
    }
    Some(false)
}

fn names_h2(data: &[u8]) -> bool {
    let mut r = Reader(data);
    let Some(list_len) = r.u16() else {
        return false;
    };
    let Some(list) = r.take(list_len) else {
        return false;
    };
    let mut names = Reader(list);
    while let Some(len) = names.u8() {
        match names.take(usize::from(len)) {
            Some(b"h2") => return true,
            Some(_) => {}
            None => return false,
        }
    }
    false
}

/// A bounds-checked cursor.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn u24(&mut self) -> Option<usize> {
        self.take(3)
            .map(|b| (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The first record a rustls client sends asking for `alpn`.
    fn hello(alpn: &[&[u8]]) -> Vec<u8> {
        let settings = crate::TlsSettings::default();
        let config: Arc<rustls::ClientConfig> = crate::client_config(&settings, alpn).unwrap();
        let name = crate::server_name("127.0.0.1:1".parse().unwrap());
        let mut conn = rustls::ClientConnection::new(config, name).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    #[test]
    fn grpc_and_remoting_hellos_are_told_apart() {
        let grpc = hello(&[b"h2"]);
        assert_eq!(client_hello_alpn(&grpc), HelloAlpn::H2);
        let both = hello(&[b"grpc-exp", b"h2"]);
        assert_eq!(client_hello_alpn(&both), HelloAlpn::H2);
        assert_eq!(client_hello_alpn(&hello(&[])), HelloAlpn::Other);
        assert_eq!(client_hello_alpn(&hello(&[b"http/1.1"])), HelloAlpn::Other);
    }

    #[test]
    fn a_partial_hello_asks_for_its_whole_record() {
        let grpc = hello(&[b"h2"]);
        assert_eq!(client_hello_alpn(&grpc[..3]), HelloAlpn::NeedBytes(5));
        assert_eq!(
            client_hello_alpn(&grpc[..40]),
            HelloAlpn::NeedBytes(grpc.len())
        );
        assert_eq!(client_hello_alpn(&[0, 0, 0, 20, 0]), HelloAlpn::Other);
    }

    #[test]
    fn garbage_after_a_handshake_byte_is_not_h2() {
        let mut bytes = vec![TLS_HANDSHAKE_BYTE, 3, 1, 0, 8];
        bytes.extend_from_slice(&[1, 0, 0, 200, 1, 2, 3, 4]);
        assert_eq!(client_hello_alpn(&bytes), HelloAlpn::Other);
        for cut in 0..hello(&[b"h2"]).len() {
            // Every truncation of the body inside one record stays readable.
            let mut h = hello(&[b"h2"]);
            h.truncate(cut);
            let _ = client_hello_alpn(&h);
        }
    }
}

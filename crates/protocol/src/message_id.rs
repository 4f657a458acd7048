//! Message ids.
//!
//! - Offset message id (what a send returns as `msgId`, Java
//!   `MessageDecoder.createMessageId`): uppercase hex of the store host's
//!   address (4 or 16 bytes), its port (i32) and the CommitLog offset (i64),
//!   32 or 56 characters.
//! - Unique key (`UNIQ_KEY`, Java `MessageClientIDSetter`): uppercase hex of
//!   the client address (4 or 16 bytes), process id (u16), a per-instance
//!   hash (i32), milliseconds since the start of the month (i32) and a
//!   counter (u16), 32 or 56 characters.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::ProtocolError;

/// Hex characters of an offset message id with an IPv4 store host.
pub const OFFSET_MSG_ID_V4_CHARS: usize = 32;
/// Hex characters of an offset message id with an IPv6 store host.
pub const OFFSET_MSG_ID_V6_CHARS: usize = 56;
/// Hex characters of a unique key made on an IPv4 host.
pub const UNIQUE_KEY_V4_CHARS: usize = 32;
/// Hex characters of a unique key made on an IPv6 host.
pub const UNIQUE_KEY_V6_CHARS: usize = 56;
/// Clock steps back smaller than this are written as 0 (Java: NTP slew).
const CLOCK_STEP_BACK_TOLERATED_MS: i32 = 1_000_000;

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn push_hex(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        out.push(HEX_UPPER[(byte >> 4) as usize] as char);
        out.push(HEX_UPPER[(byte & 0x0F) as usize] as char);
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex (either case) of an even length.
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let pairs = text.as_bytes().chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return None;
    }
    pairs
        .map(|pair| Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?))
        .collect()
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.octets().to_vec(),
            None => v6.octets().to_vec(),
        },
    }
}

fn ip_from(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return Some(IpAddr::V4(Ipv4Addr::from(v4)));
    }
    <[u8; 16]>::try_from(bytes)
        .ok()
        .map(|v6| IpAddr::V6(Ipv6Addr::from(v6)))
}

fn be_i32(bytes: &[u8]) -> i32 {
    let mut out = [0u8; 4];
    out.copy_from_slice(&bytes[..4]);
    i32::from_be_bytes(out)
}

/// The offset message id of a record stored at `commit_log_offset` by
/// `store_host`. IPv4-mapped IPv6 hosts count as IPv4.
pub fn offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> String {
    let ip = ip_bytes(store_host.ip());
    let mut raw = Vec::with_capacity(ip.len() + 12);
    raw.extend_from_slice(&ip);
    raw.extend_from_slice(&(store_host.port() as i32).to_be_bytes());
    raw.extend_from_slice(&commit_log_offset.to_be_bytes());
    let mut out = String::with_capacity(raw.len() * 2);
    push_hex(&mut out, &raw);
    out
}

/// A decoded offset message id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetMsgId {
    pub store_host: SocketAddr,
    pub commit_log_offset: i64,
}

/// Parses an offset message id (hex in either case, 32 or 56 characters).
pub fn decode_offset_msg_id(id: &str) -> Result<OffsetMsgId, ProtocolError> {
    let invalid = || ProtocolError::MessageId(id.chars().take(64).collect());
    let ip_len = match id.len() {
        OFFSET_MSG_ID_V4_CHARS => 4,
        OFFSET_MSG_ID_V6_CHARS => 16,
        _ => return Err(invalid()),
    };
    let raw = parse_hex(id).ok_or_else(invalid)?;
    let ip = ip_from(&raw[..ip_len]).ok_or_else(invalid)?;
    let port = u16::try_from(be_i32(&raw[ip_len..])).map_err(|_| invalid())?;
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&raw[ip_len + 4..ip_len + 12]);
    Ok(OffsetMsgId {
        store_host: SocketAddr::new(ip, port),
        commit_log_offset: i64::from_be_bytes(offset),
    })
}

/// The parts of a unique key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqueKeyParts {
    pub ip: IpAddr,
    pub pid: u16,
    pub instance_hash: i32,
    /// Milliseconds since the start of the month the key was made in,
    /// wrapped to an i32 as Java does (negative after about 24.8 days).
    pub month_ms: i32,
    pub counter: u16,
}

/// Parses a unique key (hex in either case, 32 or 56 characters).
pub fn decode_unique_key(key: &str) -> Result<UniqueKeyParts, ProtocolError> {
    let invalid = || ProtocolError::MessageId(key.chars().take(64).collect());
    let ip_len = match key.len() {
        UNIQUE_KEY_V4_CHARS => 4,
        UNIQUE_KEY_V6_CHARS => 16,
        _ => return Err(invalid()),
    };
    let raw = parse_hex(key).ok_or_else(invalid)?;
    let ip = ip_from(&raw[..ip_len]).ok_or_else(invalid)?;
    let rest = &raw[ip_len..];
    Ok(UniqueKeyParts {
        ip,
        pid: u16::from_be_bytes([rest[0], rest[1]]),
        instance_hash: be_i32(&rest[2..]),
        month_ms: be_i32(&rest[6..]),
        counter: u16::from_be_bytes([rest[10], rest[11]]),
    })
}

/// Makes unique keys in the Java client's format. One per producer (or per
/// shard); not shared between threads.
#[derive(Debug, Clone)]
pub struct UniqueKeyGenerator {
    /// Hex of address, pid and instance hash.
    prefix: String,
    month_start_ms: i64,
    next_month_start_ms: i64,
    counter: u16,
}

impl UniqueKeyGenerator {
    /// `pid` is truncated to 16 bits as Java does; `instance_hash` stands in
    /// for Java's class-loader hash code (any per-process random value).
    pub fn new(ip: IpAddr, pid: u32, instance_hash: i32) -> Self {
        let mut raw = ip_bytes(ip);
        raw.extend_from_slice(&(pid as u16).to_be_bytes());
        raw.extend_from_slice(&instance_hash.to_be_bytes());
        let mut prefix = String::with_capacity(UNIQUE_KEY_V6_CHARS);
        push_hex(&mut prefix, &raw);
        Self {
            prefix,
            month_start_ms: 0,
            next_month_start_ms: i64::MIN,
            counter: 0,
        }
    }

    /// The next key, `now_ms` being wall-clock milliseconds since the epoch.
    /// Months are counted in UTC (Java uses the local time zone).
    pub fn next_key(&mut self, now_ms: i64) -> String {
        if now_ms >= self.next_month_start_ms {
            let (start, next) = month_bounds_ms(now_ms);
            self.month_start_ms = start;
            self.next_month_start_ms = next;
        }
        let mut diff = now_ms.wrapping_sub(self.month_start_ms) as i32;
        if diff < 0 && diff > -CLOCK_STEP_BACK_TOLERATED_MS {
            diff = 0;
        }
        let counter = self.counter;
        self.counter = self.counter.wrapping_add(1);
        let mut key = String::with_capacity(self.prefix.len() + 12);
        key.push_str(&self.prefix);
        push_hex(&mut key, &diff.to_be_bytes());
        push_hex(&mut key, &counter.to_be_bytes());
        key
    }
}

const DAY_MS: i64 = 86_400_000;

/// Start of the UTC month holding `now_ms`, and of the month after.
fn month_bounds_ms(now_ms: i64) -> (i64, i64) {
    let (year, month, _) = civil_from_days(now_ms.div_euclid(DAY_MS));
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (
        days_from_civil(year, month, 1) * DAY_MS,
        days_from_civil(next_year, next_month, 1) * DAY_MS,
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's method).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        // 2024-02-15T12:00:00Z
        let (start, next) = month_bounds_ms(1_707_998_400_000);
        assert_eq!(start, 1_706_745_600_000); // 2024-02-01
        assert_eq!(next, 1_709_251_200_000); // 2024-03-01
        let (start, next) = month_bounds_ms(1_703_980_800_000); // 2023-12-31
        assert_eq!(start, 1_701_388_800_000); // 2023-12-01
        assert_eq!(next, 1_704_067_200_000); // 2024-01-01
    }

    #[test]
    fn unique_keys() {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let mut generator = UniqueKeyGenerator::new(ip, 0x1_2345, -2);
        let now = 1_706_745_600_000 + 0x0102_0304; // 2024-02-01 + diff
        let first = generator.next_key(now);
        assert_eq!(
            first,
            "0A000001_2345_FFFFFFFE_01020304_0000".replace('_', "")
        );
        let second = generator.next_key(now);
        assert!(second.ends_with("0001"));
        let parts = decode_unique_key(&second.to_lowercase()).unwrap();
        assert_eq!(parts.ip, ip);
        assert_eq!(parts.pid, 0x2345);
        assert_eq!(parts.instance_hash, -2);
        assert_eq!(parts.month_ms, 0x0102_0304);
        assert_eq!(parts.counter, 1);
        // Past about 24.8 days the difference wraps as Java's int cast does.
        let day_25 = 1_706_745_600_000 + 25 * 86_400_000;
        let wrapped = decode_unique_key(&generator.next_key(day_25)).unwrap();
        assert_eq!(wrapped.month_ms, (25i64 * 86_400_000) as i32);
        assert!(wrapped.month_ms < 0);
        // A small step back in time reads as 0.
        assert!(generator
            .next_key(1_706_745_600_000 - 5)
            .contains("000000000003"));
        let v6 = UniqueKeyGenerator::new("fe80::1".parse().unwrap(), 1, 1).next_key(now);
        assert_eq!(v6.len(), UNIQUE_KEY_V6_CHARS);
        assert!(decode_unique_key("XYZ").is_err());
    }

    #[test]
    fn offset_ids() {
        let host: SocketAddr = "192.168.0.1:10911".parse().unwrap();
        let id = offset_msg_id(host, 0x1234);
        assert_eq!(id, "C0A8000100002A9F0000000000001234");
        let decoded = decode_offset_msg_id(&id.to_lowercase()).unwrap();
        assert_eq!(decoded.store_host, host);
        assert_eq!(decoded.commit_log_offset, 0x1234);
        let mapped: SocketAddr = "[::ffff:192.168.0.1]:10911".parse().unwrap();
        assert_eq!(offset_msg_id(mapped, 0x1234), id);
        assert!(decode_offset_msg_id("C0A8000100002A9F000000000000123").is_err());
        assert!(decode_offset_msg_id("C0A80001FFFFFFFF0000000000001234").is_err());
        assert!(decode_offset_msg_id("G0A8000100002A9F0000000000001234").is_err());
    }
}

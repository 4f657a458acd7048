//! White-listed client addresses, in the forms RocketMQ accepts
//! (`RemoteAddressStrategyFactory`): `*`, one address, a list
//! (`192.168.1.{1,2,3}` or `10.0.0.1,10.0.0.2`), or a range in one part
//! (`192.168.0.*`, `127.0.0.1-200`, `192.100-150.*.*`). As in Java, a range
//! bounds only the first `*` or `a-b` part; the parts after it are not
//! looked at.

use std::collections::HashSet;
use std::net::IpAddr;

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    /// Blank: matches nothing (an account without a white address).
    Never,
    /// `*`, `*.*.*.*`: every address.
    Any,
    /// Exact addresses.
    List(HashSet<IpAddr>),
    /// IPv4: the first `index` octets equal `prefix`, octet `index` in
    /// `low..=high`.
    Range4 {
        prefix: Vec<u8>,
        index: usize,
        low: u8,
        high: u8,
    },
}

impl AddressPattern {
    /// Parses a pattern; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<AddressPattern, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(AddressPattern::Never);
        }
        if matches!(text, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressPattern::Any);
        }
        if text.ends_with('}') {
            return braced_list(text);
        }
        if text.contains(',') {
            let addrs = text.split(',').map(address).collect::<Result<_, _>>()?;
            return Ok(AddressPattern::List(addrs));
        }
        if text.contains('*') || text.contains('-') {
            return range4(text);
        }
        Ok(AddressPattern::List(HashSet::from([address(text)?])))
    }

    /// Whether `peer` matches.
    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        match self {
            AddressPattern::Never => false,
            AddressPattern::Any => true,
            AddressPattern::List(addrs) => addrs.contains(&peer),
            AddressPattern::Range4 {
                prefix,
                index,
                low,
                high,
            } => match peer {
                IpAddr::V4(v4) => {
                    let octets = v4.octets();
                    octets[..*index] == prefix[..] && (*low..=*high).contains(&octets[*index])
                }
                IpAddr::V6(_) => false,
            },
        }
    }
}

fn address(text: &str) -> Result<IpAddr, String> {
    text.parse::<IpAddr>()
        .map(|ip| ip.to_canonical())
        .map_err(|_| format!("`{text}` is not an IPv4 or IPv6 address"))
}

/// `192.168.1.{1,2,3}`: the prefix before `{`, then each listed last part.
fn braced_list(text: &str) -> Result<AddressPattern, String> {
    let open = text
        .find('{')
        .ok_or_else(|| format!("`{text}`: `}}` without `{{`"))?;
    let (prefix, list) = (&text[..open], &text[open + 1..text.len() - 1]);
    if !(prefix.ends_with('.') || prefix.ends_with(':')) {
        return Err(format!(
            "`{text}`: the list must be the address's last part"
        ));
    }
    let addrs = list
        .split(',')
        .map(|last| address(&format!("{prefix}{}", last.trim())))
        .collect::<Result<_, _>>()?;
    Ok(AddressPattern::List(addrs))
}

/// `a.b.*.*`, `a.b.c.1-200`, `a.10-20.*.*`: IPv4 with one bounded part.
fn range4(text: &str) -> Result<AddressPattern, String> {
    let bad = || format!("`{text}` is not an address range such as 192.168.0.* or 10.0.0.1-200");
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return Err(bad());
    }
    let index = (1..4)
        .find(|&i| parts[i] == "*" || parts[i].contains('-'))
        .ok_or_else(bad)?;
    let prefix = parts[..index]
        .iter()
        .map(|p| p.parse::<u8>().map_err(|_| bad()))
        .collect::<Result<Vec<u8>, _>>()?;
    let (low, high) = match parts[index].split_once('-') {
        None => (0, 255),
        Some((low, high)) => {
            let low = low.parse::<u8>().map_err(|_| bad())?;
            let high = high.parse::<u8>().map_err(|_| bad())?;
            if low > high {
                return Err(bad());
            }
            (low, high)
        }
    };
    Ok(AddressPattern::Range4 {
        prefix,
        index,
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn patterns_match_as_rocketmq_documents_them() {
        let p = |text: &str| AddressPattern::parse(text).unwrap();
        assert!(!p("").matches(ip("127.0.0.1")));
        assert!(p("*").matches(ip("10.1.2.3")));
        assert!(p("192.168.0.*").matches(ip("192.168.0.77")));
        assert!(!p("192.168.0.*").matches(ip("192.168.1.77")));
        assert!(p("127.0.0.1-200").matches(ip("127.0.0.200")));
        assert!(!p("127.0.0.1-200").matches(ip("127.0.0.201")));
        assert!(p("192.100-150.*.*").matches(ip("192.120.9.9")));
        // As in Java, the parts after the bounded one are not looked at.
        assert!(p("127.0.1-20.5").matches(ip("127.0.10.99")));
        assert!(p("192.168.1.{1,2,3}").matches(ip("192.168.1.2")));
        assert!(!p("192.168.1.{1,2,3}").matches(ip("192.168.1.4")));
        assert!(p("10.0.0.1,10.0.0.2").matches(ip("10.0.0.2")));
        assert!(p("127.0.0.1").matches(ip("::ffff:127.0.0.1")));
        assert!(p("::1").matches(ip("0:0:0:0:0:0:0:1")));
        for bad in ["300.1.1.*", "1.2.3", "10.0.0.9-2", "1.2.3.{x}", "localhost"] {
            assert!(AddressPattern::parse(bad).is_err(), "{bad}");
        }
    }
}

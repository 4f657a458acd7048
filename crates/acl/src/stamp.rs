//! Ferrocket's own guard against replay under ACL 1.0 (off by default).
//! RocketMQ's Remoting signature covers a request's header values and body
//! but neither its code nor a time, so a captured signed request can be
//! sent again later, even as another code. Ferrocket's tools (`ferrocket
//! admin`, brokers' and controllers' own calls, `ferrocket proxy`) add one
//! header field that the signature then covers: the request's code and the
//! signer's clock, `ferrocket:code=17;time=1765000000000;`. A server with
//! `aclAdminSignatureWindowMs` above zero refuses a request signed by an
//! admin account unless that field names the request's own code and a time
//! within the window of its clock. The value starts and ends with fixed
//! marks, so moving the boundary between it and a neighbour's value (the
//! signature covers values, not names) cannot forge it. Java's servers
//! ignore the field; Java's tools do not send it, so with the window on an
//! admin account must sign through Ferrocket's tools.

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use ferrocket_protocol::RemotingCommand;

use crate::config::AclConfig;
use crate::signature::ACCESS_KEY;
use crate::validator::Denied;

/// The header field holding the signed code and time.
pub const STAMP_FIELD: &str = "ferrocketSigned";
const PREFIX: &str = "ferrocket:code=";
const TIME_MARK: &str = ";time=";
const SUFFIX: &str = ";";

/// Milliseconds since the Unix epoch by this host's clock.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Adds the stamp of `request`'s code and `now_ms`; sign afterwards.
pub fn stamp(request: &mut RemotingCommand, now_ms: u64) {
    let value = format!("{PREFIX}{}{TIME_MARK}{now_ms}{SUFFIX}", request.code);
    request.ext_fields.insert(STAMP_FIELD, value);
}

/// [`stamp`] then [`crate::sign_request`]: how Ferrocket's tools sign.
pub fn sign_request_stamped(request: &mut RemotingCommand, access_key: &str, secret_key: &str) {
    stamp(request, now_ms());
    crate::sign_request(request, access_key, secret_key);
}

/// Whether `request`'s stamp names its own code and a time within
/// `window_ms` of `now_ms` (either way).
pub fn check_stamp(request: &RemotingCommand, window_ms: u64, now_ms: u64) -> Result<(), Denied> {
    let refused = |why: &str| {
        Denied(format!(
            "admin requests must sign their request code and time \
             (aclAdminSignatureWindowMs={window_ms}): {why}"
        ))
    };
    let value = request
        .ext_fields
        .get(STAMP_FIELD)
        .ok_or_else(|| refused(&format!("no {STAMP_FIELD} field")))?;
    let (code, time) = value
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(SUFFIX))
        .and_then(|rest| rest.split_once(TIME_MARK))
        .ok_or_else(|| refused(&format!("{STAMP_FIELD} is malformed")))?;
    let (Ok(code), Ok(time)) = (code.parse::<i32>(), time.parse::<u64>()) else {
        return Err(refused(&format!("{STAMP_FIELD} is malformed")));
    };
    if code != request.code {
        return Err(refused(&format!(
            "signed for request code={code}, sent as code={}",
            request.code
        )));
    }
    if time.abs_diff(now_ms) > window_ms {
        return Err(refused(&format!(
            "signed at {time}, {} ms from this server's clock",
            time.abs_diff(now_ms)
        )));
    }
    Ok(())
}

impl AclConfig {
    /// After [`AclConfig::check`] or [`AclConfig::check_admin`] passed:
    /// with `window_ms` above zero, a request signed by an admin account
    /// (not white-listed) must carry a fresh stamp of its own code.
    pub fn check_admin_stamp(
        &self,
        request: &RemotingCommand,
        peer: IpAddr,
        window_ms: u64,
    ) -> Result<(), Denied> {
        if window_ms == 0 || self.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(());
        }
        let account = request
            .ext_fields
            .get(ACCESS_KEY)
            .and_then(|key| self.accounts.get(key));
        match account {
            Some(account) if account.admin && !account.white_address.matches(peer) => {
                check_stamp(request, window_ms, now_ms())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_holds_for_its_code_within_the_window_only() {
        let mut request = RemotingCommand::request(17);
        stamp(&mut request, 1_000_000);
        assert_eq!(check_stamp(&request, 5_000, 1_004_000), Ok(()));
        assert_eq!(check_stamp(&request, 5_000, 996_000), Ok(()));
        let stale = check_stamp(&request, 5_000, 1_006_000).unwrap_err();
        assert!(stale.0.contains("6000 ms from"), "{}", stale.0);

        let mut replayed = request.clone();
        replayed.code = 215;
        let other = check_stamp(&replayed, 5_000, 1_000_000).unwrap_err();
        assert!(other
            .0
            .contains("signed for request code=17, sent as code=215"));

        for forged in [
            "ferrocket:code=17;time=1000000",
            "rrocket:code=17;time=1000000;",
            "ferrocket:code=17;time=;",
            "ferrocket:code=x;time=1000000;",
        ] {
            let mut request = RemotingCommand::request(17);
            request.ext_fields.insert(STAMP_FIELD, forged);
            assert!(check_stamp(&request, 5_000, 1_000_000).is_err(), "{forged}");
        }
        let bare = RemotingCommand::request(17);
        assert!(check_stamp(&bare, 5_000, 1_000_000)
            .unwrap_err()
            .0
            .contains("no ferrocketSigned"));
    }
}

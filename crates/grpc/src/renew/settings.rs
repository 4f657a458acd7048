//! The auto-renew settings, under RocketMQ proxy's `ProxyConfig` key names
//! and with its defaults; the two limits on tracked handles are
//! Ferrocket's own (Java's proxy has none). Each key is declared once in
//! [`RENEW_SETTINGS`].

use ferrocket_settings::{decl, invalid, parse_bool, parse_value, Decl, Setting, Table};

/// How long each renewal makes a message invisible, by renewals so far
/// (RocketMQ's `RenewStrategyPolicy`: 1, 3, 5, 10, 30 minutes, then an
/// hour each time).
pub const RENEW_SLICES_MS: [i64; 6] = [60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000];

/// Longest time any of the durations may be set to (12 hours, the longest
/// invisible time).
const DURATION_MS_MAX: i64 = crate::limits::INVISIBLE_MS_MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenewSettings {
    /// `enableProxyAutoRenew`: honour `auto_renew` in ReceiveMessage.
    pub enabled: bool,
    /// `defaultInvisibleTimeMills`: the invisible time of an auto-renew
    /// receive (the client's own is ignored, as Java's proxy does); at
    /// least `minInvisibleTimeMillsForRecv`, 10 s.
    pub default_invisible_ms: i64,
    /// `renewAheadTimeMillis`: renew once a message is this close to
    /// visible.
    pub ahead_ms: i64,
    /// `renewMaxTimeMillis`: stop renewing this long after the receive;
    /// the message then gets the group's retry wait, as a nack.
    pub max_ms: i64,
    /// `renewSchedulePeriodMillis`: how often handles are looked at.
    pub period_ms: i64,
    /// `maxRenewRetryTimes`: failed renewals in a row before giving up.
    pub max_retries: u32,
    /// `invisibleTimeMillisWhenClear`: what a gone client's messages are
    /// changed to, so that another consumer gets them soon.
    pub clear_invisible_ms: i64,
    /// `renewMaxThreadPoolNums`: renewals in flight at once.
    pub concurrency: usize,
    /// `maxRenewHandlesPerClient` (Ferrocket's): handles tracked for one
    /// client; more are delivered but not renewed.
    pub per_client_max: usize,
    /// `maxRenewHandles` (Ferrocket's): handles tracked in all.
    pub total_max: usize,
}

impl Default for RenewSettings {
    fn default() -> Self {
        RenewSettings {
            enabled: true,
            default_invisible_ms: crate::limits::INVISIBLE_MS_DEFAULT,
            ahead_ms: 10_000,
            max_ms: 3 * 3_600_000,
            period_ms: 5_000,
            max_retries: 3,
            clear_invisible_ms: 1_000,
            concurrency: 4,
            per_client_max: 10_000,
            total_max: 1_000_000,
        }
    }
}

/// The auto-renew keys, each declared once: `ferrocket proxy --set` and
/// its "did you mean" read them.
pub static RENEW_SETTINGS: Table<RenewSettings> = Table {
    sections: &[&RENEW_DECLS],
};

static RENEW_DECLS: [Decl<RenewSettings>; 10] = [
    decl!(
        "enableProxyAutoRenew",
        "`true`",
        start,
        "honour auto_renew in ReceiveMessage",
        |c, k, s| c.enabled = parse_bool(k, s)?
    ),
    decl!(
        "defaultInvisibleTimeMills",
        "60000",
        start,
        "invisible time of an auto-renew receive, ms, 10000 to 43200000",
        |c, k, s| c.default_invisible_ms = millis(k, s, crate::limits::INVISIBLE_MS_MIN)?
    ),
    decl!(
        "renewAheadTimeMillis",
        "10000",
        start,
        "renew once a message is this close to visible, ms, 0 to 43200000",
        |c, k, s| c.ahead_ms = millis(k, s, 0)?
    ),
    decl!(
        "renewMaxTimeMillis",
        "10800000 (3 hours)",
        start,
        "stop renewing this long after the receive, ms, 0 to 43200000",
        |c, k, s| c.max_ms = millis(k, s, 0)?
    ),
    decl!(
        "renewSchedulePeriodMillis",
        "5000",
        start,
        "how often handles are looked at, ms, 100 to 43200000",
        |c, k, s| c.period_ms = millis(k, s, 100)?
    ),
    decl!(
        "maxRenewRetryTimes",
        "3",
        start,
        "failed renewals in a row before giving up, 1 to 100",
        |c, k, s| c.max_retries = count(k, s, 1, 100)? as u32
    ),
    decl!(
        "invisibleTimeMillisWhenClear",
        "1000",
        start,
        "what a gone client's messages are changed to, ms, 1 to 43200000",
        |c, k, s| c.clear_invisible_ms = millis(k, s, 1)?
    ),
    decl!(
        "renewMaxThreadPoolNums",
        "4",
        start,
        "renewals in flight at once, 1 to 256",
        |c, k, s| c.concurrency = count(k, s, 1, 256)?
    ),
    decl!(
        "maxRenewHandlesPerClient",
        "10000",
        start,
        "handles tracked for one client, 1 to 1000000 (Ferrocket's)",
        |c, k, s| c.per_client_max = count(k, s, 1, 1_000_000)?
    ),
    decl!(
        "maxRenewHandles",
        "1000000",
        start,
        "handles tracked in all, 1 to 10000000 (Ferrocket's)",
        |c, k, s| c.total_max = count(k, s, 1, 10_000_000)?
    ),
];

/// Milliseconds from `min` to [`DURATION_MS_MAX`].
fn millis(key: &str, setting: &Setting, min: i64) -> Result<i64, String> {
    match parse_value::<i64>(key, setting) {
        Ok(ms) if (min..=DURATION_MS_MAX).contains(&ms) => Ok(ms),
        _ => Err(invalid(
            key,
            setting,
            &format!("expected milliseconds, {min} to {DURATION_MS_MAX}"),
        )),
    }
}

/// A count from `min` to `max`.
fn count(key: &str, setting: &Setting, min: usize, max: usize) -> Result<usize, String> {
    match parse_value::<usize>(key, setting) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(
            key,
            setting,
            &format!("expected a count, {min} to {max}"),
        )),
    }
}

impl RenewSettings {
    /// Applies one setting (`origin`: where it came from, for its error):
    /// `Ok(false)` for a key not in [`RENEW_SETTINGS`].
    pub fn set(&mut self, key: &str, value: &str, origin: &str) -> Result<bool, String> {
        let setting = Setting::from_flag(value.to_string(), origin.into());
        RENEW_SETTINGS.apply(self, key.trim(), &setting)
    }

    /// The invisible time of renewal number `renewed` (0 for the first).
    pub fn slice_ms(renewed: u32) -> i64 {
        RENEW_SLICES_MS[(renewed as usize).min(RENEW_SLICES_MS.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_keys_set_their_fields_and_bad_values_are_refused() {
        let mut settings = RenewSettings::default();
        assert_eq!(settings.max_ms, 10_800_000);
        assert_eq!(settings.set("renewAheadTimeMillis", "2000", "t"), Ok(true));
        assert_eq!(settings.set("enableProxyAutoRenew", "false", "t"), Ok(true));
        assert_eq!(settings.set("maxRenewHandles", "5", "t"), Ok(true));
        assert_eq!(
            (settings.ahead_ms, settings.enabled, settings.total_max),
            (2_000, false, 5)
        );
        assert_eq!(settings.set("tls.server.mode", "enforcing", "t"), Ok(false));
        assert!(settings.set("renewSchedulePeriodMillis", "0", "t").is_err());
        assert!(settings.set("maxRenewRetryTimes", "x", "t").is_err());
        for key in RENEW_SETTINGS.keys() {
            assert_ne!(
                RenewSettings::default().set(key, "10000", "t"),
                Ok(false),
                "{key}"
            );
        }
        assert!(settings
            .set("defaultInvisibleTimeMills", "9999", "t")
            .is_err());
        assert_eq!(RenewSettings::slice_ms(0), 60_000);
        assert_eq!(RenewSettings::slice_ms(40), 3_600_000);
    }

    /// Each declared default is `RenewSettings::default()`'s.
    #[test]
    fn the_declared_defaults_are_the_structs() {
        for decl in RENEW_SETTINGS.decls() {
            let value = decl.default.split(' ').next().unwrap_or_default();
            let value = value.trim_matches('`');
            let mut settings = RenewSettings::default();
            assert_eq!(
                settings.set(decl.name, value, "t"),
                Ok(true),
                "{}",
                decl.name
            );
            assert_eq!(
                settings,
                RenewSettings::default(),
                "{} = {value}",
                decl.name
            );
        }
        let wrong =
            RenewSettings::default().set("maxRenewRetryTimes", "0", "--set maxRenewRetryTimes=0");
        assert_eq!(
            wrong,
            Err(
                "--set maxRenewRetryTimes=0: invalid value `0` for maxRenewRetryTimes: \
                 expected a count, 1 to 100"
                    .into()
            )
        );
    }
}

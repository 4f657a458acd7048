//! The auto-renew settings, under RocketMQ proxy's `ProxyConfig` key names
//! and with its defaults; the two limits on tracked handles are
//! Ferrocket's own (Java's proxy has none).

/// How long each renewal makes a message invisible, by renewals so far
/// (RocketMQ's `RenewStrategyPolicy`: 1, 3, 5, 10, 30 minutes, then an
/// hour each time).
pub const RENEW_SLICES_MS: [i64; 6] = [60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000];

/// The keys [`RenewSettings::set`] takes.
pub const KEYS: [&str; 10] = [
    "enableProxyAutoRenew",
    "defaultInvisibleTimeMills",
    "renewAheadTimeMillis",
    "renewMaxTimeMillis",
    "renewSchedulePeriodMillis",
    "maxRenewRetryTimes",
    "invisibleTimeMillisWhenClear",
    "renewMaxThreadPoolNums",
    "maxRenewHandlesPerClient",
    "maxRenewHandles",
];

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

impl RenewSettings {
    /// Applies `key=value`; `Ok(false)` for a key not in [`KEYS`].
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let value = value.trim();
        let millis = |min: i64| -> Result<i64, String> {
            match value.parse::<i64>() {
                Ok(ms) if (min..=DURATION_MS_MAX).contains(&ms) => Ok(ms),
                _ => Err(format!(
                    "{key}: expected milliseconds, {min} to {DURATION_MS_MAX}"
                )),
            }
        };
        let count = |min: usize, max: usize| -> Result<usize, String> {
            match value.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(format!("{key}: expected a count, {min} to {max}")),
            }
        };
        match key.trim() {
            "enableProxyAutoRenew" => {
                self.enabled = match value.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("{key}: expected true or false")),
                }
            }
            "defaultInvisibleTimeMills" => {
                self.default_invisible_ms = millis(crate::limits::INVISIBLE_MS_MIN)?
            }
            "renewAheadTimeMillis" => self.ahead_ms = millis(0)?,
            "renewMaxTimeMillis" => self.max_ms = millis(0)?,
            "renewSchedulePeriodMillis" => self.period_ms = millis(100)?,
            "maxRenewRetryTimes" => self.max_retries = count(1, 100)? as u32,
            "invisibleTimeMillisWhenClear" => self.clear_invisible_ms = millis(1)?,
            "renewMaxThreadPoolNums" => self.concurrency = count(1, 256)?,
            "maxRenewHandlesPerClient" => self.per_client_max = count(1, 1_000_000)?,
            "maxRenewHandles" => self.total_max = count(1, 10_000_000)?,
            _ => return Ok(false),
        }
        Ok(true)
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
        assert_eq!(settings.set("renewAheadTimeMillis", "2000"), Ok(true));
        assert_eq!(settings.set("enableProxyAutoRenew", "false"), Ok(true));
        assert_eq!(settings.set("maxRenewHandles", "5"), Ok(true));
        assert_eq!(
            (settings.ahead_ms, settings.enabled, settings.total_max),
            (2_000, false, 5)
        );
        assert_eq!(settings.set("tls.server.mode", "enforcing"), Ok(false));
        assert!(settings.set("renewSchedulePeriodMillis", "0").is_err());
        assert!(settings.set("maxRenewRetryTimes", "x").is_err());
        for key in KEYS {
            assert_ne!(
                RenewSettings::default().set(key, "10000"),
                Ok(false),
                "{key}"
            );
        }
        assert!(settings.set("defaultInvisibleTimeMills", "9999").is_err());
        assert_eq!(RenewSettings::slice_ms(0), 60_000);
        assert_eq!(RenewSettings::slice_ms(40), 3_600_000);
    }
}

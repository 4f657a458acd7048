//! ACL 2.0's broker keys (Java's `AuthConfig`): the two switches, the
//! whitelists, the users made at start, and the migration from ACL 1.0.
//! Java's provider and strategy class names are taken when they name what
//! Ferrocket does (the local metadata providers, the default handlers,
//! either strategy: every request is checked against an in-memory copy);
//! its cache sizes and expiries are read and have no effect (everything is
//! in memory).

use super::{invalid, parse_bool, parse_value, BrokerConfig, Setting};
use crate::config::{AuthConfig, Whitelist};

/// Java's class names each provider or strategy key may name (the
/// package is not compared).
const CLASSES: [(&str, &[&str]); 6] = [
    ("authenticationProvider", &["DefaultAuthenticationProvider"]),
    ("authorizationProvider", &["DefaultAuthorizationProvider"]),
    (
        "authenticationMetadataProvider",
        &["LocalAuthenticationMetadataProvider"],
    ),
    (
        "authorizationMetadataProvider",
        &["LocalAuthorizationMetadataProvider"],
    ),
    (
        "authenticationStrategy",
        &[
            "StatelessAuthenticationStrategy",
            "StatefulAuthenticationStrategy",
        ],
    ),
    (
        "authorizationStrategy",
        &[
            "StatelessAuthorizationStrategy",
            "StatefulAuthorizationStrategy",
        ],
    ),
];

/// Cache knobs of Java's metadata providers and strategies.
const CACHE_KEYS: [&str; 11] = [
    "userCacheMaxNum",
    "userCacheExpiredSecond",
    "userCacheRefreshSecond",
    "aclCacheMaxNum",
    "aclCacheExpiredSecond",
    "aclCacheRefreshSecond",
    "statefulAuthenticationCacheMaxNum",
    "statefulAuthenticationCacheExpiredSecond",
    "statefulAuthorizationCacheMaxNum",
    "statefulAuthorizationCacheExpiredSecond",
    "authConfigPath",
];

/// Every key read here.
pub(super) const KEYS: &[&str] = &[
    "authenticationEnabled",
    "authorizationEnabled",
    "authenticationWhitelist",
    "authorizationWhitelist",
    "initAuthenticationUser",
    "innerClientAuthenticationCredentials",
    "migrateAuthFromV1Enabled",
    "authenticationProvider",
    "authorizationProvider",
    "authenticationMetadataProvider",
    "authorizationMetadataProvider",
    "authenticationStrategy",
    "authorizationStrategy",
    "userCacheMaxNum",
    "userCacheExpiredSecond",
    "userCacheRefreshSecond",
    "aclCacheMaxNum",
    "aclCacheExpiredSecond",
    "aclCacheRefreshSecond",
    "statefulAuthenticationCacheMaxNum",
    "statefulAuthenticationCacheExpiredSecond",
    "statefulAuthorizationCacheMaxNum",
    "statefulAuthorizationCacheExpiredSecond",
    "authConfigPath",
];

pub(super) fn apply(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    let auth: &mut AuthConfig = &mut config.auth;
    match key {
        "authenticationEnabled" => auth.authentication_enabled = parse_bool(key, setting)?,
        "authorizationEnabled" => auth.authorization_enabled = parse_bool(key, setting)?,
        "authenticationWhitelist" => {
            auth.authentication_whitelist = Whitelist::parse(&setting.value)
        }
        "authorizationWhitelist" => auth.authorization_whitelist = Whitelist::parse(&setting.value),
        "initAuthenticationUser" => {
            auth.init_user = credentials(key, setting, ("username", "password"))?
        }
        "innerClientAuthenticationCredentials" => {
            config.inner_credentials = credentials(key, setting, ("accessKey", "secretKey"))?
        }
        "migrateAuthFromV1Enabled" => auth.migrate_from_v1 = parse_bool(key, setting)?,
        "authConfigPath" => {}
        key if CACHE_KEYS.contains(&key) => {
            parse_value::<u64>(key, setting)?;
        }
        key => match CLASSES.iter().find(|(k, _)| *k == key) {
            Some((_, classes)) => class(key, setting, classes)?,
            None => return Ok(false),
        },
    }
    Ok(true)
}

fn class(key: &str, setting: &Setting, classes: &[&str]) -> Result<(), String> {
    let value = setting.value.trim();
    let simple = value.rsplit('.').next().unwrap_or(value);
    if value.is_empty() || classes.contains(&simple) {
        return Ok(());
    }
    Err(invalid(
        key,
        setting,
        &format!(
            "Ferrocket has its own, which is Java's {}: leave it unset",
            classes.join(" or ")
        ),
    ))
}

/// `{"<user>": "...", "<secret>": "..."}`, as Java's AuthConfig takes it;
/// empty for none.
fn credentials(
    key: &str,
    setting: &Setting,
    (user, secret): (&str, &str),
) -> Result<Option<(String, String)>, String> {
    if setting.value.trim().is_empty() {
        return Ok(None);
    }
    // The value holds a secret: the error does not repeat it.
    let refused = || {
        format!(
            r#"{}: invalid value for {key}: expected {{"{user}":"...","{secret}":"..."}}"#,
            setting.origin
        )
    };
    let json: serde_json::Value = serde_json::from_str(&setting.value).map_err(|_| refused())?;
    match (json[user].as_str(), json[secret].as_str()) {
        (Some(name), Some(password)) if !name.is_empty() && !password.is_empty() => {
            Ok(Some((name.to_string(), password.to_string())))
        }
        _ => Err(refused()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: &str, value: &str) -> Result<BrokerConfig, String> {
        let mut config = BrokerConfig::default();
        let setting = Setting {
            value: value.into(),
            origin: "broker.conf:1".into(),
        };
        assert!(apply(&mut config, key, &setting)?, "{key} unknown");
        Ok(config)
    }

    #[test]
    fn javas_auth_keys_are_read() {
        assert!(
            set("authenticationEnabled", "true")
                .unwrap()
                .auth
                .authentication_enabled
        );
        let list = set(
            "authenticationWhitelist",
            "34, 105,apache.rocketmq.v2.QueryRouteRequest",
        )
        .unwrap();
        assert!(list.auth.authentication_whitelist.has_code(105));
        assert!(list
            .auth
            .authentication_whitelist
            .has_name("apache.rocketmq.v2.QueryRouteRequest"));
        let user = set(
            "initAuthenticationUser",
            r#"{"username":"rocketmq","password":"12345678"}"#,
        )
        .unwrap();
        assert_eq!(
            user.auth.init_user,
            Some(("rocketmq".into(), "12345678".into()))
        );
        let provider =
            "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider";
        assert!(set("authenticationMetadataProvider", provider).is_ok());
        let other = set("authenticationMetadataProvider", "com.example.Ldap").unwrap_err();
        assert!(
            other.contains("LocalAuthenticationMetadataProvider"),
            "{other}"
        );
        assert!(set("userCacheMaxNum", "1000").is_ok());
        assert!(set("userCacheMaxNum", "many").is_err());
        let secret = set(
            "initAuthenticationUser",
            r#"{"username":"u","pw":"hunter2"}"#,
        )
        .unwrap_err();
        assert!(!secret.contains("hunter2"));
    }
}

//! ACL 2.0's broker keys (Java's `AuthConfig`): the two switches, the
//! whitelists, the users made at start, and the migration from ACL 1.0.
//! Java's provider and strategy class names are taken when they name what
//! Ferrocket does (the local metadata providers, the default handlers,
//! either strategy: every request is checked against an in-memory copy);
//! its cache sizes and expiries are read and have no effect (everything is
//! in memory).

use super::*;

/// A cache knob of Java's: a whole number, no effect here.
macro_rules! cache {
    ($name:literal) => {
        decl!(
            $name,
            "",
            start,
            "no effect (Java's cache knob: everything is in memory)",
            |_, k, s| {
                parse_value::<u64>(k, s)?;
            }
        )
    };
}

pub(super) static AUTH: &[Decl<BrokerConfig>] = &[
    decl!(
        "authenticationEnabled",
        "`false`",
        start,
        "every request must be signed by an enabled user",
        |c, k, s| c.auth.authentication_enabled = parse_bool(k, s)?,
    ),
    decl!(
        "authorizationEnabled",
        "`false`",
        start,
        "every request is checked against the signing user's ACL",
        |c, k, s| c.auth.authorization_enabled = parse_bool(k, s)?,
    ),
    decl!(
        "authenticationWhitelist",
        "-",
        start,
        "request codes (or v5 request names), comma-separated, that need no signature",
        |c, _, s| c.auth.authentication_whitelist = Whitelist::parse(&s.value),
    ),
    decl!(
        "authorizationWhitelist",
        "-",
        start,
        "request codes (or v5 request names), comma-separated, that need no ACL",
        |c, _, s| c.auth.authorization_whitelist = Whitelist::parse(&s.value),
    ),
    decl!(
        "initAuthenticationUser",
        "-",
        start,
        "{\"username\":..,\"password\":..}: a super user made at start",
        |c, k, s| c.auth.init_user = credentials(k, s, ("username", "password"))?,
    ),
    decl!(
        "innerClientAuthenticationCredentials",
        "-",
        start,
        "{\"accessKey\":..,\"secretKey\":..}: the broker's own calls' user, also a super user",
        |c, k, s| c.inner_credentials = credentials(k, s, ("accessKey", "secretKey"))?,
    ),
    decl!(
        "migrateAuthFromV1Enabled",
        "`false`",
        start,
        "make users and ACLs of ACL 1.0's accounts (plain_acl.yml) at start",
        |c, k, s| c.auth.migrate_from_v1 = parse_bool(k, s)?,
    ),
    decl!(
        "authConfigPath",
        "",
        start,
        "no effect (users and ACLs are kept in the store's config directory)",
        |_, _, _| {}
    ),
];

/// Java's provider and strategy class names: taken when they name what
/// Ferrocket does (the package is not compared).
pub(super) static AUTH_CLASSES: &[Decl<BrokerConfig>] = &[
    decl!(
        "authenticationProvider",
        "",
        start,
        "Java's class; only its default is taken (DefaultAuthenticationProvider)",
        |_, k, s| class(k, s, &["DefaultAuthenticationProvider"])?,
    ),
    decl!(
        "authorizationProvider",
        "",
        start,
        "Java's class; only its default is taken (DefaultAuthorizationProvider)",
        |_, k, s| class(k, s, &["DefaultAuthorizationProvider"])?,
    ),
    decl!(
        "authenticationMetadataProvider",
        "",
        start,
        "Java's class; only LocalAuthenticationMetadataProvider is taken",
        |_, k, s| class(k, s, &["LocalAuthenticationMetadataProvider"])?,
    ),
    decl!(
        "authorizationMetadataProvider",
        "",
        start,
        "Java's class; only LocalAuthorizationMetadataProvider is taken",
        |_, k, s| class(k, s, &["LocalAuthorizationMetadataProvider"])?,
    ),
    decl!(
        "authenticationStrategy",
        "",
        start,
        "Java's class; either strategy is taken (every request is checked in memory)",
        |_, k, s| class(k, s, &STRATEGIES[..2])?,
    ),
    decl!(
        "authorizationStrategy",
        "",
        start,
        "Java's class; either strategy is taken (every request is checked in memory)",
        |_, k, s| class(k, s, &STRATEGIES[2..])?,
    ),
];

const STRATEGIES: [&str; 4] = [
    "StatelessAuthenticationStrategy",
    "StatefulAuthenticationStrategy",
    "StatelessAuthorizationStrategy",
    "StatefulAuthorizationStrategy",
];

/// Cache knobs of Java's metadata providers and strategies: a number is
/// taken and has no effect (everything is in memory).
pub(super) static AUTH_CACHES: &[Decl<BrokerConfig>] = &[
    cache!("userCacheMaxNum"),
    cache!("userCacheExpiredSecond"),
    cache!("userCacheRefreshSecond"),
    cache!("aclCacheMaxNum"),
    cache!("aclCacheExpiredSecond"),
    cache!("aclCacheRefreshSecond"),
    cache!("statefulAuthenticationCacheMaxNum"),
    cache!("statefulAuthenticationCacheExpiredSecond"),
    cache!("statefulAuthorizationCacheMaxNum"),
    cache!("statefulAuthorizationCacheExpiredSecond"),
];

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
        assert!(
            super::super::BROKER_SETTINGS.apply(&mut config, key, &setting)?,
            "{key} unknown"
        );
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

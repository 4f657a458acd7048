//! ACL 2.0's keys the gRPC endpoint takes (`ferrocket proxy --set`), under
//! RocketMQ's `AuthConfig` names; the users and ACLs are the brokers'.

use ferrocket_settings::{decl, parse_bool, Decl, Table};

use super::AuthSettings;

/// ACL 2.0's endpoint keys, each declared once: `ferrocket proxy --set`
/// and its "did you mean" read them.
pub static AUTH_SETTINGS: Table<AuthSettings> = Table {
    sections: &[&AUTH_DECLS],
};

static AUTH_DECLS: [Decl<AuthSettings>; 4] = [
    decl!(
        "authenticationEnabled",
        "`false`",
        start,
        "every call must be signed by an enabled user of the broker",
        |c, k, s| c.authentication = parse_bool(k, s)?
    ),
    decl!(
        "authorizationEnabled",
        "`false`",
        start,
        "every call is checked against the signing user's ACL",
        |c, k, s| c.authorization = parse_bool(k, s)?
    ),
    decl!(
        "authenticationWhitelist",
        "-",
        start,
        "v5 request names, comma-separated, that need no signature",
        |c, _, s| c.authentication_whitelist = list(&s.value)
    ),
    decl!(
        "authorizationWhitelist",
        "-",
        start,
        "v5 request names, comma-separated, that need no ACL",
        |c, _, s| c.authorization_whitelist = list(&s.value)
    ),
];

/// Comma-separated names, blanks dropped.
fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_settings::Setting;

    fn set(auth: &mut AuthSettings, key: &str, value: &str) -> Result<bool, String> {
        let setting = Setting::from_flag(value.into(), format!("--set {key}={value}"));
        AUTH_SETTINGS.apply(auth, key, &setting)
    }

    #[test]
    fn the_keys_set_their_fields_and_the_defaults_are_the_structs() {
        let mut auth = AuthSettings::default();
        assert_eq!(set(&mut auth, "authenticationEnabled", "TRUE"), Ok(true));
        assert_eq!(
            set(&mut auth, "authorizationWhitelist", " a, ,b "),
            Ok(true)
        );
        assert!(auth.authentication && !auth.authorization);
        assert_eq!(auth.authorization_whitelist, ["a", "b"]);
        assert_eq!(
            set(&mut auth, "authorizationEnabled", "yes"),
            Err("--set authorizationEnabled=yes: invalid value `yes` for \
                 authorizationEnabled: expected true or false"
                .into())
        );
        assert_eq!(set(&mut auth, "grpcConnectionsMax", "1"), Ok(false));
        for decl in AUTH_SETTINGS.decls() {
            let value = decl.default.trim_matches('`').replace('-', "");
            let mut auth = AuthSettings::default();
            assert_eq!(set(&mut auth, decl.name, &value), Ok(true));
            assert_eq!(
                format!("{auth:?}"),
                format!("{:?}", AuthSettings::default())
            );
        }
    }
}

//! ACL 2.0's users and ACLs on the broker: opened at start from
//! `{storePathRootDir}/config/authMetadata.json` (with the users
//! `initAuthenticationUser` and `innerClientAuthenticationCredentials`
//! name, and the accounts `migrateAuthFromV1Enabled` imports), shared by
//! every shard (each keeps a `services::acl::VersionedCopy`).

use std::sync::Arc;

use ferrocket_acl::auth::{AuthError, AuthFile, AuthMetadata, AuthStore, UserInfo, AUTH_FILE};
use ferrocket_store::ConfigDir;

use crate::config::BrokerConfig;
use crate::error::{BrokerError, Reject};

/// Writes the users and ACLs (atomically, the old file kept as `.bak`).
pub(crate) fn persist(dir: &ConfigDir, meta: &AuthMetadata) -> Result<(), String> {
    dir.write_json(AUTH_FILE, &meta.to_file())
        .map_err(|e| e.to_string())
}

/// Makes a change on the blocking pool: persisted, then in force.
pub(crate) async fn update<T: Send + 'static>(
    store: &Arc<AuthStore>,
    dir: &ConfigDir,
    change: impl FnOnce(&mut AuthMetadata) -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    let (store, dir) = (Arc::clone(store), dir.clone());
    glommio::executor()
        .spawn_blocking(move || store.update(change, |meta| persist(&dir, meta)))
        .await
}

/// The answer to a refused change, with Java's codes.
pub(crate) fn reject(error: AuthError) -> Reject {
    use ferrocket_protocol::codes::response_code::{
        INVALID_PARAMETER, NO_PERMISSION, SYSTEM_ERROR,
    };
    let code = match error {
        AuthError::Denied(_) => NO_PERMISSION,
        AuthError::Invalid(_) => INVALID_PARAMETER,
        AuthError::System(_) => SYSTEM_ERROR,
    };
    Reject::new(code, error.message())
}

/// Loads the users and ACLs and adds the ones the settings name. A file
/// that does not load stops the start, naming it.
pub(crate) fn open(config: &BrokerConfig, dir: &ConfigDir) -> Result<Arc<AuthStore>, BrokerError> {
    let refused =
        |e: String| BrokerError::Config(format!("{}: {e}", dir.path(AUTH_FILE).display()));
    let file: AuthFile = dir.read_json(AUTH_FILE)?.unwrap_or_default();
    let mut meta = AuthMetadata::from_file(&file).map_err(refused)?;
    if !config.auth.enabled() {
        // Off: nothing is added (the inner credentials serve ACL 1.0 then),
        // and the admin requests are refused.
        return Ok(Arc::new(AuthStore::new(meta)));
    }
    let loaded = meta.clone();
    let supers = [&config.auth.init_user, &config.inner_credentials];
    for (name, password) in supers.into_iter().flatten() {
        if meta.user(name).is_none() {
            let info = UserInfo {
                password: Some(password.clone()),
                user_type: Some("Super".into()),
                ..UserInfo::default()
            };
            meta.create_user(None, name, &info).map_err(|e| {
                BrokerError::Config(format!("Init authentication user error: {}", e.message()))
            })?;
        }
    }
    if config.auth.migrate_from_v1 {
        migrate(config, &mut meta)?;
    }
    if meta != loaded {
        persist(dir, &meta).map_err(refused)?;
    }
    tracing::info!(
        users = meta.users().count(),
        acls = meta.acls().count(),
        authentication = config.auth.authentication_enabled,
        authorization = config.auth.authorization_enabled,
        "ACL 2.0 enabled"
    );
    if !config.auth.authentication_enabled {
        tracing::warn!(
            "authorizationEnabled=true without authenticationEnabled: a request's AccessKey names \
             its user unchecked, so anyone can claim any user (as in Java)"
        );
    }
    Ok(Arc::new(AuthStore::new(meta)))
}

/// `migrateAuthFromV1Enabled`: the ACL 1.0 accounts under the RocketMQ home.
fn migrate(config: &BrokerConfig, meta: &mut AuthMetadata) -> Result<(), BrokerError> {
    let home = config.rocketmq_home().ok_or_else(|| {
        BrokerError::Config(
            "migrateAuthFromV1Enabled=true needs rocketmqHome (or $ROCKETMQ_HOME): the \
             directory whose conf/plain_acl.yml lists the accounts"
                .into(),
        )
    })?;
    let paths = ferrocket_acl::acl_files(&home)
        .map_err(|e| BrokerError::Config(format!("ACL migration: {e}")))?;
    let v1 = ferrocket_acl::AclConfig::load(&paths)
        .map_err(|e| BrokerError::Config(format!("ACL migration: {e}")))?;
    let added = meta
        .migrate_from_v1(&v1)
        .map_err(|e| BrokerError::Config(format!("ACL migration: {}", e.message())))?;
    tracing::info!(users = ?added, "[ACL MIGRATE] ACL 1.0 accounts made users");
    Ok(())
}

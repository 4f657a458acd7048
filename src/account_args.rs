//! The ACL 1.0 account a command signs its requests with, from flags or
//! the environment (`FERROCKET_ACCESS_KEY`, `FERROCKET_SECRET_KEY`).

/// `--access-key` and `--secret-key`, both or neither.
#[derive(Debug, Clone, clap::Args)]
pub struct AccountArgs {
    /// ACL account to sign requests with (brokers with aclEnable=true;
    /// what mqadmin reads from conf/tools.yml).
    #[arg(
        long,
        requires = "secret_key",
        env = "FERROCKET_ACCESS_KEY",
        hide_env_values = true
    )]
    pub access_key: Option<String>,
    /// The account's secret key.
    #[arg(
        long,
        requires = "access_key",
        env = "FERROCKET_SECRET_KEY",
        hide_env_values = true
    )]
    pub secret_key: Option<String>,
}

impl AccountArgs {
    /// The account, when both keys are given.
    pub fn credentials(self) -> Option<ferrocket_client::Credentials> {
        let (access_key, secret_key) = self.access_key.zip(self.secret_key)?;
        Some(ferrocket_client::Credentials {
            access_key,
            secret_key,
        })
    }
}

//! Changing a running server's settings (UPDATE_BROKER_CONFIG,
//! UPDATE_NAMESRV_CONFIG) from its declarations: a key declared `online`
//! may change, every other key is refused, all or nothing.

use crate::{suggest, Setting, Table};

/// The server an online change is for, as its refusals name it.
pub struct Online<'a> {
    /// `broker`, `name server`.
    pub server: &'a str,
    /// Where a key read at start is set: `broker.conf`.
    pub file: &'a str,
    /// Where the values came from, for their errors: `UPDATE_BROKER_CONFIG`.
    pub origin: &'a str,
    /// Keys never changed online (Java's `configBlackList`).
    pub black_list: &'a [&'a str],
}

/// Why an online change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnlineRefusal {
    /// A black-listed key (Java answers NO_PERMISSION).
    BlackListed,
    /// An unknown key, a key read at start or a bad value, in words (Java
    /// answers INVALID_PARAMETER).
    Invalid(String),
}

impl<C: Clone> Table<C> {
    /// `config` with each of `pairs` set, or the refusal of the first bad
    /// one (then nothing changes): a black-listed key, an unknown key (with
    /// the online key meant, if one is close), a key read at start, a bad
    /// value.
    pub fn apply_online(
        &self,
        config: &C,
        pairs: &[(String, String)],
        to: &Online,
    ) -> Result<C, OnlineRefusal> {
        if pairs
            .iter()
            .any(|(key, _)| to.black_list.contains(&key.as_str()))
        {
            return Err(OnlineRefusal::BlackListed);
        }
        let online = self.online_keys();
        let mut updated = config.clone();
        for (key, value) in pairs {
            let setting = Setting::from_flag(value.trim().to_string(), to.origin.into());
            let known = self
                .apply(&mut updated, key, &setting)
                .map_err(OnlineRefusal::Invalid)?;
            if !known {
                let server = to.server;
                return Err(OnlineRefusal::Invalid(
                    match suggest::closest(key, &online) {
                        Some(meant) => {
                            format!("unknown {server} config key `{key}`: did you mean `{meant}`?")
                        }
                        None => format!("unknown {server} config key `{key}`"),
                    },
                ));
            }
            if !online.contains(&key.as_str()) {
                return Err(OnlineRefusal::Invalid(format!(
                    "`{key}` is read at start and cannot change while the {} runs: \
                     set it in {} and restart (online keys: {})",
                    to.server,
                    to.file,
                    online.join(", ")
                )));
            }
        }
        Ok(updated)
    }
}

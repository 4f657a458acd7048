//! Changing a running server's settings (UPDATE_BROKER_CONFIG,
//! UPDATE_NAMESRV_CONFIG, UPDATE_CONTROLLER_CONFIG) from its declarations:
//! a key declared `online` may change, every other key is refused, all or
//! nothing, with the answer Java gives.

use ferrocket_protocol::body::{parse_update, UpdateRefusal, BLACK_LIST_REMARK};
use ferrocket_protocol::codes::response_code as rc;

use crate::{suggest, Setting, Table};

/// The server an online change is for, as its refusals name it.
pub struct Online<'a> {
    /// `broker`, `name server`, `controller`.
    pub server: &'a str,
    /// Where a key read at start is set: `broker.conf`.
    pub file: &'a str,
    /// Where the values came from, for their errors: `UPDATE_BROKER_CONFIG`.
    pub origin: &'a str,
    /// Keys never changed online (Java's `configBlackList`).
    pub black_list: &'a [&'a str],
}

/// A refused online change: the answer's code and remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i32,
    pub remark: String,
}

impl Refusal {
    /// An unknown key, a key read at start, a bad value or a bad body, in
    /// words: INVALID_PARAMETER, as Java answers.
    pub fn invalid(remark: impl Into<String>) -> Self {
        Self {
            code: rc::INVALID_PARAMETER,
            remark: remark.into(),
        }
    }

    /// A black-listed key: NO_PERMISSION with Java's remark.
    pub fn black_listed() -> Self {
        Self {
            code: rc::NO_PERMISSION,
            remark: BLACK_LIST_REMARK.into(),
        }
    }
}

impl<C: Clone> Table<C> {
    /// An UPDATE_*_CONFIG body (`key=value` lines, bounded, UTF-8) applied
    /// to a copy of `config` by [`Table::apply_online`]: the config after
    /// it and the pairs it set, or the refusal (then nothing changes).
    pub fn update_online(
        &self,
        config: &C,
        body: &[u8],
        to: &Online,
    ) -> Result<(C, Vec<(String, String)>), Refusal> {
        let pairs = parse_update(body, to.black_list).map_err(|refusal| match refusal {
            UpdateRefusal::Malformed(why) => Refusal::invalid(why),
            UpdateRefusal::BlackListed => Refusal::black_listed(),
        })?;
        let updated = self.apply_online(config, &pairs, to)?;
        Ok((updated, pairs))
    }

    /// `config` with each of `pairs` set, or the refusal of the first bad
    /// one (then nothing changes): a black-listed key, an unknown key (with
    /// the online key meant, if one is close), a key read at start, a bad
    /// value.
    pub fn apply_online(
        &self,
        config: &C,
        pairs: &[(String, String)],
        to: &Online,
    ) -> Result<C, Refusal> {
        if pairs
            .iter()
            .any(|(key, _)| to.black_list.contains(&key.as_str()))
        {
            return Err(Refusal::black_listed());
        }
        let online = self.online_keys();
        let mut updated = config.clone();
        for (key, value) in pairs {
            let setting = Setting::from_flag(value.trim().to_string(), to.origin.into());
            let known = self
                .apply(&mut updated, key, &setting)
                .map_err(Refusal::invalid)?;
            if !known {
                let server = to.server;
                return Err(Refusal::invalid(match suggest::closest(key, &online) {
                    Some(meant) => {
                        format!("unknown {server} config key `{key}`: did you mean `{meant}`?")
                    }
                    None => format!("unknown {server} config key `{key}`"),
                }));
            }
            if !online.contains(&key.as_str()) {
                return Err(Refusal::invalid(format!(
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

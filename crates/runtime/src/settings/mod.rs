//! Declared settings: each server's keys are declared once, in the crate
//! that owns them, as a [`Table`] of [`Decl`]s (name, aliases, default,
//! whether it changes online, a one-line description, how it is parsed
//! and printed). Properties files, `--set`, online changes, "did you
//! mean", `--help` and the README's key tables all read the table.
//!
//! The value helpers (`parse_value`, `parse_bool`, ...) word every refusal
//! the same way: where the value came from, the key, the value and what
//! the key takes.

mod server_limits;
mod values;

pub use values::{
    core_list, invalid, non_empty, parse_bool, parse_port, parse_value, percent, positive,
    positive_count, ratio_percent, Setting,
};

/// Parses one value into the config; the key is passed as written (an
/// alias stays an alias in error messages).
pub type Apply<C> = fn(&mut C, &str, &Setting) -> Result<(), String>;
/// The value in force, as a properties file would set it.
pub type Show<C> = fn(&C) -> String;

/// One setting, declared once.
pub struct Decl<C: 'static> {
    pub name: &'static str,
    /// Other spellings taken for it (Java's older names).
    pub aliases: &'static [&'static str],
    /// The default, as the README's key tables write it (`` `true` ``,
    /// `72`, `1 GiB`); empty: none (unset).
    pub default: &'static str,
    /// Read at each use, so UPDATE_BROKER_CONFIG may change it.
    pub online: bool,
    /// What it does, in one line.
    pub doc: &'static str,
    pub apply: Apply<C>,
    /// How GET_BROKER_CONFIG prints it; `None`: not printed.
    pub show: Option<Show<C>>,
}

/// Keys whose parsing lives with another type (TLS, tiering, controller
/// mode): `apply` answers `Ok(false)` for a key it does not know.
pub struct Group<C: 'static> {
    pub keys: &'static [&'static str],
    pub apply: fn(&mut C, &str, &Setting) -> Result<bool, String>,
}

/// A server's settings: its declarations, by section, and its groups.
pub struct Table<C: 'static> {
    pub sections: &'static [&'static [Decl<C>]],
    pub groups: &'static [Group<C>],
}

impl<C> Table<C> {
    /// Every declaration, in order.
    pub fn decls(&self) -> impl Iterator<Item = &'static Decl<C>> {
        self.sections.iter().flat_map(|section| section.iter())
    }

    /// The declaration of `key`, by name or alias.
    pub fn find(&self, key: &str) -> Option<&'static Decl<C>> {
        self.decls()
            .find(|decl| decl.name == key || decl.aliases.contains(&key))
    }

    /// Sets `key` from `setting`: `Ok(false)` for a key the server does
    /// not know.
    pub fn apply(&self, config: &mut C, key: &str, setting: &Setting) -> Result<bool, String> {
        if let Some(decl) = self.find(key) {
            (decl.apply)(config, key, setting)?;
            return Ok(true);
        }
        for group in self.groups {
            if (group.apply)(config, key, setting)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every key taken (names, aliases, the groups' keys), for "did you
    /// mean".
    pub fn keys(&self) -> Vec<&'static str> {
        let declared = self
            .decls()
            .flat_map(|decl| std::iter::once(decl.name).chain(decl.aliases.iter().copied()));
        let grouped = self.groups.iter().flat_map(|group| group.keys.iter());
        declared.chain(grouped.copied()).collect()
    }

    /// The keys that may change while the server runs.
    pub fn online_keys(&self) -> Vec<&'static str> {
        self.decls()
            .filter(|decl| decl.online)
            .map(|decl| decl.name)
            .collect()
    }

    /// Every printed key and its value in force.
    pub fn render(&self, config: &C) -> Vec<(String, String)> {
        self.decls()
            .filter_map(|decl| decl.show.map(|show| (decl.name.to_string(), show(config))))
            .collect()
    }

    /// `key  [default] description` lines, for `--help`: `(online)` on a
    /// key that may change while the server runs, its aliases, then the
    /// groups' keys.
    pub fn help(&self) -> String {
        let width = self.decls().map(|d| d.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for decl in self.decls() {
            let default = match decl.default {
                "" => "unset".to_string(),
                text => text.replace('`', ""),
            };
            let online = if decl.online { " (online)" } else { "" };
            let aliases = match decl.aliases {
                [] => String::new(),
                names => format!(" (also {})", names.join(", ")),
            };
            out.push_str(&format!(
                "  {:width$}  [{default}] {}{online}{aliases}\n",
                decl.name, decl.doc
            ));
        }
        let grouped: Vec<&str> = self
            .groups
            .iter()
            .flat_map(|g| g.keys.iter())
            .copied()
            .collect();
        if !grouped.is_empty() {
            out.push_str(&format!("  and {} (see the README)\n", grouped.join(", ")));
        }
        out
    }
}

/// `(key, default)` of each row of a README's `| key | default | meaning |`
/// tables, for tests that hold them to the declarations; a row of two keys
/// (`` `a` / `b` | 1 / 2 ``) gives two; a key keeps a server note after it
/// (`` `kvConfigPath` (namesrv) `` gives `kvConfigPath (namesrv)`).
pub fn readme_defaults(readme: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in readme.lines() {
        if line.starts_with("| key | default |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        if !in_table || cells.len() < 3 || line.starts_with("|---") {
            continue;
        }
        let keys: Vec<&str> = cells[0].trim_start_matches("| ").split(" / ").collect();
        let defaults: Vec<&str> = match keys.len() {
            1 => vec![cells[1]],
            _ => cells[1].split(" / ").collect(),
        };
        for (key, default) in keys.iter().zip(defaults) {
            let key = key.trim().replacen('`', "", 2);
            rows.push((key.to_string(), default.trim().to_string()));
        }
    }
    rows
}

#[cfg(test)]
mod tests;

/// One [`Decl`], tersely: `decl!("name" | "alias", "default", online,
/// "doc", |c, k, s| c.x = parse(k, s)?, |c| c.x.to_string())`; `start`
/// instead of `online` for a key read at start; the second closure, how
/// GET_BROKER_CONFIG prints it, may be left out.
#[macro_export]
macro_rules! decl {
    ($name:literal $(| $alias:literal)*, $default:literal, $when:ident, $doc:literal,
     |$c:pat_param, $k:pat_param, $s:pat_param| $set:expr
     $(, |$sc:pat_param| $show:expr)? $(,)?) => {
        $crate::settings::Decl {
            name: $name,
            aliases: &[$($alias),*],
            default: $default,
            online: $crate::decl!(@when $when),
            doc: $doc,
            apply: |$c, $k, $s| {
                $set;
                Ok(())
            },
            show: $crate::decl!(@show $(|$sc| $show)?),
        }
    };
    (@when online) => { true };
    (@when start) => { false };
    (@show) => { None };
    (@show |$sc:pat_param| $show:expr) => { Some(|$sc| $show) };
}

//! Declared settings: each server's keys are declared once, in the crate
//! that owns them, as a [`Table`] of [`Decl`]s (name, aliases, default,
//! whether it changes online, a one-line description, how it is parsed
//! and printed). Properties files, `--set`, online changes, "did you
//! mean", `--help` and the README's key tables all read the table.
//!
//! A part of a config with keys of its own, declared in the crate that
//! owns it (TLS's `tls.*`), joins a server's table through [`nest`].
//!
//! The value helpers (`parse_value`, `parse_bool`, ...) word every refusal
//! the same way: where the value came from, the key, the value and what
//! the key takes.

mod online;
pub mod suggest;
mod values;

pub use online::{Online, Refusal};

pub use values::{
    core_list, invalid, non_empty, parse_bool, parse_port, parse_value, percent, positive,
    positive_count, ratio_percent, Setting,
};

/// Parses one value into the config; the key is passed as written (an
/// alias stays an alias in error messages).
pub type Apply<C> = fn(&mut C, &str, &Setting) -> Result<(), String>;
/// The value in force, as a properties file would set it; the key is the
/// declared name (so a nested key finds its declaration in the part).
pub type Show<C> = fn(&C, &str) -> String;

/// One setting, declared once.
pub struct Decl<C: 'static> {
    pub name: &'static str,
    /// Other spellings taken for it (Java's older names).
    pub aliases: &'static [&'static str],
    /// The default, as the README's key tables write it (`` `true` ``,
    /// `72`, `1 GiB`); empty or `-`: none (unset).
    pub default: &'static str,
    /// Read at each use, so UPDATE_BROKER_CONFIG may change it.
    pub online: bool,
    /// What it does, in one line.
    pub doc: &'static str,
    pub apply: Apply<C>,
    /// How GET_BROKER_CONFIG prints it; `None`: not printed.
    pub show: Option<Show<C>>,
}

impl<C> Clone for Decl<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Decl<C> {}

/// A part of a config with settings of its own, declared in the crate that
/// owns the part (TLS's `tls.*` keys, over `TlsSettings`; ACL 1.0's admin
/// keys): a server whose config holds the part in a field takes them with
/// [`nest`] or [`nest_printed`].
pub trait Part<C: 'static>: 'static {
    type Of: 'static;
    /// The part's declarations.
    const DECLS: &'static [Decl<Self::Of>];
    /// Where the config holds the part.
    fn part(config: &mut C) -> &mut Self::Of;
    /// The same, to read (to print a key).
    fn part_ref(config: &C) -> &Self::Of;
}

/// The part's declarations as the config's own (same names, aliases,
/// defaults and descriptions), for a section of its [`Table`]; not
/// printed by GET_*_CONFIG.
pub const fn nest<C: 'static, P: Part<C>, const N: usize>() -> [Decl<C>; N] {
    nest_with::<C, P, N>(false)
}

/// As [`nest`], and GET_*_CONFIG prints the keys the part prints.
pub const fn nest_printed<C: 'static, P: Part<C>, const N: usize>() -> [Decl<C>; N] {
    nest_with::<C, P, N>(true)
}

const fn nest_with<C: 'static, P: Part<C>, const N: usize>(printed: bool) -> [Decl<C>; N] {
    assert!(P::DECLS.len() == N, "N is the part's key count");
    let mut out = [Decl {
        name: "",
        aliases: &[],
        default: "",
        online: false,
        doc: "",
        apply: apply_part::<C, P>,
        show: None,
    }; N];
    let mut i = 0;
    while i < N {
        let decl = &P::DECLS[i];
        if printed && decl.show.is_some() {
            out[i].show = Some(show_part::<C, P>);
        }
        out[i].name = decl.name;
        out[i].aliases = decl.aliases;
        out[i].default = decl.default;
        out[i].online = decl.online;
        out[i].doc = decl.doc;
        i += 1;
    }
    out
}

/// Sets a nested key: its declaration in the part, on the config's part.
fn apply_part<C: 'static, P: Part<C>>(
    config: &mut C,
    key: &str,
    setting: &Setting,
) -> Result<(), String> {
    match P::DECLS
        .iter()
        .find(|decl| decl.name == key || decl.aliases.contains(&key))
    {
        Some(decl) => (decl.apply)(P::part(config), key, setting),
        None => Err(format!(
            "{}: {key} is not a key of this part",
            setting.origin
        )),
    }
}

/// Prints a nested key: its declaration in the part, of the config's part.
fn show_part<C: 'static, P: Part<C>>(config: &C, key: &str) -> String {
    let shown = P::DECLS.iter().find(|decl| decl.name == key);
    match shown.and_then(|decl| decl.show) {
        Some(show) => show(P::part_ref(config), key),
        None => String::new(),
    }
}

/// A server's settings: its declarations, by section.
pub struct Table<C: 'static> {
    pub sections: &'static [&'static [Decl<C>]],
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
        match self.find(key) {
            Some(decl) => (decl.apply)(config, key, setting).map(|()| true),
            None => Ok(false),
        }
    }

    /// Every key taken (names and aliases), for "did you mean".
    pub fn keys(&self) -> Vec<&'static str> {
        self.decls()
            .flat_map(|decl| std::iter::once(decl.name).chain(decl.aliases.iter().copied()))
            .collect()
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
            .filter_map(|decl| {
                decl.show
                    .map(|show| (decl.name.to_string(), show(config, decl.name)))
            })
            .collect()
    }

    /// `key  [default] description` lines, for `--help`: `(online)` on a
    /// key that may change while the server runs, its aliases.
    pub fn help(&self) -> String {
        let width = self.decls().map(|d| d.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for decl in self.decls() {
            let default = match decl.default {
                "" | "-" => "unset".to_string(),
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
        $crate::Decl {
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
    (@show |$sc:pat_param| $show:expr) => { Some(|$sc, _| $show) };
}

/// A part's declarations nested into a server's table (see [`Part`]):
/// `nested!(Config, field: Of = DECLS)` (not printed, [`nest`]) or
/// `nested!(printed Config, field: Of = DECLS)` ([`nest_printed`]), the
/// value of a `static [Decl<Config>; DECLS.len()]`; the part is
/// `config.field`.
#[macro_export]
macro_rules! nested {
    (printed $config:ty, $field:ident: $of:ty = $decls:expr) => {
        $crate::nested!(@nest nest_printed, $config, $field, $of, $decls)
    };
    ($config:ty, $field:ident: $of:ty = $decls:expr) => {
        $crate::nested!(@nest nest, $config, $field, $of, $decls)
    };
    (@nest $how:ident, $config:ty, $field:ident, $of:ty, $decls:expr) => {{
        struct NestedPart;
        impl $crate::Part<$config> for NestedPart {
            type Of = $of;
            const DECLS: &'static [$crate::Decl<$of>] = &$decls;
            fn part(config: &mut $config) -> &mut $of {
                &mut config.$field
            }
            fn part_ref(config: &$config) -> &$of {
                &config.$field
            }
        }
        $crate::$how::<$config, NestedPart, { $decls.len() }>()
    }};
}

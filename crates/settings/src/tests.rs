use super::*;

#[derive(Default, Clone)]
struct Toy {
    port: u16,
    on: bool,
    inner: Inner,
}

/// A part with its own keys, declared apart.
#[derive(Default, Clone)]
struct Inner {
    level: u8,
}

static INNER: [Decl<Inner>; 1] = [crate::decl!(
    "inner.level" | "innerLevel",
    "0",
    start,
    "a nested key",
    |c, k, s| c.level = percent(k, s)?
)];

struct InnerPart;

impl Part<Toy> for InnerPart {
    type Of = Inner;
    const DECLS: &'static [Decl<Inner>] = &INNER;
    fn part(config: &mut Toy) -> &mut Inner {
        &mut config.inner
    }
}

static NESTED: [Decl<Toy>; 1] = nest::<Toy, InnerPart, 1>();

static TOY: Table<Toy> = Table {
    sections: &[
        &[
            Decl {
                name: "port",
                aliases: &["listenPort"],
                default: "0",
                online: false,
                doc: "where to listen",
                apply: |c, k, s| {
                    c.port = parse_port(k, s)?;
                    Ok(())
                },
                show: Some(|c| c.port.to_string()),
            },
            crate::decl!("on", "`false`", online, "a switch", |c, k, s| c.on =
                parse_bool(k, s)?),
        ],
        &NESTED,
    ],
};

#[test]
fn a_table_applies_by_name_alias_and_group() {
    let mut toy = Toy::default();
    let at = |v: &str| Setting::from_flag(v.into(), "line 1".into());
    assert_eq!(TOY.apply(&mut toy, "listenPort", &at("9")), Ok(true));
    assert_eq!(toy.port, 9);
    assert_eq!(TOY.apply(&mut toy, "on", &at("true")), Ok(true));
    assert!(toy.on);
    assert_eq!(TOY.apply(&mut toy, "innerLevel", &at("7")), Ok(true));
    assert_eq!(toy.inner.level, 7);
    let nested = TOY.apply(&mut toy, "inner.level", &at("0")).unwrap_err();
    assert!(nested.contains("for inner.level"), "{nested}");
    assert_eq!(TOY.apply(&mut toy, "nope", &at("x")), Ok(false));
    let refused = TOY.apply(&mut toy, "listenPort", &at("x")).unwrap_err();
    assert!(refused.contains("for listenPort"), "{refused}");
    assert_eq!(
        TOY.keys(),
        vec!["port", "listenPort", "on", "inner.level", "innerLevel"]
    );
    assert_eq!(TOY.online_keys(), vec!["on"]);
    assert_eq!(
        TOY.render(&toy),
        vec![("port".to_string(), "9".to_string())]
    );
    assert!(TOY.help().contains("[false] a switch"), "{}", TOY.help());
}

#[test]
fn online_changes_take_online_keys_only_and_all_or_nothing() {
    let toy = Toy::default();
    let to = Online {
        server: "toy",
        file: "toy.conf",
        origin: "UPDATE",
        black_list: &["secret"],
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let on = TOY
        .apply_online(&toy, &pairs(&[("on", "true")]), &to)
        .unwrap();
    assert!(on.on);
    let start = TOY.apply_online(&toy, &pairs(&[("on", "true"), ("port", "1")]), &to);
    assert!(
        matches!(start, Err(OnlineRefusal::Invalid(why)) if why.contains("`port` is read at start"))
    );
    let typo = TOY.apply_online(&toy, &pairs(&[("onn", "true")]), &to);
    assert!(matches!(typo, Err(OnlineRefusal::Invalid(why)) if why.contains("did you mean `on`?")));
    let bad = TOY.apply_online(&toy, &pairs(&[("on", "maybe")]), &to);
    assert!(matches!(bad, Err(OnlineRefusal::Invalid(why)) if why.starts_with("UPDATE: ")));
    let black = TOY.apply_online(&toy, &pairs(&[("secret", "1")]), &to);
    assert_eq!(black.err(), Some(OnlineRefusal::BlackListed));
}

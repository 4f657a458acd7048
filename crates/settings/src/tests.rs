use ferrocket_protocol::codes::response_code as rc;

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
    |c, k, s| c.level = percent(k, s)?,
    |c| c.level.to_string(),
)];

struct InnerPart;

impl Part<Toy> for InnerPart {
    type Of = Inner;
    const DECLS: &'static [Decl<Inner>] = &INNER;
    fn part(config: &mut Toy) -> &mut Inner {
        &mut config.inner
    }
    fn part_ref(config: &Toy) -> &Inner {
        &config.inner
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
                show: Some(|c, _| c.port.to_string()),
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

static PRINTED: [Decl<Toy>; 1] = crate::nested!(printed Toy, inner: Inner = INNER);

static PRINTING: Table<Toy> = Table {
    sections: &[&PRINTED],
};

/// A part nested with `nested!(printed ..)` prints its keys as the part does,
/// of the config's part; `nest` prints none (above).
#[test]
fn a_printed_part_shows_its_keys() {
    let mut toy = Toy::default();
    toy.inner.level = 42;
    assert_eq!(
        PRINTING.render(&toy),
        vec![("inner.level".to_string(), "42".to_string())]
    );
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
    let invalid = |refused: Result<Toy, Refusal>, words: &str| {
        let refusal = refused.err().expect("refused");
        assert_eq!(refusal.code, rc::INVALID_PARAMETER, "{refusal:?}");
        assert!(refusal.remark.contains(words), "{refusal:?}");
    };
    invalid(start, "`port` is read at start");
    let typo = TOY.apply_online(&toy, &pairs(&[("onn", "true")]), &to);
    invalid(typo, "did you mean `on`?");
    let bad = TOY.apply_online(&toy, &pairs(&[("on", "maybe")]), &to);
    invalid(bad, "UPDATE: ");
    let black = TOY.apply_online(&toy, &pairs(&[("secret", "1")]), &to);
    assert_eq!(black.err(), Some(Refusal::black_listed()));
}

/// An UPDATE_*_CONFIG body: its lines applied together, or the refusal
/// Java answers (a black-listed key NO_PERMISSION, a body that is not
/// UTF-8 INVALID_PARAMETER).
#[test]
fn an_update_body_is_parsed_and_applied_or_refused() {
    let to = Online {
        server: "toy",
        file: "toy.conf",
        origin: "UPDATE",
        black_list: &["secret"],
    };
    let toy = Toy::default();
    let (on, pairs) = TOY
        .update_online(&toy, b"# admin\non: true\n", &to)
        .unwrap();
    assert!(on.on);
    assert_eq!(pairs, vec![("on".to_string(), "true".to_string())]);
    let black = TOY.update_online(&toy, b"on=true\nsecret=1", &to);
    assert_eq!(black.err().map(|r| r.code), Some(rc::NO_PERMISSION));
    let garbled = TOY.update_online(&toy, b"\xff=1", &to).err().unwrap();
    assert_eq!(garbled.code, rc::INVALID_PARAMETER);
    let start = TOY
        .update_online(&toy, b"on=true\nport=1", &to)
        .err()
        .unwrap();
    assert!(start.remark.contains("`port`"), "{start:?}");
}

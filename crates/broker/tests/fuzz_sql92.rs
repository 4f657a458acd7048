//! Fuzz target for SQL92 subscriptions (clients send them in heartbeats and
//! pulls): arbitrary, mutated and pathological expressions (deep nesting,
//! long IN lists, long chains, long strings) compile to `Ok` or `Err` and
//! evaluate without a panic or a stack overflow. `PROPTEST_CASES=N` for a
//! long run (default 20,000).

use ferrocket_broker::sql92::{compile, EXPRESSION_BYTES_MAX, NESTING_DEPTH_MAX};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(20_000)
}

const SEEDS: [&str; 8] = [
    "a = 'x' AND b > 3",
    "TAGS IN ('a', 'b') OR KEYS IS NOT NULL",
    "NOT (a BETWEEN 1 AND 10) AND c <> 'y'",
    "a IS NULL OR (b = TRUE AND c >= -1.5e3)",
    "name LIKE 'ab%' ESCAPE '!'",
    "x CONTAINS 'q' AND y STARTSWITH 'p' AND z ENDSWITH 'r'",
    "((a = 1))",
    "a = 'it''s'",
];

const WORDS: [&str; 24] = [
    "a", "b", "'x'", "1", "-2.5", "1e308", "AND", "OR", "NOT", "(", ")", "=", "<>", ">=", "IN",
    "BETWEEN", "IS", "NULL", "TRUE", "LIKE", "ESCAPE", ",", "'", "%",
];

fn pathological() -> Vec<String> {
    let deep = NESTING_DEPTH_MAX * 100;
    vec![
        format!("{}a = 1{}", "(".repeat(deep), ")".repeat(deep)),
        format!("{}a = 1", "NOT ".repeat(deep)),
        format!("a IN ({})", vec!["'v'"; 5_000].join(",")),
        vec!["a = 1"; 2_000].join(" AND "),
        vec!["a = 1"; 2_000].join(" OR "),
        format!("a = '{}'", "''".repeat(EXPRESSION_BYTES_MAX / 2)),
        format!("a LIKE '{}'", "%_".repeat(EXPRESSION_BYTES_MAX / 4)),
        "(".repeat(EXPRESSION_BYTES_MAX),
        "'".repeat(EXPRESSION_BYTES_MAX - 1),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    let mutated = (
        0..SEEDS.len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<char>()), 0..6),
    )
        .prop_map(|(i, edits)| {
            let mut chars: Vec<char> = SEEDS[i].chars().collect();
            for (at, c) in edits {
                let at = at.index(chars.len() + 1);
                if at < chars.len() && c.is_ascii_digit() {
                    chars.remove(at);
                } else {
                    chars.insert(at, c);
                }
            }
            chars.into_iter().collect()
        });
    let words = prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..40)
        .prop_map(|w| w.join(" "));
    prop_oneof![2 => any::<String>(), 4 => mutated, 4 => words]
}

fn exercise(text: &str) {
    if let Ok(compiled) = compile(text) {
        let props = [("a", "1"), ("b", "x"), ("TAGS", "a"), ("name", "abc")];
        let lookup = |name: &str| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let _ = compiled.matches(&lookup);
        let _ = compiled.matches(&|_: &str| None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn sql92_never_panics(text in expression()) {
        exercise(&text);
    }
}

#[test]
fn pathological_expressions_are_refused_or_evaluated_without_overflow() {
    for text in pathological() {
        exercise(&text);
    }
}

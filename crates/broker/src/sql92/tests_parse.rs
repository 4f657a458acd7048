//! Compile tests: what is accepted, what is refused (and where), limits,
//! and a fuzz loop showing `compile` never panics.

use super::{compile, EXPRESSION_BYTES_MAX, IN_LIST_LEN_MAX, NESTING_DEPTH_MAX};

fn error_at(expr: &str) -> usize {
    match compile(expr) {
        Ok(e) => panic!("{expr:?} compiled to {e:?}"),
        Err(e) => {
            assert!(e.to_string().contains("at byte"), "{e}");
            e.position
        }
    }
}

#[test]
fn valid_expressions_compile() {
    for expr in [
        "a = 'x'",
        "a <> 'x' AND b != 'y'",
        "a > 1 AND a >= 1 AND a < 1 AND a <= 1",
        "a BETWEEN 1 AND 2 OR a NOT BETWEEN 1.5 AND 2.5",
        "a IN ('x') OR a NOT IN ('x', 'y')",
        "a IS NULL OR a IS NOT NULL",
        "a CONTAINS 'x' OR a NOT STARTSWITH 'y' OR a ENDSWITH 'z'",
        "NOT (a = 1) AND -a < +3",
        "TRUE",
        "$x_1 = 'y' AND _under = 1",
        "a=1AND b=2",
        "a = 5L",
        "a > 5. AND a < .5e-3 AND a < 5E10 AND a < 5.E+2",
        "a > 9223372036854775807",
        "a > 0.0",
        "a = 1 = TRUE",
        "  a = 'x'  ",
        "a BETWEEN 2 AND 2",
        "a BETWEEN 2 AND -5",
    ] {
        if let Err(e) = compile(expr) {
            panic!("{expr:?}: {e}");
        }
    }
}

#[test]
fn lexical_errors() {
    assert_eq!(error_at("a = 'abc"), 4);
    assert_eq!(error_at("a = 'it''s"), 4);
    assert_eq!(error_at("a = 1 AND b ~ 2"), 12);
    assert_eq!(error_at("a ! 1"), 2);
    assert_eq!(error_at("a = 1 /* open"), 6);
    assert_eq!(error_at("a = 'x' AND ü = 1"), 12);
    assert_eq!(error_at("a = 007"), 4);
    assert_eq!(error_at("a > 99999999999999999999"), 4);
    assert_eq!(error_at("a > 1e400"), 4);
    assert_eq!(error_at("a = \"x\""), 4);
}

#[test]
fn missing_operands() {
    assert_eq!(error_at(""), 0);
    assert_eq!(error_at("   "), 3);
    assert_eq!(error_at("a ="), 3);
    assert_eq!(error_at("a = 1 AND"), 9);
    assert_eq!(error_at("AND a = 1"), 0);
    assert_eq!(error_at("a BETWEEN 1"), 11);
    assert_eq!(error_at("a BETWEEN 1 OR 2"), 12);
    assert_eq!(error_at("a IN ()"), 6);
    assert_eq!(error_at("a IN ('x',)"), 10);
    assert_eq!(error_at("a IN 'x'"), 5);
    assert_eq!(error_at("a IN ('x'"), 9);
    assert_eq!(error_at("()"), 1);
    assert_eq!(error_at("(a = 1"), 6);
    assert_eq!(error_at("a CONTAINS b"), 11);
    assert_eq!(error_at("a IS"), 4);
    assert_eq!(error_at("a IS NOT"), 8);
    assert_eq!(error_at("NOT"), 3);
}

#[test]
fn unknown_operators_and_trailing_garbage() {
    assert_eq!(error_at("a == 1"), 3);
    assert_eq!(error_at("a LIKE 'x%'"), 2);
    assert_eq!(error_at("a NOT LIKE 'x'"), 6);
    assert_eq!(error_at("a NOT = 'x'"), 6);
    assert_eq!(error_at("a = 1 b"), 6);
    assert_eq!(error_at("a = 1)"), 5);
    assert_eq!(error_at("a = 1 'x'"), 6);
    assert_eq!(error_at("a IS 5"), 5);
    assert_eq!(error_at("a IS NOT 5"), 9);
    assert_eq!(error_at("a IN (1, 2)"), 6);
}

#[test]
fn type_errors_java_reports_at_compile_time() {
    // Not a boolean.
    assert!(compile("'x'").is_err());
    assert!(compile("5").is_err());
    assert!(compile("-a").is_err());
    assert!(compile("a AND 5").is_err());
    assert!(compile("NOT 5").is_err());
    assert!(compile("(a > 1) OR 'x'").is_err());
    // Ordering needs numbers or properties.
    assert!(compile("a > 'x'").is_err());
    assert!(compile("a > TRUE").is_err());
    assert!(compile("a > NULL").is_err());
    assert!(compile("a > 1 > 2").is_err());
    assert!(compile("a BETWEEN 'a' AND 'b'").is_err());
    assert!(compile("'5' BETWEEN 1 AND 9").is_err());
    // Literal BETWEEN bounds must be ordered.
    assert!(compile("a BETWEEN 3 AND 1").is_err());
    assert!(compile("a BETWEEN 3.5 AND 3").is_err());
    // `= NULL` and boolean-vs-other literals.
    assert!(compile("a = NULL").is_err());
    assert!(compile("NULL <> a").is_err());
    assert!(compile("TRUE = 1").is_err());
    // IN needs a property.
    assert!(compile("5 IN ('x')").is_err());
    assert!(compile("(a = 1) IN ('x')").is_err());
    assert!(compile("(a) IN ('x')").is_ok());
}

#[test]
fn nesting_limits() {
    let ok = format!(
        "{}a = 1{}",
        "(".repeat(NESTING_DEPTH_MAX - 1),
        ")".repeat(NESTING_DEPTH_MAX - 1)
    );
    assert!(compile(&ok).is_ok());
    let deep = format!("{}a = 1{}", "(".repeat(1000), ")".repeat(1000));
    let err = compile(&deep).unwrap_err();
    assert!(err.message.contains("nested"), "{err}");
    assert!(compile(&format!("{}(a = 1)", "NOT ".repeat(1000))).is_err());
    assert!(compile(&format!("a > {}1", "-".repeat(1000))).is_err());
    // A long chain of equalities builds a tall tree.
    assert!(compile(&format!("a{}", " = 1".repeat(200))).is_err());
    // Long AND / OR chains are flat and fine.
    let chain = vec!["a = '1'"; 500].join(" OR ");
    assert!(compile(&chain).is_ok());
    let mixed = vec!["a = '1' AND b = '2'"; 300].join(" OR ");
    assert!(compile(&mixed).is_ok());
}

#[test]
fn size_limits() {
    let long = format!("a = '{}'", "x".repeat(EXPRESSION_BYTES_MAX));
    assert!(compile(&long).unwrap_err().message.contains("bytes"));
    let fits = format!("a = '{}'", "x".repeat(EXPRESSION_BYTES_MAX - 6));
    assert!(compile(&fits).is_ok());
    let values = |n: usize| {
        (0..n)
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(compile(&format!("a IN ({})", values(IN_LIST_LEN_MAX))).is_ok());
    let err = compile(&format!("a IN ({})", values(IN_LIST_LEN_MAX + 1))).unwrap_err();
    assert!(err.message.contains("IN list"), "{err}");
}

/// xorshift64*: a fixed-seed generator so the fuzz run is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn compile_and_eval_never_panic_on_random_input() {
    const PIECES: [&str; 40] = [
        "a",
        "b",
        "TAGS",
        "'x'",
        "'",
        "''",
        "1",
        "2.5",
        "-",
        "+",
        "(",
        ")",
        "(",
        ")",
        ",",
        "=",
        "<>",
        "!=",
        ">",
        ">=",
        "<",
        "<=",
        "AND",
        "OR",
        "NOT",
        "BETWEEN",
        "IN",
        "IS",
        "NULL",
        "TRUE",
        "FALSE",
        "CONTAINS",
        "STARTSWITH",
        "ENDSWITH",
        "--",
        "\n",
        "/*",
        "*/",
        "1e",
        ".",
    ];
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let props = [("a", "1"), ("b", "x"), ("TAGS", "2.5")];
    let lookup = |name: &str| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let mut compiled = 0;
    for round in 0..20_000 {
        let mut text = String::new();
        for _ in 0..rng.below(24) {
            if round % 2 == 0 {
                // Printable ASCII and a little whitespace.
                text.push(char::from(b' ' + rng.below(95) as u8));
            } else {
                text.push_str(PIECES[rng.below(PIECES.len())]);
                text.push(' ');
            }
        }
        if let Ok(expr) = compile(&text) {
            compiled += 1;
            let _ = expr.matches(&lookup);
            let _ = expr.matches(&|_| None);
        }
    }
    // The token-built half must reach valid expressions too.
    assert!(compiled > 50, "only {compiled} random expressions compiled");
}

#[test]
fn expressions_can_cross_threads() {
    fn send_sync<T: Send + Sync + Clone + 'static>(_: &T) {}
    let expr = compile("a = 'x'").unwrap();
    send_sync(&expr);
    let err = compile("a =").unwrap_err();
    send_sync(&err);
    let moved = std::thread::spawn(move || expr.matches(&|_| Some("x")))
        .join()
        .unwrap();
    assert!(moved);
}

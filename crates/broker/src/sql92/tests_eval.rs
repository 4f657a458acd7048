//! Evaluation tests: operators, three-valued logic and Java's conversions.

use super::eval::{eval, Val};
use super::{compile, Expression};

fn lookup<'p>(props: &'p [(&'p str, &'p str)]) -> impl Fn(&str) -> Option<&'p str> {
    move |name: &str| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

/// Whether `expr` matches a message with `props`.
fn hit(expr: &str, props: &[(&str, &str)]) -> bool {
    let compiled = compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    compiled.matches(&lookup(props))
}

/// The three-valued result: Some(Some(b)) TRUE/FALSE, Some(None) unknown,
/// None when Java would have thrown.
fn tri(expr: &str, props: &[(&str, &str)]) -> Option<Option<bool>> {
    let compiled: Expression = compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    match eval(&compiled.root, &lookup(props)) {
        Ok(Val::Bool(b)) => Some(Some(b)),
        Ok(Val::Null) => Some(None),
        Ok(other) => panic!("{expr} gave non-boolean {other:?}"),
        Err(_) => None,
    }
}

#[test]
fn string_equality_and_inequality() {
    assert!(hit("a = 'x'", &[("a", "x")]));
    assert!(!hit("a = 'x'", &[("a", "y")]));
    assert!(!hit("a = 'x'", &[]));
    assert!(hit("'x' = a", &[("a", "x")]));
    for op in ["<>", "!="] {
        let expr = format!("a {op} 'x'");
        assert!(hit(&expr, &[("a", "y")]), "{expr}");
        assert!(!hit(&expr, &[("a", "x")]), "{expr}");
        // Missing property: unknown, not true.
        assert_eq!(tri(&expr, &[]), Some(None), "{expr}");
    }
    // A string literal compares as a string, not as a number.
    assert!(!hit("a = '5'", &[("a", "5.0")]));
}

#[test]
fn numeric_comparisons_parse_the_property() {
    let five = [("a", "5")];
    assert!(hit("a > 3", &five));
    assert!(!hit("a > 5", &five));
    assert!(hit("a >= 5", &five));
    assert!(hit("a < 6", &five));
    assert!(!hit("a < 5", &five));
    assert!(hit("a <= 5", &five));
    assert!(hit("a = 5", &five));
    assert!(hit("a = 5", &[("a", "05")]));
    assert!(hit("a <> 4", &five));
    assert!(hit("3 < a", &five));
    assert!(hit("a > 2.5", &five));
    assert!(hit("a > 4.99", &five));
    assert!(hit("a = 5.0", &five));
    assert!(hit("a > 3.0", &[("a", "5.5")]));
    assert!(hit("a > -5", &[("a", "-3")]));
    assert!(hit("a < -2.5", &[("a", "-3")]));
    assert!(hit("a > 3000000000", &[("a", "3000000001")]));
    assert!(hit("a = 5L", &five));
    assert!(hit("a = 1.5E1", &[("a", "15")]));
    assert!(hit("a > .5", &[("a", "0.6")]));
    assert!(hit("a < 1e3", &[("a", " 999 ")]));
    // Two properties compare as numbers, not as text.
    assert!(hit("a > b", &[("a", "10"), ("b", "9")]));
    assert!(!hit("a < b", &[("a", "10"), ("b", "9")]));
    // Literal against literal.
    assert!(hit("5 = 5.0", &[]));
    assert!(hit("2 < 3000000000", &[]));
}

#[test]
fn unparsable_property_fails_the_whole_message_as_java_does() {
    // Java: Integer.valueOf throws; the broker's filter says "no match".
    assert_eq!(tri("a > 3", &[("a", "abc")]), None);
    assert_eq!(tri("a = 5", &[("a", "abc")]), None);
    // An integer literal parses the property as Integer: "5.5" and
    // "3000000001" do not fit.
    assert_eq!(tri("a > 3", &[("a", "5.5")]), None);
    assert_eq!(tri("a > 3", &[("a", "3000000001")]), None);
    // The failure ends the evaluation even inside OR ...
    let props = [("a", "abc"), ("b", "x")];
    assert!(!hit("a = 5 OR b = 'x'", &props));
    // ... unless OR stopped before reaching it.
    assert!(hit("b = 'x' OR a = 5", &props));
    assert_eq!(tri("a > b", &[("a", "1"), ("b", "z")]), None);
}

#[test]
fn between_is_inclusive() {
    for (v, inside) in [
        ("0", false),
        ("1", true),
        ("2", true),
        ("3", true),
        ("4", false),
    ] {
        assert_eq!(hit("a BETWEEN 1 AND 3", &[("a", v)]), inside, "{v}");
        assert_eq!(hit("a NOT BETWEEN 1 AND 3", &[("a", v)]), !inside, "{v}");
    }
    assert!(hit("a BETWEEN 1.5 AND 2.5", &[("a", "2")]));
    assert!(hit("a between -3 and -1", &[("a", "-2")]));
    assert!(!hit("a BETWEEN 1 AND 3", &[]));
    assert!(!hit("a NOT BETWEEN 1 AND 3", &[]));
    assert_eq!(tri("a NOT BETWEEN 1 AND 3", &[]), Some(None));
}

#[test]
fn in_lists() {
    let expr = "a IN ('x', 'y', 'it''s')";
    assert!(hit(expr, &[("a", "x")]));
    assert!(hit(expr, &[("a", "y")]));
    assert!(hit(expr, &[("a", "it's")]));
    assert!(!hit(expr, &[("a", "z")]));
    assert!(!hit(expr, &[]));
    let not_in = "a NOT IN ('x', 'y')";
    assert!(hit(not_in, &[("a", "z")]));
    assert!(!hit(not_in, &[("a", "x")]));
    assert_eq!(tri(not_in, &[]), Some(None));
    // Values compare as strings.
    assert!(!hit("a IN ('5')", &[("a", "5.0")]));
    let many: Vec<String> = (0..200).map(|i| format!("'v{i}'")).collect();
    let long = format!("a IN ({})", many.join(","));
    assert!(hit(&long, &[("a", "v0")]));
    assert!(hit(&long, &[("a", "v199")]));
    assert!(hit(&long, &[("a", "v57")]));
    assert!(!hit(&long, &[("a", "v200")]));
}

#[test]
fn is_null_and_is_not_null() {
    assert!(hit("a IS NULL", &[]));
    assert!(!hit("a IS NULL", &[("a", "")]));
    assert!(hit("a IS NOT NULL", &[("a", "")]));
    assert!(!hit("a IS NOT NULL", &[]));
    assert!(hit("(a = 'x') IS NULL", &[]));
    assert!(hit("a IS NULL AND b IS NOT NULL", &[("b", "1")]));
}

#[test]
fn three_valued_logic() {
    let and = "a = 'x' AND b = 'y'";
    assert_eq!(tri(and, &[("b", "z")]), Some(Some(false)));
    assert_eq!(tri(and, &[("b", "y")]), Some(None));
    assert_eq!(tri(and, &[("a", "x"), ("b", "y")]), Some(Some(true)));
    let or = "a = 'x' OR b = 'y'";
    assert_eq!(tri(or, &[("b", "y")]), Some(Some(true)));
    assert_eq!(tri(or, &[("b", "z")]), Some(None));
    assert_eq!(tri(or, &[("a", "q"), ("b", "z")]), Some(Some(false)));
    let not = "NOT (a = 'x')";
    assert_eq!(tri(not, &[]), Some(None));
    assert!(hit(not, &[("a", "y")]));
    assert!(!hit(not, &[("a", "x")]));
    assert_eq!(tri("a > 1 AND NULL", &[("a", "2")]), Some(None));
    assert_eq!(tri("a > 1 OR NULL", &[("a", "2")]), Some(Some(true)));
}

#[test]
fn java_null_quirks_are_kept() {
    // Java's equality: a missing left side is unknown, a missing right side
    // is FALSE, both missing is TRUE.
    assert_eq!(tri("a = b", &[("b", "1")]), Some(None));
    assert_eq!(tri("a = b", &[("a", "1")]), Some(Some(false)));
    assert_eq!(tri("a = b", &[]), Some(Some(true)));
    assert!(hit("'x' <> a", &[]));
}

#[test]
fn precedence_and_parentheses() {
    let props = [("a", "1"), ("b", "0"), ("c", "0")];
    assert!(hit("a = '1' OR b = '1' AND c = '1'", &props));
    assert!(!hit("(a = '1' OR b = '1') AND c = '1'", &props));
    assert!(hit("b = '1' AND c = '1' OR a = '1'", &props));
    assert!(!hit("b = '1' AND (c = '1' OR a = '1')", &props));
    assert!(hit("((a = '1'))", &props));
    assert!(hit("NOT (b = '1' OR c = '1')", &props));
    assert!(hit("NOT NOT (a = '1')", &props));
    assert!(hit("a > 0 AND b < 1 AND c = 0 AND a = 1", &props));
    // Comparisons bind tighter than AND, equality looser than BETWEEN/IN.
    assert!(hit("a BETWEEN 0 AND 2 AND b IN ('0')", &props));
}

#[test]
fn prefix_not_binds_tighter_than_comparison() {
    // Java parses `NOT a = 'x'` as `(NOT a) = 'x'`, which never matches.
    assert!(!hit("NOT a = 'x'", &[("a", "y")]));
    assert!(!hit("NOT a = 'x'", &[("a", "x")]));
    // A bare property is FALSE when present, unknown when absent.
    assert!(!hit("a", &[("a", "true")]));
    assert!(hit("NOT a", &[("a", "anything")]));
    assert!(!hit("NOT a", &[]));
}

#[test]
fn boolean_literals() {
    assert!(hit("TRUE", &[]));
    assert!(!hit("FALSE", &[]));
    assert!(!hit("NULL", &[]));
    assert!(hit("NOT FALSE", &[]));
    assert!(hit("a = TRUE", &[("a", "true")]));
    assert!(hit("a = TRUE", &[("a", "TRUE")]));
    assert!(!hit("a = TRUE", &[("a", "yes")]));
    assert!(hit("a = FALSE", &[("a", "no")]));
    assert!(hit("TRUE = TRUE AND FALSE <> TRUE", &[]));
    assert!(!hit("1 = TRUE", &[]));
}

#[test]
fn keywords_ignore_case_but_names_do_not() {
    let props = [("a", "2"), ("b", "x")];
    assert!(hit(
        "a between 1 and 3 and b in ('x') or c is not null",
        &props
    ));
    assert!(hit("a BeTwEeN 1 AnD 3 aNd NoT (b Is NuLl)", &props));
    assert!(hit("tRuE", &[]));
    assert!(!hit("A = '2'", &props));
    assert!(hit("A IS NULL", &props));
}

#[test]
fn quoted_strings() {
    assert!(hit("a = 'hello world'", &[("a", "hello world")]));
    assert!(hit("a = 'it''s'", &[("a", "it's")]));
    assert!(hit("a = ''''", &[("a", "'")]));
    assert!(hit("a = ''", &[("a", "")]));
    assert!(hit("a = 'héllo → ok'", &[("a", "héllo → ok")]));
    assert!(hit("a = 'AND OR ( ) --'", &[("a", "AND OR ( ) --")]));
}

#[test]
fn text_operators() {
    let props = [("a", "hello world")];
    assert!(hit("a CONTAINS 'lo w'", &props));
    assert!(!hit("a CONTAINS 'xyz'", &props));
    assert!(hit("a NOT CONTAINS 'xyz'", &props));
    assert!(hit("a STARTSWITH 'hell'", &props));
    assert!(!hit("a STARTSWITH 'world'", &props));
    assert!(hit("a NOT STARTSWITH 'world'", &props));
    assert!(hit("a ENDSWITH 'world'", &props));
    assert!(!hit("a not endswith 'world'", &props));
    // Missing property or empty needle: FALSE, even negated.
    assert_eq!(tri("a NOT CONTAINS 'x'", &[]), Some(Some(false)));
    assert!(hit("NOT (a CONTAINS 'x')", &[]));
    assert!(!hit("a CONTAINS ''", &props));
    assert!(!hit("a NOT CONTAINS ''", &props));
    // Not a string: FALSE.
    assert!(!hit("5 NOT CONTAINS 'x'", &[]));
}

#[test]
fn system_properties_are_plain_names() {
    let props = [("TAGS", "TagA"), ("KEYS", "k1")];
    assert!(hit("TAGS = 'TagA' AND KEYS IN ('k1', 'k2')", &props));
    assert!(hit("TAGS IS NOT NULL", &props));
    assert!(!hit("TAGS = 'TagB'", &props));
}

#[test]
fn comments_and_unary_signs() {
    let props = [("a", "x"), ("b", "y"), ("n", "6")];
    assert!(hit("a = 'x' /* both */ AND b = 'y' -- tail\n", &props));
    assert!(hit("-- lead\r a = 'x'", &props));
    // Without a line break, `--` is two minus signs, as in Java.
    assert!(hit("n > --5", &props));
    assert!(hit("n > +5", &props));
    assert!(hit("n = -(-6)", &props));
    // Negating a string gives NULL.
    assert_eq!(tri("-a > 1", &props), Some(None));
}

//! Per-message evaluation with RocketMQ's three-valued logic and its value
//! conversions (Java: `evaluate` of `ComparisonExpression`,
//! `LogicExpression`, `UnaryExpression`, run with string conversion on, as
//! `SelectorParser.parse` sets it).
//!
//! Property values are strings. Compared with a number, a property is
//! parsed as that number's Java type (`Integer`, `Long` or `Double`); two
//! strings compared with `<`-style operators are both parsed as doubles.
//! A value that does not parse makes Java throw, and the broker then treats
//! the message as not matching (`ExpressionMessageFilter` catches it): that
//! is [`Thrown`], which ends the whole evaluation. Evaluation allocates
//! nothing.

use super::ast::{Expression, Literal, Node, Order, TextOp};
use std::cmp::Ordering;

/// A runtime value (Java: the `Object` an `Expression` evaluates to).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Val<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// Java threw while evaluating; the message does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Thrown;

impl Expression {
    /// Whether a message with these properties passes the filter: true only
    /// when the expression evaluates to TRUE (NULL/unknown and evaluation
    /// failures are false). `properties` looks a property up by name, e.g.
    /// `&|name| map.get(name).map(String::as_str)`; system properties such
    /// as `TAGS` and `KEYS` are ordinary names here.
    pub fn matches<'p>(&self, properties: &dyn Fn(&str) -> Option<&'p str>) -> bool {
        matches!(eval(&self.root, properties), Ok(Val::Bool(true)))
    }
}

/// Evaluates `node`; `Val::Null` is SQL's unknown.
pub(super) fn eval<'a, 'p: 'a>(
    node: &'a Node,
    props: &dyn Fn(&str) -> Option<&'p str>,
) -> Result<Val<'a>, Thrown> {
    Ok(match node {
        Node::Literal(lit) => match lit {
            Literal::Null => Val::Null,
            Literal::Bool(b) => Val::Bool(*b),
            Literal::Int(v) => Val::Int(*v),
            Literal::Long(v) => Val::Long(*v),
            Literal::Double(v) => Val::Double(*v),
            Literal::Str(s) => Val::Str(s),
        },
        Node::Property(name) => props(name).map_or(Val::Null, Val::Str),
        Node::Negate(operand) => match eval(operand, props)? {
            Val::Int(v) => Val::Int(v.wrapping_neg()),
            Val::Long(v) => Val::Long(v.wrapping_neg()),
            Val::Double(v) => Val::Double(-v),
            _ => Val::Null,
        },
        Node::PropertyAsBool(name) => match props(name) {
            None => Val::Null,
            Some(_) => Val::Bool(false),
        },
        Node::Not(operand) => match eval(operand, props)? {
            Val::Null => Val::Null,
            Val::Bool(b) => Val::Bool(!b),
            _ => return Err(Thrown),
        },
        Node::And(items) => logic(items, false, props)?,
        Node::Or(items) => logic(items, true, props)?,
        Node::Equal(left, right) => {
            let lv = eval(left, props)?;
            let rv = eval(right, props)?;
            match (lv, rv) {
                (Val::Null, Val::Null) => Val::Bool(true),
                (Val::Null, _) => Val::Null,
                (_, Val::Null) => Val::Bool(false),
                _ => Val::Bool(java_compare(lv, rv)? == Ordering::Equal),
            }
        }
        Node::Compare(order, left, right) => {
            let lv = eval(left, props)?;
            if lv == Val::Null {
                return Ok(Val::Null);
            }
            let rv = eval(right, props)?;
            let ordering = match (lv, rv) {
                (_, Val::Null) => return Ok(Val::Null),
                (Val::Str(a), Val::Str(b)) => java_cmp_f64(parse_double(a)?, parse_double(b)?),
                _ => java_compare(lv, rv)?,
            };
            Val::Bool(match order {
                Order::Gt => ordering == Ordering::Greater,
                Order::Ge => ordering != Ordering::Less,
                Order::Lt => ordering == Ordering::Less,
                Order::Le => ordering != Ordering::Greater,
            })
        }
        Node::In {
            property,
            values,
            negated,
        } => match props(property) {
            None => Val::Null,
            Some(v) => {
                let found = values.binary_search_by(|x| (**x).cmp(v)).is_ok();
                Val::Bool(found != *negated)
            }
        },
        Node::Text {
            op,
            operand,
            needle,
            negated,
        } => {
            if needle.is_empty() {
                return Ok(Val::Bool(false));
            }
            match eval(operand, props)? {
                Val::Str(s) => {
                    let hit = match op {
                        TextOp::Contains => s.contains(&**needle),
                        TextOp::StartsWith => s.starts_with(&**needle),
                        TextOp::EndsWith => s.ends_with(&**needle),
                    };
                    Val::Bool(hit != *negated)
                }
                // Absent or not a string: FALSE, even when negated.
                _ => Val::Bool(false),
            }
        }
    })
}

/// AND (`stop_on` false) or OR (`stop_on` true) over left-nested operands:
/// stops at the first operand equal to `stop_on`; otherwise unknown if any
/// operand was unknown.
fn logic<'a, 'p: 'a>(
    items: &'a [Node],
    stop_on: bool,
    props: &dyn Fn(&str) -> Option<&'p str>,
) -> Result<Val<'a>, Thrown> {
    let mut unknown = false;
    for item in items {
        match eval(item, props)? {
            Val::Bool(b) if b == stop_on => return Ok(Val::Bool(stop_on)),
            Val::Bool(_) => {}
            Val::Null => unknown = true,
            _ => return Err(Thrown),
        }
    }
    Ok(if unknown {
        Val::Null
    } else {
        Val::Bool(!stop_on)
    })
}

/// Java: `ComparisonExpression.__compare` with string conversion on, for two
/// non-null values. Values of unrelated types order as "less" (never
/// equal); a string that does not parse as the other side's type throws.
pub(super) fn java_compare(l: Val<'_>, r: Val<'_>) -> Result<Ordering, Thrown> {
    use Val::*;
    Ok(match (l, r) {
        (Null, _) | (_, Null) => return Err(Thrown),
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_cmp_f64(a, b),
        (Str(a), Str(b)) => a.cmp(b),
        // Java casts the Boolean to String here and throws.
        (Bool(_), Str(_)) => return Err(Thrown),
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Int(a), Double(b)) => java_cmp_f64(f64::from(a), b),
        (Int(a), Str(b)) => a.cmp(&b.parse::<i32>().map_err(|_| Thrown)?),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Long(a), Double(b)) => java_cmp_f64(a as f64, b),
        (Long(a), Str(b)) => a.cmp(&b.parse::<i64>().map_err(|_| Thrown)?),
        (Double(a), Int(b)) => java_cmp_f64(a, f64::from(b)),
        (Double(a), Long(b)) => java_cmp_f64(a, b as f64),
        (Double(a), Str(b)) => java_cmp_f64(a, parse_double(b)?),
        (Str(a), Bool(b)) => a.eq_ignore_ascii_case("true").cmp(&b),
        (Str(a), Int(b)) => a.parse::<i32>().map_err(|_| Thrown)?.cmp(&b),
        (Str(a), Long(b)) => a.parse::<i64>().map_err(|_| Thrown)?.cmp(&b),
        (Str(a), Double(b)) => java_cmp_f64(parse_double(a)?, b),
        (Bool(_), _) | (Int(_) | Long(_) | Double(_), Bool(_)) => Ordering::Less,
    })
}

/// Java `Double.compareTo`: NaN equals itself and is above everything;
/// -0.0 is below 0.0.
pub(super) fn java_cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// Java `Double.valueOf(String)` for decimal text: surrounding whitespace
/// (chars up to U+0020) ignored, optional sign, `NaN`, `Infinity`, digits
/// with optional fraction and exponent, optional `f`/`d` suffix. Java's
/// hexadecimal form is not accepted.
pub(super) fn parse_double(text: &str) -> Result<f64, Thrown> {
    let t = text.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let magnitude = match body {
        "Infinity" => f64::INFINITY,
        "NaN" => f64::NAN,
        _ => {
            let digits = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
            let plain = digits
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
            let starts_ok = digits
                .as_bytes()
                .first()
                .is_some_and(|b| b.is_ascii_digit() || *b == b'.');
            if !plain || !starts_ok {
                return Err(Thrown);
            }
            digits.parse::<f64>().map_err(|_| Thrown)?
        }
    };
    Ok(if negative { -magnitude } else { magnitude })
}

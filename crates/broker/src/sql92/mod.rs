//! SQL92 message-property filters (subscriptions with expressionType
//! `SQL92`), compatible with RocketMQ's `filter` module (`SqlFilter`,
//! `SelectorParser`): [`compile`] once per subscription, then
//! [`Expression::matches`] per message on whichever shard serves the pull.
//! Pure code: no I/O, no threads; an [`Expression`] is `Send + Sync`.
//!
//! Accepted: property names, `'strings'` (`''` escapes a quote), integers,
//! decimals, `TRUE`, `FALSE`, `NULL`; `= <> != > >= < <=`; `[NOT] BETWEEN
//! a AND b`; `[NOT] IN ('x', ...)`; `IS [NOT] NULL`; `[NOT] CONTAINS`,
//! `STARTSWITH`, `ENDSWITH 'x'`; unary `+ -`; `AND`, `OR`, `NOT`,
//! parentheses; `--` and `/* */` comments. Keywords ignore case, property
//! names do not.
//!
//! Results follow Java's, quirks included: `a > 3` with `a = "5"` is true
//! (the property is parsed as the literal's type), a property that does not
//! parse (`a = "x"`) makes the whole message not match, a missing property
//! makes comparisons unknown (so `a <> 'x'` is false when `a` is absent),
//! `a NOT IN (...)` is unknown for a missing `a`, `NOT CONTAINS` is false
//! for a missing property, and prefix `NOT` binds tighter than comparisons
//! (`NOT a = 'x'` is `(NOT a) = 'x'`: use `NOT (a = 'x')`). A few things
//! Java refuses are accepted: `!=`, the literal `0.0`, a `--` comment at the
//! very end.

mod ast;
mod error;
mod eval;
mod lexer;
mod parser;

#[cfg(test)]
mod tests_eval;
#[cfg(test)]
mod tests_parse;

pub use ast::Expression;
pub use error::FilterError;

/// Expression type of SQL92 subscriptions (`ExpressionType.SQL92`).
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";
/// Longest expression accepted, in bytes.
pub const EXPRESSION_BYTES_MAX: usize = 16 * 1024;
/// Deepest nesting accepted: parentheses and prefix operators around any
/// point, and the height of the compiled tree (a chain of ANDs or ORs
/// counts as one level). Bounds recursion when compiling and evaluating.
pub const NESTING_DEPTH_MAX: usize = 64;
/// Most values in one `IN (...)` list.
pub const IN_LIST_LEN_MAX: usize = 1024;

/// Compiles a SQL92 filter expression (Java: `SqlFilter.compile`).
/// Errors carry the byte offset of the problem; the broker answers them
/// with SUBSCRIPTION_PARSE_FAILED.
pub fn compile(expression: &str) -> Result<Expression, FilterError> {
    parser::parse(expression)
}

//! The compiled form of a filter expression: a tree built once per
//! subscription by the parser and walked once per message by `eval`.

/// A literal (Java: `ConstantExpression`; `TRUE`, `FALSE` and `NULL` are
/// `BooleanConstantExpression`s).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    /// An integer literal that fits Java's `Integer`.
    Int(i32),
    /// An integer literal outside `Integer`'s range (Java `Long`).
    Long(i64),
    Double(f64),
    Str(Box<str>),
}

/// `>`, `>=`, `<`, `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    Gt,
    Ge,
    Lt,
    Le,
}

/// `CONTAINS`, `STARTSWITH`, `ENDSWITH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Literal(Literal),
    /// A message property by name (Java: `PropertyExpression`).
    Property(Box<str>),
    /// Unary minus; non-numbers become NULL.
    Negate(Box<Node>),
    /// A property used where a boolean is needed (Java: `BooleanCast`):
    /// NULL when absent, FALSE otherwise (property values are strings).
    PropertyAsBool(Box<str>),
    Not(Box<Node>),
    /// Left-nested ANDs flattened; same result and evaluation order.
    And(Vec<Node>),
    /// Left-nested ORs flattened; same result and evaluation order.
    Or(Vec<Node>),
    /// `=` (and `IS NULL`, which is `x = NULL` without the NULL check).
    Equal(Box<Node>, Box<Node>),
    Compare(Order, Box<Node>, Box<Node>),
    /// `[NOT] IN`: `values` sorted and deduplicated for binary search.
    In {
        property: Box<str>,
        values: Box<[Box<str>]>,
        negated: bool,
    },
    /// `[NOT] CONTAINS | STARTSWITH | ENDSWITH 'needle'`.
    Text {
        op: TextOp,
        operand: Box<Node>,
        needle: Box<str>,
        negated: bool,
    },
}

impl Node {
    /// Java: `instanceof BooleanExpression`.
    pub(super) fn is_boolean(&self) -> bool {
        match self {
            Node::Literal(lit) => matches!(lit, Literal::Null | Literal::Bool(_)),
            Node::Property(_) | Node::Negate(_) => false,
            Node::PropertyAsBool(_)
            | Node::Not(_)
            | Node::And(_)
            | Node::Or(_)
            | Node::Equal(..)
            | Node::Compare(..)
            | Node::In { .. }
            | Node::Text { .. } => true,
        }
    }
}

/// A compiled SQL92 filter (Java: the `BooleanExpression` returned by
/// `SqlFilter.compile`). Build with [`compile`](super::compile); evaluate
/// per message with [`Expression::matches`]. Immutable, `Send + Sync`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    pub(super) root: Node,
}

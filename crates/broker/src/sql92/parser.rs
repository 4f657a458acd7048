//! Recursive-descent parser for the SQL92 filter grammar, with the same
//! precedence and the same compile-time type checks as RocketMQ's
//! `SelectorParser.jj` and `ComparisonExpression.create*`:
//!
//! ```text
//! expr       := and (OR and)*
//! and        := equality (AND equality)*
//! equality   := comparison ( ('=' | '<>' | '!=') comparison | IS [NOT] NULL )*
//! comparison := unary ( ('>' | '>=' | '<' | '<=') unary
//!                     | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//!                     | [NOT] BETWEEN unary AND unary
//!                     | [NOT] IN '(' string (',' string)* ')' )*
//! unary      := '+' unary | '-' unary | NOT unary | primary
//! primary    := literal | identifier | '(' expr ')'
//! ```
//!
//! As in Java, prefix `NOT` binds tighter than comparisons: `NOT a = 'x'`
//! means `(NOT a) = 'x'`; write `NOT (a = 'x')`.

use super::ast::{Expression, Literal, Node, Order, TextOp};
use super::error::FilterError;
use super::eval::{java_compare, Val};
use super::lexer::{tokenize, Keyword, Tok, Token};
use super::{EXPRESSION_BYTES_MAX, IN_LIST_LEN_MAX, NESTING_DEPTH_MAX};
use std::cmp::Ordering;

/// A node and the height of its tree (a leaf is 1).
type Parsed = (Node, usize);

pub(super) fn parse(src: &str) -> Result<Expression, FilterError> {
    if src.len() > EXPRESSION_BYTES_MAX {
        return Err(FilterError::new(
            EXPRESSION_BYTES_MAX,
            format!(
                "expression is {} bytes, more than the {EXPRESSION_BYTES_MAX} allowed",
                src.len()
            ),
        ));
    }
    let mut parser = Parser {
        tokens: tokenize(src)?,
        at: 0,
        nesting: 0,
    };
    let start = parser.pos();
    let parsed = parser.or_expr()?;
    if parser.peek() != &Tok::Eof {
        return Err(parser.unexpected("end of expression"));
    }
    let (root, _) = parser.as_bool(parsed, start)?;
    debug_assert_eq!(parser.nesting, 0);
    Ok(Expression { root })
}

struct Parser<'s> {
    tokens: Vec<Token<'s>>,
    at: usize,
    /// Open parentheses and prefix operators around the current position.
    nesting: usize,
}

impl<'s> Parser<'s> {
    fn peek(&self) -> &Tok<'s> {
        self.peek_at(0)
    }

    /// The token `ahead` places on; `Eof` past the end.
    fn peek_at(&self, ahead: usize) -> &Tok<'s> {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.at + ahead).min(last)].tok
    }

    fn pos(&self) -> usize {
        let last = self.tokens.len() - 1;
        self.tokens[self.at.min(last)].pos
    }

    fn bump(&mut self) -> Tok<'s> {
        let last = self.tokens.len() - 1;
        let tok = self.tokens[self.at.min(last)].tok.clone();
        if self.at < last {
            self.at += 1;
        }
        tok
    }

    fn unexpected(&self, wanted: &str) -> FilterError {
        FilterError::new(
            self.pos(),
            format!("expected {wanted}, found {}", describe(self.peek())),
        )
    }

    fn expect(&mut self, tok: &Tok<'_>, wanted: &str) -> Result<(), FilterError> {
        if self.peek() == tok {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(wanted))
        }
    }

    fn expect_string(&mut self) -> Result<Box<str>, FilterError> {
        match self.peek() {
            Tok::Str(_) => match self.bump() {
                Tok::Str(text) => Ok(text),
                _ => Err(self.unexpected("a string literal")),
            },
            _ => Err(self.unexpected("a string literal")),
        }
    }

    /// Counts one level of parenthesis or prefix operator.
    fn enter(&mut self) -> Result<(), FilterError> {
        self.nesting += 1;
        if self.nesting > NESTING_DEPTH_MAX {
            return Err(FilterError::new(
                self.pos(),
                format!("expression nested more than {NESTING_DEPTH_MAX} levels deep"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        debug_assert!(self.nesting > 0);
        self.nesting -= 1;
    }

    /// Wraps a new node over children of height `child_height`.
    fn node(&self, node: Node, child_height: usize, pos: usize) -> Result<Parsed, FilterError> {
        let height = child_height + 1;
        if height > NESTING_DEPTH_MAX {
            return Err(FilterError::new(
                pos,
                format!("expression nested more than {NESTING_DEPTH_MAX} levels deep"),
            ));
        }
        Ok((node, height))
    }

    /// Java: `asBooleanExpression`.
    fn as_bool(&self, (node, height): Parsed, pos: usize) -> Result<Parsed, FilterError> {
        match node {
            Node::Property(name) => Ok((Node::PropertyAsBool(name), height)),
            node if node.is_boolean() => Ok((node, height)),
            _ => Err(FilterError::new(
                pos,
                "expression will not result in a boolean value",
            )),
        }
    }

    fn or_expr(&mut self) -> Result<Parsed, FilterError> {
        self.logic_chain(Keyword::Or)
    }

    /// `operand (kw operand)*` for AND / OR, flattened into one node.
    fn logic_chain(&mut self, kw: Keyword) -> Result<Parsed, FilterError> {
        let start = self.pos();
        let first = self.logic_operand(kw)?;
        if self.peek() != &Tok::Kw(kw) {
            return Ok(first);
        }
        let first = self.as_bool(first, start)?;
        let mut height = first.1;
        let mut items = vec![first.0];
        while self.peek() == &Tok::Kw(kw) {
            self.bump();
            let pos = self.pos();
            let (item, h) = self.logic_operand(kw).and_then(|p| self.as_bool(p, pos))?;
            height = height.max(h);
            items.push(item);
        }
        let node = if kw == Keyword::Or {
            Node::Or(items)
        } else {
            Node::And(items)
        };
        self.node(node, height, start)
    }

    fn logic_operand(&mut self, kw: Keyword) -> Result<Parsed, FilterError> {
        if kw == Keyword::Or {
            self.logic_chain(Keyword::And)
        } else {
            self.equality()
        }
    }

    fn equality(&mut self) -> Result<Parsed, FilterError> {
        let mut left = self.comparison()?;
        loop {
            let pos = self.pos();
            left = match self.peek() {
                Tok::Eq | Tok::Ne => {
                    let negated = self.bump() == Tok::Ne;
                    let right = self.comparison()?;
                    let equal = self.equal(left, right, pos)?;
                    if negated {
                        self.node(Node::Not(Box::new(equal.0)), equal.1, pos)?
                    } else {
                        equal
                    }
                }
                Tok::Kw(Keyword::Is) => {
                    self.bump();
                    let negated = self.peek() == &Tok::Kw(Keyword::Not);
                    if negated {
                        self.bump();
                    }
                    self.expect(&Tok::Kw(Keyword::Null), "NULL")?;
                    let null = Box::new(Node::Literal(Literal::Null));
                    let is_null = self.node(Node::Equal(Box::new(left.0), null), left.1, pos)?;
                    if negated {
                        self.node(Node::Not(Box::new(is_null.0)), is_null.1, pos)?
                    } else {
                        is_null
                    }
                }
                _ => return Ok(left),
            };
        }
    }

    /// Java: `ComparisonExpression.createEqual`.
    fn equal(&self, left: Parsed, right: Parsed, pos: usize) -> Result<Parsed, FilterError> {
        for (side, _) in [&left, &right] {
            if matches!(side, Node::Literal(Literal::Null)) {
                return Err(FilterError::new(
                    pos,
                    "NULL cannot be compared with '='; use IS NULL",
                ));
            }
        }
        if let (Node::Literal(Literal::Bool(_)), Node::Literal(lit)) = (&left.0, &right.0) {
            if !matches!(lit, Literal::Bool(_)) {
                return Err(FilterError::new(
                    pos,
                    "a boolean literal cannot be compared with a non-boolean literal",
                ));
            }
        }
        let height = left.1.max(right.1);
        self.node(
            Node::Equal(Box::new(left.0), Box::new(right.0)),
            height,
            pos,
        )
    }

    fn comparison(&mut self) -> Result<Parsed, FilterError> {
        let mut left = self.unary()?;
        loop {
            let pos = self.pos();
            let order = match self.peek() {
                Tok::Gt => Some(Order::Gt),
                Tok::Ge => Some(Order::Ge),
                Tok::Lt => Some(Order::Lt),
                Tok::Le => Some(Order::Le),
                _ => None,
            };
            if let Some(order) = order {
                self.bump();
                let right = self.unary()?;
                left = self.order(order, left, right, pos)?;
                continue;
            }
            let negated = self.peek() == &Tok::Kw(Keyword::Not);
            let suffix = match self.peek_at(usize::from(negated)) {
                Tok::Kw(Keyword::Contains) => Suffix::Text(TextOp::Contains),
                Tok::Kw(Keyword::StartsWith) => Suffix::Text(TextOp::StartsWith),
                Tok::Kw(Keyword::EndsWith) => Suffix::Text(TextOp::EndsWith),
                Tok::Kw(Keyword::Between) => Suffix::Between,
                Tok::Kw(Keyword::In) => Suffix::In,
                _ if negated => {
                    self.bump();
                    return Err(self.unexpected("CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN"));
                }
                _ => return Ok(left),
            };
            if negated {
                self.bump();
            }
            self.bump();
            left = match suffix {
                Suffix::Text(op) => {
                    let needle = self.expect_string()?;
                    let node = Node::Text {
                        op,
                        operand: Box::new(left.0),
                        needle,
                        negated,
                    };
                    self.node(node, left.1, pos)?
                }
                Suffix::Between => {
                    let low = self.unary()?;
                    self.expect(&Tok::Kw(Keyword::And), "AND")?;
                    let high = self.unary()?;
                    self.between(left, low, high, negated, pos)?
                }
                Suffix::In => self.in_list(left, negated, pos)?,
            };
        }
    }

    /// Java: `checkLessThanOperand` — only numbers and non-boolean
    /// expressions can be ordered.
    fn check_orderable(&self, node: &Node, pos: usize) -> Result<(), FilterError> {
        let ok = match node {
            Node::Literal(lit) => {
                matches!(lit, Literal::Int(_) | Literal::Long(_) | Literal::Double(_))
            }
            node => !node.is_boolean(),
        };
        if ok {
            Ok(())
        } else {
            Err(FilterError::new(
                pos,
                "only numbers and properties can be compared with <, <=, >, >= or BETWEEN",
            ))
        }
    }

    fn order(
        &self,
        order: Order,
        left: Parsed,
        right: Parsed,
        pos: usize,
    ) -> Result<Parsed, FilterError> {
        self.check_orderable(&left.0, pos)?;
        self.check_orderable(&right.0, pos)?;
        let height = left.1.max(right.1);
        let node = Node::Compare(order, Box::new(left.0), Box::new(right.0));
        self.node(node, height, pos)
    }

    /// Java: `createBetween` (`v >= low AND v <= high`, literal bounds must
    /// be ordered) and `createNotBetween` (`v < low OR v > high`).
    fn between(
        &self,
        value: Parsed,
        low: Parsed,
        high: Parsed,
        negated: bool,
        pos: usize,
    ) -> Result<Parsed, FilterError> {
        if !negated {
            if let (Node::Literal(lo), Node::Literal(hi)) = (&low.0, &high.0) {
                if let (Some(lo), Some(hi)) = (number(lo), number(hi)) {
                    if java_compare(hi, lo) == Ok(Ordering::Less) {
                        return Err(FilterError::new(
                            pos,
                            "BETWEEN's lower bound is greater than its upper bound",
                        ));
                    }
                }
            }
        }
        let (first, second) = if negated {
            (Order::Lt, Order::Gt)
        } else {
            (Order::Ge, Order::Le)
        };
        let value_copy = (value.0.clone(), value.1);
        let (a, ha) = self.order(first, value_copy, low, pos)?;
        let (b, hb) = self.order(second, value, high, pos)?;
        let node = if negated {
            Node::Or(vec![a, b])
        } else {
            Node::And(vec![a, b])
        };
        self.node(node, ha.max(hb), pos)
    }

    /// Java: `createInFilter` — the left side must be a property.
    fn in_list(&mut self, left: Parsed, negated: bool, pos: usize) -> Result<Parsed, FilterError> {
        let property = match left.0 {
            Node::Property(name) => name,
            _ => {
                return Err(FilterError::new(
                    pos,
                    "IN needs a property name on its left",
                ))
            }
        };
        self.expect(&Tok::LParen, "'('")?;
        let mut values = Vec::new();
        loop {
            values.push(self.expect_string()?);
            if values.len() > IN_LIST_LEN_MAX {
                return Err(FilterError::new(
                    pos,
                    format!("IN list longer than {IN_LIST_LEN_MAX} values"),
                ));
            }
            if self.peek() == &Tok::Comma {
                self.bump();
            } else {
                self.expect(&Tok::RParen, "',' or ')'")?;
                break;
            }
        }
        values.sort_unstable();
        values.dedup();
        let node = Node::In {
            property,
            values: values.into_boxed_slice(),
            negated,
        };
        self.node(node, left.1, pos)
    }

    fn unary(&mut self) -> Result<Parsed, FilterError> {
        let pos = self.pos();
        match self.peek() {
            Tok::Plus | Tok::Minus | Tok::Kw(Keyword::Not) => {
                let op = self.bump();
                self.enter()?;
                let operand = self.unary();
                self.leave();
                let operand = operand?;
                match op {
                    // Unary plus changes nothing, not even the kind of node.
                    Tok::Plus => Ok(operand),
                    Tok::Minus => self.node(Node::Negate(Box::new(operand.0)), operand.1, pos),
                    _ => {
                        let (inner, height) = self.as_bool(operand, pos)?;
                        self.node(Node::Not(Box::new(inner)), height, pos)
                    }
                }
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Parsed, FilterError> {
        let literal = match self.peek() {
            Tok::Str(_) => match self.bump() {
                Tok::Str(text) => Literal::Str(text),
                _ => return Err(self.unexpected("a string literal")),
            },
            Tok::Int(v) => {
                let v = *v;
                self.bump();
                i32::try_from(v).map_or(Literal::Long(v), Literal::Int)
            }
            Tok::Float(v) => {
                let v = *v;
                self.bump();
                Literal::Double(v)
            }
            Tok::Kw(Keyword::True) => {
                self.bump();
                Literal::Bool(true)
            }
            Tok::Kw(Keyword::False) => {
                self.bump();
                Literal::Bool(false)
            }
            Tok::Kw(Keyword::Null) => {
                self.bump();
                Literal::Null
            }
            Tok::Ident(name) => {
                let name: Box<str> = (*name).into();
                self.bump();
                return Ok((Node::Property(name), 1));
            }
            Tok::LParen => {
                self.bump();
                self.enter()?;
                let inner = self.or_expr();
                self.leave();
                let inner = inner?;
                self.expect(&Tok::RParen, "')'")?;
                return Ok(inner);
            }
            _ => return Err(self.unexpected("an operand")),
        };
        Ok((Node::Literal(literal), 1))
    }
}

/// What follows an operand (after an optional NOT) in `comparison`.
enum Suffix {
    Text(TextOp),
    Between,
    In,
}

/// A numeric literal as a runtime value.
fn number(lit: &Literal) -> Option<Val<'_>> {
    match lit {
        Literal::Int(v) => Some(Val::Int(*v)),
        Literal::Long(v) => Some(Val::Long(*v)),
        Literal::Double(v) => Some(Val::Double(*v)),
        _ => None,
    }
}

fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::Ident(name) => format!("identifier {name}"),
        Tok::Str(_) => "a string literal".to_string(),
        Tok::Int(_) | Tok::Float(_) => "a number".to_string(),
        Tok::Kw(kw) => format!("{kw:?}").to_ascii_uppercase(),
        Tok::LParen => "'('".to_string(),
        Tok::RParen => "')'".to_string(),
        Tok::Comma => "','".to_string(),
        Tok::Eq => "'='".to_string(),
        Tok::Ne => "'<>'".to_string(),
        Tok::Gt => "'>'".to_string(),
        Tok::Ge => "'>='".to_string(),
        Tok::Lt => "'<'".to_string(),
        Tok::Le => "'<='".to_string(),
        Tok::Plus => "'+'".to_string(),
        Tok::Minus => "'-'".to_string(),
        Tok::Eof => "end of expression".to_string(),
    }
}

//! Tag subscriptions (`SubscriptionData` with expression type TAG): `*`
//! matches everything, `a || b` matches messages whose tag hash is one of
//! those tags' hashes, compared on the ConsumeQueue's stored tag hash as
//! Java's `ExpressionMessageFilter.isMatchedByConsumeQueue` does.

pub(crate) mod sql;

use ferrocket_protocol::properties::java_string_hash;

/// Expression type of tag subscriptions (`ExpressionType.TAG`).
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
/// Subscription to every message (`SubscriptionData.SUB_ALL`).
pub const SUB_ALL: &str = "*";
/// Longest subscription expression accepted.
pub const SUBSCRIPTION_BYTES_MAX: usize = 16 * 1024;

/// A parsed tag filter. `Send`: it travels with a forwarded pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagFilter {
    All,
    /// Hashes (Java `String.hashCode`) of the subscribed tags.
    Codes(Vec<i32>),
    /// A SQL92 property filter, decided per stored record
    /// ([`TagFilter::matches_record`]); every tag hash passes.
    Sql(crate::services::filter::sql::SqlFilter),
    /// A lite consumer's pop: the messages of one lite topic
    /// ([`TagFilter::matches_record`]); every tag hash passes.
    Lite(crate::services::lite::LiteFilter),
}

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterError {
    /// Not a tag expression (SQL92 and class filters are not supported).
    Unsupported(String),
    TooLong(usize),
}

impl TagFilter {
    /// Parses a subscription expression of `expression_type` (absent or
    /// empty means TAG).
    pub fn parse(expression: &str, expression_type: Option<&str>) -> Result<Self, FilterError> {
        if let Some(kind) = expression_type.map(str::trim).filter(|k| !k.is_empty()) {
            if !kind.eq_ignore_ascii_case(EXPRESSION_TYPE_TAG) {
                return Err(FilterError::Unsupported(kind.to_string()));
            }
        }
        if expression.len() > SUBSCRIPTION_BYTES_MAX {
            return Err(FilterError::TooLong(expression.len()));
        }
        let trimmed = expression.trim();
        if trimmed.is_empty() || trimmed == SUB_ALL {
            return Ok(TagFilter::All);
        }
        let mut codes: Vec<i32> = trimmed
            .split("||")
            .map(str::trim)
            .filter(|tag| !tag.is_empty())
            .map(java_string_hash)
            .collect();
        codes.sort_unstable();
        codes.dedup();
        Ok(TagFilter::Codes(codes))
    }

    /// Whether a message with this stored tag hash passes.
    pub fn matches(&self, tags_code: i64) -> bool {
        match self {
            TagFilter::All => true,
            // Java compares `tagsCode.intValue()`.
            TagFilter::Codes(codes) => codes.binary_search(&(tags_code as i32)).is_ok(),
            TagFilter::Sql(_) | TagFilter::Lite(_) => true,
        }
    }

    /// Whether a stored record (one whole record) that passed
    /// [`TagFilter::matches`] passes the whole filter.
    pub fn matches_record(&self, record: &[u8]) -> bool {
        match self {
            TagFilter::Sql(sql) => sql.matches_record(record),
            TagFilter::Lite(lite) => lite.matches_record(record),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::properties::tags_code;

    #[test]
    fn star_and_tag_lists() {
        let all = TagFilter::parse("*", None).unwrap();
        assert!(all.matches(0) && all.matches(tags_code("x")));
        let some = TagFilter::parse(" a || b ||", Some("TAG")).unwrap();
        assert!(some.matches(tags_code("a")));
        assert!(some.matches(tags_code("b")));
        assert!(!some.matches(tags_code("c")));
        assert!(
            !some.matches(0),
            "untagged messages do not match a tag list"
        );
        assert_eq!(TagFilter::parse("", None).unwrap(), TagFilter::All);
    }

    #[test]
    fn other_expression_types_are_refused() {
        assert_eq!(
            TagFilter::parse("a > 1", Some("SQL92")),
            Err(FilterError::Unsupported("SQL92".into()))
        );
    }
}

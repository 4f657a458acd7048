//! SQL92 property filters on pulls (`ExpressionMessageFilter` with
//! expressionType SQL92). The owner shard compiles the subscription once
//! per pull and, for each candidate message, evaluates it over the stored
//! record's properties (tag hashes cannot decide, so held pulls wake on
//! every new message of the queue). Only while `enablePropertyFilter` is
//! on; otherwise such pulls get Java's SYSTEM_ERROR answer.

use std::sync::Arc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::record::decode_record;

use crate::error::Reject;
use crate::services::filter::{FilterError, TagFilter};
use crate::services::lite::LiteFilter;
use crate::sql92::{self, Expression, EXPRESSION_BYTES_MAX, EXPRESSION_TYPE_SQL92};
use ferrocket_protocol::lite::LITE_EXPRESSION_TYPE;

/// A compiled SQL92 subscription. `Send + Sync`: it travels with a
/// forwarded pull. Equal when their source texts are.
#[derive(Clone)]
pub struct SqlFilter {
    source: Arc<str>,
    expression: Arc<Expression>,
}

impl std::fmt::Debug for SqlFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SqlFilter").field(&self.source).finish()
    }
}

impl PartialEq for SqlFilter {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for SqlFilter {}

impl SqlFilter {
    pub fn compile(source: &str) -> Result<Self, sql92::FilterError> {
        Ok(Self {
            expression: Arc::new(sql92::compile(source)?),
            source: Arc::from(source),
        })
    }

    /// Whether the stored record (one whole record) passes. A record that
    /// does not decode does not pass.
    pub fn matches_record(&self, record: &[u8]) -> bool {
        let Ok(view) = decode_record(record, false) else {
            return false;
        };
        let props = view.properties();
        self.expression.matches(&|name| props.get(name))
    }
}

/// The filter of a pull with `expression` of `expression_type` (absent or
/// empty: TAG; `LITE`: a lite consumer's pop). SQL92 needs `enablePropertyFilter`; an empty SQL92
/// expression matches everything.
pub(crate) fn pull_filter(
    expression: &str,
    expression_type: Option<&str>,
    enable_property_filter: bool,
) -> Result<TagFilter, Reject> {
    let kind = expression_type.map(str::trim).unwrap_or("");
    if kind.eq_ignore_ascii_case(LITE_EXPRESSION_TYPE) {
        return LiteFilter::parse(expression).map(TagFilter::Lite);
    }
    if kind.eq_ignore_ascii_case(EXPRESSION_TYPE_SQL92) {
        if !enable_property_filter {
            return Err(Reject::system(format!(
                "The broker does not support consumer to filter message by {kind}"
            )));
        }
        if expression.len() > EXPRESSION_BYTES_MAX {
            return Err(Reject::new(
                response_code::SUBSCRIPTION_PARSE_FAILED,
                format!(
                    "the subscription expression of {} bytes is too long",
                    expression.len()
                ),
            ));
        }
        if expression.trim().is_empty() {
            return Ok(TagFilter::All);
        }
        return SqlFilter::compile(expression)
            .map(TagFilter::Sql)
            .map_err(|err| {
                Reject::new(
                    response_code::SUBSCRIPTION_PARSE_FAILED,
                    format!("parse the consumer's subscription[{expression}] failed: {err}"),
                )
            });
    }
    TagFilter::parse(expression, expression_type).map_err(|err| match err {
        FilterError::Unsupported(kind) => Reject::system(format!(
            "The broker does not support consumer to filter message by {kind}"
        )),
        FilterError::TooLong(len) => Reject::new(
            response_code::SUBSCRIPTION_PARSE_FAILED,
            format!("the subscription expression of {len} bytes is too long"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use ferrocket_protocol::properties::Properties;
    use ferrocket_protocol::record::NewRecord;

    fn record(pairs: &[(&str, &str)]) -> BytesMut {
        let props: Properties = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let props = props.to_bytes();
        let host = "127.0.0.1:1".parse().unwrap();
        let mut out = BytesMut::new();
        NewRecord {
            topic: "T",
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 0,
            born_host: host,
            store_timestamp_ms: 0,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: b"b",
            properties: &props,
        }
        .encode(0, 0, &mut out)
        .unwrap();
        out
    }

    #[test]
    fn sql_filters_evaluate_record_properties() {
        let filter = pull_filter("a > 3 AND TAGS IN ('x', 'y')", Some("SQL92"), true).unwrap();
        let TagFilter::Sql(sql) = &filter else {
            panic!("not a SQL filter: {filter:?}");
        };
        assert!(filter.matches(12345), "tag hashes never exclude");
        assert!(sql.matches_record(&record(&[("a", "5"), ("TAGS", "x")])));
        assert!(!sql.matches_record(&record(&[("a", "2"), ("TAGS", "x")])));
        assert!(!sql.matches_record(&record(&[("TAGS", "x")])));
        assert!(!sql.matches_record(b"garbage"));
    }

    #[test]
    fn disabled_empty_and_bad_expressions() {
        let off = pull_filter("a > 1", Some("sql92"), false).unwrap_err();
        assert_eq!(off.code, response_code::SYSTEM_ERROR);
        assert!(off.remark.contains("does not support"), "{}", off.remark);
        assert_eq!(
            pull_filter(" ", Some("SQL92"), true).unwrap(),
            TagFilter::All
        );
        let bad = pull_filter("a >", Some("SQL92"), true).unwrap_err();
        assert_eq!(bad.code, response_code::SUBSCRIPTION_PARSE_FAILED);
        assert_eq!(pull_filter("*", None, false).unwrap(), TagFilter::All);
        let class = pull_filter("x", Some("CLASS"), true).unwrap_err();
        assert_eq!(class.code, response_code::SYSTEM_ERROR);
    }
}

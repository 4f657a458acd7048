//! Compile errors of SQL92 filter expressions.

/// Why an expression was refused. The broker answers it with
/// SUBSCRIPTION_PARSE_FAILED (23); `Display` gives the text for the remark.
/// Java: `MQFilterException` ("Invalid MessageSelector").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SQL92 expression: {message} at byte {position}")]
pub struct FilterError {
    /// Byte offset into the expression where the problem was found.
    pub position: usize,
    /// What is wrong, for humans.
    pub message: String,
}

impl FilterError {
    pub(crate) fn new(position: usize, message: impl Into<String>) -> Self {
        FilterError {
            position,
            message: message.into(),
        }
    }
}

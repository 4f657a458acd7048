//! The answer to a request the name server does not serve:
//! REQUEST_CODE_NOT_SUPPORTED (3) with Java's remark, or, for the requests
//! Java's name server handles (RocketMQ 5.5.0) and Ferrocket's refuses, a
//! remark that names the request and says why (tests/java_request_codes.rs
//! checks every such code is served or listed here).

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;

/// The refused requests, by RocketMQ `RequestCode`, with their name and why.
const REFUSED: &[(i32, &str, &str)] = &[
    (
        311,
        "GET_UNIT_TOPIC_LIST",
        "unit topics (topicSysFlag FLAG_UNIT) are not supported; \
         GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists every topic",
    ),
    (
        312,
        "GET_HAS_UNIT_SUB_TOPIC_LIST",
        "unit subscriptions (topicSysFlag FLAG_UNIT_SUB) are not supported; \
         GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists every topic",
    ),
    (
        313,
        "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
        "unit subscriptions (topicSysFlag FLAG_UNIT_SUB) are not supported; \
         GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists every topic",
    ),
];

/// REQUEST_CODE_NOT_SUPPORTED for `request`, with the reason when it is
/// one of [`REFUSED`].
pub(crate) fn answer(request: &RemotingCommand) -> RemotingCommand {
    let code = request.code;
    match REFUSED.iter().find(|(c, _, _)| *c == code) {
        Some((_, name, why)) => RemotingCommand::response_to(
            request,
            response_code::REQUEST_CODE_NOT_SUPPORTED,
            Some(format!(
                " request type {code} ({name}) not supported by Ferrocket: {why}"
            )),
        ),
        None => RemotingCommand::not_supported(request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_request_and_why() {
        let refused = answer(&RemotingCommand::request(311));
        assert_eq!(refused.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
        let remark = refused.remark.unwrap_or_default();
        assert!(remark.contains("(GET_UNIT_TOPIC_LIST) not supported by Ferrocket: unit topics"));
        let other = answer(&RemotingCommand::request(987_654));
        assert_eq!(
            other.remark.as_deref(),
            Some(" request type 987654 not supported")
        );
    }

    #[test]
    fn each_code_is_listed_once() {
        let mut codes: Vec<i32> = REFUSED.iter().map(|(c, _, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), REFUSED.len());
    }
}

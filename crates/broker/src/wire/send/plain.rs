//! The properties of a send stored as they came, with `UNIQ_KEY` (unless
//! the client set one) and `CLUSTER` appended. That is what decoding the
//! text, inserting both and encoding it again gives, for nearly every
//! message a client sends: no half message, no delay level or timer, and
//! text in canonical form ([`properties::find_canonical`]). Decoding and
//! encoding were 2.8% of a saturated send profile, and the seven lookups of
//! the message type another 0.8%; here one pass reads what the send needs.

use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::sys_flag;

use crate::services::append::tag_hash;
use crate::services::metrics::MessageType;
use crate::shard::replication::{wait_store_ok, wait_value_ok};

/// A sent message's properties as stored, and what the send reads from
/// them.
pub(super) struct SendProps {
    pub bytes: Vec<u8>,
    pub tags_code: i64,
    pub kind: MessageType,
    pub wait_store_ok: bool,
    /// A half message's unique key, answered as the send's
    /// `transactionId` (the general path sets it).
    pub transaction_id: Option<String>,
}

impl SendProps {
    /// From properties already decoded and routed (the general path).
    pub fn of(props: &Properties) -> Self {
        SendProps {
            bytes: props.to_bytes(),
            tags_code: tag_hash(props),
            kind: MessageType::of(props),
            wait_store_ok: wait_store_ok(props),
            transaction_id: None,
        }
    }
}

/// Properties that send a message elsewhere (`routing::route_send`,
/// `redirect_delayed`): their sends take the general path.
const ROUTING: [&str; 4] = [
    properties::DELAY,
    properties::TIMER_DELIVER_MS,
    properties::TIMER_DELAY_SEC,
    properties::TIMER_DELAY_MS,
];

/// What the plain path reads: its own four, then the message type's.
fn names() -> [&'static str; 11] {
    let [a, b, c, d, e, f, g] = MessageType::PROPERTIES;
    [
        properties::UNIQ_KEY,
        properties::CLUSTER,
        properties::TAGS,
        properties::WAIT,
        a,
        b,
        c,
        d,
        e,
        f,
        g,
    ]
}

/// The stored properties of a plain send of `text` with `sys_flag`, or
/// `None` for the general path: a half message, a routing property, a
/// `CLUSTER` set by the client, or text that is not canonical.
/// `unique_key` makes the key for a message that has none.
pub(super) fn plain(
    text: &str,
    sys_flag: i32,
    cluster: &str,
    unique_key: impl FnOnce() -> String,
) -> Option<SendProps> {
    if sys_flag::transaction_type(sys_flag) == sys_flag::TRANSACTION_PREPARED {
        return None;
    }
    let names = names();
    let [own_key, own_cluster, tags, wait, kind @ ..] = properties::find_canonical(text, names)?;
    let routed = names[4..]
        .iter()
        .zip(&kind)
        .any(|(name, value)| value.is_some() && ROUTING.contains(name));
    if routed || own_cluster.is_some() {
        return None;
    }
    let generated = own_key.is_none().then(unique_key);
    let added = generated
        .as_ref()
        .map_or(0, |key| properties::UNIQ_KEY.len() + key.len() + 2);
    let mut bytes =
        Vec::with_capacity(text.len() + added + properties::CLUSTER.len() + cluster.len() + 2);
    bytes.extend_from_slice(text.as_bytes());
    if let Some(key) = &generated {
        properties::encode_entry(&mut bytes, properties::UNIQ_KEY, key);
    }
    properties::encode_entry(&mut bytes, properties::CLUSTER, cluster);
    Some(SendProps {
        bytes,
        tags_code: tags.map_or(0, properties::tags_code),
        kind: MessageType::of_values(kind),
        wait_store_ok: wait_value_ok(wait),
        transaction_id: None,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The general path without routing: decode, add the key and the
    /// cluster, encode.
    fn general(text: &str, cluster: &str, key: &str) -> SendProps {
        let mut props = Properties::decode_str(text);
        if !matches!(props.unique_key(), Some(own) if !own.is_empty()) {
            props.insert(properties::UNIQ_KEY, key);
        }
        props.insert(properties::CLUSTER, cluster);
        SendProps::of(&props)
    }

    fn same(plain: &SendProps, general: &SendProps) -> bool {
        plain.bytes == general.bytes
            && plain.tags_code == general.tags_code
            && plain.kind == general.kind
            && plain.wait_store_ok == general.wait_store_ok
    }

    #[test]
    fn a_java_send_is_stored_with_key_and_cluster_appended() {
        let text = "TAGS\x01TagA\x02WAIT\x01false\x02__SHARDINGKEY\x01k\x02";
        let sent = plain(text, 0, "DefaultCluster", || "K".to_owned()).unwrap();
        let stored = format!("{text}UNIQ_KEY\x01K\x02CLUSTER\x01DefaultCluster\x02");
        assert_eq!(sent.bytes, stored.as_bytes());
        assert_eq!(sent.tags_code, properties::tags_code("TagA"));
        assert_eq!(sent.kind, MessageType::Fifo);
        assert!(!sent.wait_store_ok);
        assert!(same(&sent, &general(text, "DefaultCluster", "K")));
        let keyed = plain("UNIQ_KEY\x01own\x02", 0, "C", || unreachable!()).unwrap();
        assert_eq!(keyed.bytes, b"UNIQ_KEY\x01own\x02CLUSTER\x01C\x02");
    }

    #[test]
    fn routed_and_unusual_sends_take_the_general_path() {
        let prepared = sys_flag::with_transaction_type(0, sys_flag::TRANSACTION_PREPARED);
        assert!(plain("TAGS\x01a\x02", prepared, "C", String::new).is_none());
        for text in [
            "DELAY\x013\x02",
            "TIMER_DELAY_SEC\x0110\x02",
            "TIMER_DELIVER_MS\x011\x02",
            "TIMER_DELAY_MS\x011\x02",
            "CLUSTER\x01other\x02",
            "TAGS\x01a\x02TAGS\x01b\x02",
            "TAGS\x01a",
        ] {
            assert!(plain(text, 0, "C", String::new).is_none(), "{text:?}");
        }
        let rollback = sys_flag::with_transaction_type(0, sys_flag::TRANSACTION_ROLLBACK);
        assert!(plain("TAGS\x01a\x02", rollback, "C", String::new).is_some());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Whenever the plain path answers, it answers what the general
        /// path stores and reads.
        #[test]
        fn plain_agrees_with_general(
            entries in prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "TAGS", "WAIT", "UNIQ_KEY", "KEYS", "TRAN_MSG",
                        "__SHARDINGKEY", "__STARTDELIVERTIME", "CLUSTER", "DELAY", "",
                    ]),
                    prop::sample::select(vec!["", "true", "false", "x", "3", " False "]),
                ),
                0..6,
            ),
        ) {
            let text: String = entries
                .iter()
                .map(|(name, value)| format!("{name}\x01{value}\x02"))
                .collect();
            if let Some(sent) = plain(&text, 0, "Cl", || "Gen".to_owned()) {
                prop_assert!(same(&sent, &general(&text, "Cl", "Gen")), "{:?}", text);
            }
        }
    }
}

//! The properties of a send stored as they came, with `UNIQ_KEY` (unless
//! the client set one) and the broker's [`Stamp`] appended. That is what decoding the
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
    /// A timer message's recall handle (the general path sets it).
    pub recall_handle: Option<String>,
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
            recall_handle: None,
        }
    }
}

/// What the broker adds to every message it stores, as Java's 5.x broker
/// does: `CLUSTER` (`SendMessageProcessor`), and `MSG_REGION` and
/// `TRACE_ON` (`AbstractSendMessageProcessor.buildMsgContext`). A 5.x
/// consumer's trace hook takes its region from the consumed message's
/// `MSG_REGION` and drops every trace without one.
pub(crate) struct Stamp<'a> {
    pub cluster: &'a str,
    pub region: &'a str,
    pub trace_on: bool,
}

impl Stamp<'_> {
    fn trace_on(&self) -> &'static str {
        if self.trace_on {
            "true"
        } else {
            "false"
        }
    }

    /// Sets the stamp's properties, replacing a client's own values.
    pub fn insert_into(&self, props: &mut Properties) {
        props.insert(properties::CLUSTER, self.cluster);
        props.insert(properties::MSG_REGION, self.region);
        props.insert(properties::TRACE_ON, self.trace_on());
    }

    /// Appends the stamp's properties to encoded ones that hold none.
    pub fn encode_into(&self, bytes: &mut Vec<u8>) {
        properties::encode_entry(bytes, properties::CLUSTER, self.cluster);
        properties::encode_entry(bytes, properties::MSG_REGION, self.region);
        properties::encode_entry(bytes, properties::TRACE_ON, self.trace_on());
    }

    fn encoded_len(&self) -> usize {
        let entry = |name: &str, value: &str| name.len() + value.len() + 2;
        entry(properties::CLUSTER, self.cluster)
            + entry(properties::MSG_REGION, self.region)
            + entry(properties::TRACE_ON, self.trace_on())
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

/// What the plain path reads: its own six, then the message type's.
fn names() -> [&'static str; 13] {
    let [a, b, c, d, e, f, g] = MessageType::PROPERTIES;
    [
        properties::UNIQ_KEY,
        properties::CLUSTER,
        properties::MSG_REGION,
        properties::TRACE_ON,
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
/// stamp property set by the client, or text that is not canonical.
/// `unique_key` makes the key for a message that has none.
pub(super) fn plain(
    text: &str,
    sys_flag: i32,
    stamp: &Stamp<'_>,
    unique_key: impl FnOnce() -> String,
) -> Option<SendProps> {
    if sys_flag::transaction_type(sys_flag) == sys_flag::TRANSACTION_PREPARED {
        return None;
    }
    let names = names();
    let [own_key, own_cluster, own_region, own_trace, tags, wait, kind @ ..] =
        properties::find_canonical(text, names)?;
    let routed = names[6..]
        .iter()
        .zip(&kind)
        .any(|(name, value)| value.is_some() && ROUTING.contains(name));
    let stamped = own_cluster.is_some() || own_region.is_some() || own_trace.is_some();
    if routed || stamped {
        return None;
    }
    let generated = own_key.is_none().then(unique_key);
    let added = generated
        .as_ref()
        .map_or(0, |key| properties::UNIQ_KEY.len() + key.len() + 2);
    let mut bytes = Vec::with_capacity(text.len() + added + stamp.encoded_len());
    bytes.extend_from_slice(text.as_bytes());
    if let Some(key) = &generated {
        properties::encode_entry(&mut bytes, properties::UNIQ_KEY, key);
    }
    stamp.encode_into(&mut bytes);
    Some(SendProps {
        bytes,
        tags_code: tags.map_or(0, properties::tags_code),
        kind: MessageType::of_values(kind),
        wait_store_ok: wait_value_ok(wait),
        transaction_id: None,
        recall_handle: None,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The general path without routing: decode, add the key and the
    /// cluster, encode.
    fn stamp(cluster: &str) -> Stamp<'_> {
        Stamp {
            cluster,
            region: "DefaultRegion",
            trace_on: true,
        }
    }

    fn general(text: &str, cluster: &str, key: &str) -> SendProps {
        let mut props = Properties::decode_str(text);
        if !matches!(props.unique_key(), Some(own) if !own.is_empty()) {
            props.insert(properties::UNIQ_KEY, key);
        }
        stamp(cluster).insert_into(&mut props);
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
        let sent = plain(text, 0, &stamp("DefaultCluster"), || "K".to_owned()).unwrap();
        let stored = format!(
            "{text}UNIQ_KEY\x01K\x02CLUSTER\x01DefaultCluster\x02\
             MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02"
        );
        assert_eq!(sent.bytes, stored.as_bytes());
        assert_eq!(sent.tags_code, properties::tags_code("TagA"));
        assert_eq!(sent.kind, MessageType::Fifo);
        assert!(!sent.wait_store_ok);
        assert!(same(&sent, &general(text, "DefaultCluster", "K")));
        let keyed = plain("UNIQ_KEY\x01own\x02", 0, &stamp("C"), || unreachable!()).unwrap();
        let stored = "UNIQ_KEY\x01own\x02CLUSTER\x01C\x02MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02";
        assert_eq!(keyed.bytes, stored.as_bytes());
    }

    #[test]
    fn routed_and_unusual_sends_take_the_general_path() {
        let prepared = sys_flag::with_transaction_type(0, sys_flag::TRANSACTION_PREPARED);
        assert!(plain("TAGS\x01a\x02", prepared, &stamp("C"), String::new).is_none());
        for text in [
            "DELAY\x013\x02",
            "TIMER_DELAY_SEC\x0110\x02",
            "TIMER_DELIVER_MS\x011\x02",
            "TIMER_DELAY_MS\x011\x02",
            "CLUSTER\x01other\x02",
            "MSG_REGION\x01elsewhere\x02",
            "TRACE_ON\x01false\x02",
            "TAGS\x01a\x02TAGS\x01b\x02",
            "TAGS\x01a",
        ] {
            assert!(
                plain(text, 0, &stamp("C"), String::new).is_none(),
                "{text:?}"
            );
        }
        let rollback = sys_flag::with_transaction_type(0, sys_flag::TRANSACTION_ROLLBACK);
        assert!(plain("TAGS\x01a\x02", rollback, &stamp("C"), String::new).is_some());
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
                        "MSG_REGION", "TRACE_ON",
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
            if let Some(sent) = plain(&text, 0, &stamp("Cl"), || "Gen".to_owned()) {
                prop_assert!(same(&sent, &general(&text, "Cl", "Gen")), "{:?}", text);
            }
        }
    }
}

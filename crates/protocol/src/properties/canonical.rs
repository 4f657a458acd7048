//! Reading a properties string in place when decoding it and encoding it
//! again would give back the same bytes. A sent message's properties are
//! nearly always written that way (Java's `messageProperties2String`), and
//! the broker then stores them with only `UNIQ_KEY` and `CLUSTER` added:
//! appending those two to the text it received is the same as decoding,
//! inserting and encoding, at a fraction of the cost.

use super::{LINEAR_SCAN_ENTRIES_MAX, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};

/// The values of `names` in `text`, in one pass and without copying, when
/// `text` is canonical:
/// - every entry is `name \x01 value \x02`, the last one included, with a
///   name and a value that are not empty;
/// - no name appears twice;
/// - at most [`LINEAR_SCAN_ENTRIES_MAX`] entries.
///
/// Then `Properties::decode_str(text)` holds exactly those entries in that
/// order and encodes back to `text`. `None` for any other text: the caller
/// decodes it.
pub fn find_canonical<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<&'a str>; N]> {
    let mut found = [None; N];
    let mut seen = [""; LINEAR_SCAN_ENTRIES_MAX];
    let mut count = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(char::from(PROPERTY_SEPARATOR))?;
        let (name, value) = rest[..end].split_once(char::from(NAME_VALUE_SEPARATOR))?;
        let repeated = seen[..count].contains(&name);
        if name.is_empty() || value.is_empty() || repeated || count == seen.len() {
            return None;
        }
        seen[count] = name;
        count += 1;
        for (wanted, slot) in names.iter().zip(found.iter_mut()) {
            if name == *wanted {
                *slot = Some(value);
            }
        }
        rest = &rest[end + 1..];
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::Properties;
    use super::*;

    #[test]
    fn canonical_text_is_read_in_place() {
        let text = "TAGS\x01a\x02UNIQ_KEY\x01u\x01v\x02WAIT\x01true\x02";
        let found = find_canonical(text, ["WAIT", "TAGS", "UNIQ_KEY", "KEYS"]);
        assert_eq!(found, Some([Some("true"), Some("a"), Some("u\x01v"), None]));
        assert_eq!(find_canonical("", ["TAGS"]), Some([None]));
    }

    #[test]
    fn other_text_is_left_to_decoding() {
        for text in [
            "TAGS\x01a",                  // no final separator
            "TAGS\x01a\x02\x02",          // an empty entry
            "TAGS\x01\x02",               // an empty value
            "\x01a\x02",                  // an empty name
            "TAGS\x02",                   // no name-value separator
            "TAGS\x01a\x02TAGS\x01b\x02", // a repeated name
        ] {
            assert_eq!(find_canonical(text, ["TAGS"]), None, "{text:?}");
        }
        let many: String = (0..=LINEAR_SCAN_ENTRIES_MAX)
            .map(|i| format!("k{i}\x01v\x02"))
            .collect();
        assert_eq!(find_canonical(&many, ["k0"]), None);
        assert!(find_canonical(&many[many.find("k1\x01").unwrap()..], ["k1"]).is_some());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// In place or decoded: the same values, and canonical text is
        /// exactly what decoding and encoding it gives back.
        #[test]
        fn agrees_with_decoding(text in "([ab\x01\x02]{0,3}\x01?[xy\x01]{0,2}\x02?){0,6}") {
            let decoded = Properties::decode_str(&text);
            let round_trip = decoded.to_bytes() == text.as_bytes();
            match find_canonical(&text, ["a", "b", "ab"]) {
                Some(found) => {
                    prop_assert!(round_trip);
                    prop_assert_eq!(found, [decoded.get("a"), decoded.get("b"), decoded.get("ab")]);
                }
                None => prop_assert!(!round_trip || decoded.len() > LINEAR_SCAN_ENTRIES_MAX),
            }
        }
    }
}

//! Index keys and file names: the `topic#key` hash RocketMQ uses
//! (`IndexFile.indexKeyHashMethod`: Java `String.hashCode`, then `Math.abs`,
//! with `Integer.MIN_VALUE` mapped to 0) and the `yyyyMMddHHmmssSSS` file
//! names (`UtilAll.timeMillisToHumanString`; UTC here, Java uses local time).

/// Separator between topic and key (`IndexService.buildKey`).
pub const KEY_SEPARATOR: char = '#';
/// Separator between keys in the KEYS property (`MessageConst.KEY_SEPARATOR`).
pub const KEYS_PROPERTY_SEPARATOR: char = ' ';
/// Characters in an index file name (`yyyyMMddHHmmssSSS`).
pub const FILE_NAME_CHARS: usize = 17;
const _: () = assert!(FILE_NAME_CHARS == "yyyyMMddHHmmssSSS".len());

/// Java `String.hashCode` continued over `s` (UTF-16 code units).
fn java_hash_extend(mut hash: i32, s: &str) -> i32 {
    for unit in s.encode_utf16() {
        hash = hash.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    hash
}

/// The non-negative hash of `topic#key`, as RocketMQ stores it in an index
/// entry, computed without building the string.
pub fn index_key_hash(topic: &str, key: &str) -> i32 {
    let mut hash = java_hash_extend(0, topic);
    hash = hash.wrapping_mul(31).wrapping_add(KEY_SEPARATOR as i32);
    hash = java_hash_extend(hash, key);
    // Math.abs(Integer.MIN_VALUE) stays negative; RocketMQ then uses 0.
    if hash == i32::MIN {
        0
    } else {
        hash.abs()
    }
}

/// The keys RocketMQ indexes for one message, in its order: the UNIQ_KEY
/// first, then each non-empty KEYS entry (split on spaces).
pub fn message_index_keys<'a>(
    keys_property: Option<&'a str>,
    uniq_key: Option<&'a str>,
) -> Vec<&'a str> {
    let mut out = Vec::new();
    if let Some(uniq) = uniq_key.filter(|k| !k.is_empty()) {
        out.push(uniq);
    }
    if let Some(keys) = keys_property {
        out.extend(
            keys.split(KEYS_PROPERTY_SEPARATOR)
                .filter(|k| !k.is_empty()),
        );
    }
    out
}

/// Days since 1970-01-01 -> (year, month 1..=12, day 1..=31), proleptic
/// Gregorian (Howard Hinnant's civil_from_days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) -> days since 1970-01-01 (days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

const MS_PER_DAY: i64 = 86_400_000;

/// `yyyyMMddHHmmssSSS` (UTC) of a non-negative epoch time in milliseconds.
pub fn file_name_for_ms(ms: i64) -> String {
    let ms = ms.max(0);
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (hour, minute) = (in_day / 3_600_000, (in_day / 60_000) % 60);
    let (second, milli) = ((in_day / 1000) % 60, in_day % 1000);
    format!("{year:04}{month:02}{day:02}{hour:02}{minute:02}{second:02}{milli:03}")
}

/// Parses a name made by [`file_name_for_ms`]; `None` for anything else.
pub fn ms_for_file_name(name: &str) -> Option<i64> {
    if name.len() != FILE_NAME_CHARS || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |from: usize, to: usize| name.get(from..to)?.parse::<i64>().ok();
    let (year, month, day) = (field(0, 4)?, field(4, 6)?, field(6, 8)?);
    let (hour, minute, second, milli) = (
        field(8, 10)?,
        field(10, 12)?,
        field(12, 14)?,
        field(14, 17)?,
    );
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60;
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let ms = days * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + milli;
    // Reject dates like Feb 31 that do not round-trip.
    (file_name_for_ms(ms) == name).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn java_string_hash(s: &str) -> i32 {
        java_hash_extend(0, s)
    }

    #[test]
    fn hash_matches_java_string_hash_code() {
        // Values computed by java.lang.String#hashCode.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("TopicTest#KEY1"), {
            let mut h: i32 = 0;
            for c in "TopicTest#KEY1".chars() {
                h = h.wrapping_mul(31).wrapping_add(c as i32);
            }
            h
        });
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Non-BMP characters hash as their two UTF-16 surrogates.
        assert_eq!(java_string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
        assert_eq!(index_key_hash("T", "k"), java_string_hash("T#k").abs());
        assert!(index_key_hash("TopicTest", "ORDER-42") >= 0);
    }

    #[test]
    fn keys_uniq_first_then_split_keys() {
        assert_eq!(
            message_index_keys(Some("a  b c"), Some("U1")),
            vec!["U1", "a", "b", "c"]
        );
        assert!(message_index_keys(Some(""), Some("")).is_empty());
        assert_eq!(message_index_keys(None, Some("U")), vec!["U"]);
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(file_name_for_ms(0), "19700101000000000");
        // 2024-02-29T13:45:07.089Z
        let ms = 1_709_214_307_089;
        assert_eq!(file_name_for_ms(ms), "20240229134507089");
        assert_eq!(ms_for_file_name("20240229134507089"), Some(ms));
        assert_eq!(ms_for_file_name("20230229134507089"), None);
        assert_eq!(ms_for_file_name("2024022913450708"), None);
        assert_eq!(ms_for_file_name("2024022913450708x"), None);
        for ms in [1i64, 999, 86_399_999, 4_102_444_800_000] {
            assert_eq!(ms_for_file_name(&file_name_for_ms(ms)), Some(ms));
        }
    }
}

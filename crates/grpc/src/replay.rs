//! The replay window of signed v5 calls: a v5 client signs only its
//! `x-mq-date-time` (`yyyyMMdd'T'HHmmss'Z'`, UTC), so a captured call could
//! be sent again for as long as that signature is accepted. A signed call
//! whose date is further from the endpoint's clock than
//! `grpcRequestTimeSkewMs`, either way, is refused.

use std::time::{SystemTime, UNIX_EPOCH};

use ferrocket_acl::Denied;

/// Refuses a date outside `skew_ms` of now (0: any date passes).
pub fn check_date(date_time: Option<&str>, skew_ms: u64) -> Result<(), Denied> {
    if skew_ms == 0 {
        return Ok(());
    }
    let date_time = date_time.ok_or_else(|| Denied("x-mq-date-time is missing".into()))?;
    let signed_ms = parse(date_time).ok_or_else(|| {
        Denied(format!(
            "x-mq-date-time={date_time} is not yyyyMMdd'T'HHmmss'Z'"
        ))
    })?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let skew = i64::try_from(skew_ms).unwrap_or(i64::MAX);
    if (now_ms - signed_ms).abs() > skew {
        return Err(Denied(format!(
            "x-mq-date-time={date_time} is more than {skew_ms} ms from the server's clock \
             (grpcRequestTimeSkewMs); a replayed or badly clocked call"
        )));
    }
    Ok(())
}

/// Milliseconds since the epoch of `yyyyMMdd'T'HHmmss'Z'`.
pub fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hour, minute, second) = (num(9..11)?, num(11..13)?, num(13..15)?);
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `yyyyMMdd'T'HHmmss'Z'` of a time in ms since the epoch (tests, tools).
pub fn format(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now_ms() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .expect("after 1970")
    }

    #[test]
    fn dates_parse_and_format_both_ways() {
        assert_eq!(parse("19700101T000000Z"), Some(0));
        assert_eq!(parse("20261206T031500Z"), Some(1_796_526_900_000));
        assert_eq!(format(1_796_526_900_000), "20261206T031500Z");
        assert_eq!(format(951_782_400_000), "20000229T000000Z");
        for bad in [
            "",
            "20261206 031500Z",
            "20261306T000000Z",
            "2026120aT000000Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_date_outside_the_window_is_refused_either_way() {
        let now = now_ms();
        let window = 60_000;
        assert!(check_date(Some(&format(now)), window).is_ok());
        assert!(check_date(Some(&format(now - 120_000)), window).is_err());
        assert!(check_date(Some(&format(now + 120_000)), window).is_err());
        assert!(check_date(None, window).is_err());
        assert!(check_date(Some("yesterday"), window).is_err());
        assert!(
            check_date(Some(&format(now - 120_000)), 0).is_ok(),
            "0: off"
        );
    }
}

//! Times as mqadmin takes and shows them: `now`, epoch milliseconds, or
//! local `yyyy-MM-dd#HH:mm:ss:SSS` (Java's SimpleDateFormat in the default
//! time zone); shown as local `yyyy-MM-dd HH:mm:ss.SSS`.

/// Parses an mqadmin timestamp argument into epoch milliseconds.
pub fn parse_timestamp(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return Ok(now_ms());
    }
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    parse_local(text).ok_or_else(|| {
        format!(
            "invalid timestamp `{text}`: expected now, milliseconds since the epoch, or \
             yyyy-MM-dd#HH:mm:ss:SSS (local time), e.g. 2026-12-01#09:30:00:000"
        )
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `yyyy-MM-dd#HH:mm:ss:SSS` in local time (the `:SSS` may be left out).
fn parse_local(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('#')?;
    let date: Vec<i32> = numbers(date, '-')?;
    let time: Vec<i32> = numbers(time, ':')?;
    let ([year, month, day], [hour, minute, second, rest @ ..]) =
        (date.as_slice(), time.as_slice())
    else {
        return None;
    };
    let millis = match rest {
        [] => 0,
        [ms] if (0..1000).contains(ms) => *ms,
        _ => return None,
    };
    let in_range = (1..=12).contains(month)
        && (1..=31).contains(day)
        && (0..24).contains(hour)
        && (0..60).contains(minute)
        && (0..=60).contains(second);
    if !in_range || *year < 1970 {
        return None;
    }
    // SAFETY: an all-zero tm is a valid value to fill in.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = *day;
    tm.tm_hour = *hour;
    tm.tm_min = *minute;
    tm.tm_sec = *second;
    tm.tm_isdst = -1;
    // SAFETY: mktime reads and normalises the tm we own.
    let seconds = unsafe { libc::mktime(&mut tm) };
    if seconds == -1 || tm.tm_mday != *day {
        return None;
    }
    Some(seconds as i64 * 1_000 + i64::from(millis))
}

fn numbers(text: &str, separator: char) -> Option<Vec<i32>> {
    text.split(separator)
        .map(|part| part.trim().parse::<i32>().ok())
        .collect()
}

/// Epoch milliseconds as local `yyyy-MM-dd HH:mm:ss.SSS`.
pub fn format_local(ms: i64) -> String {
    let seconds = ms.div_euclid(1_000) as libc::time_t;
    // SAFETY: an all-zero tm is a valid value for localtime_r to fill in.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to values we own for the call.
    if unsafe { libc::localtime_r(&seconds, &mut tm) }.is_null() {
        return ms.to_string();
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        ms.rem_euclid(1_000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mqadmin_timestamps_parse_and_local_times_round_trip() {
        assert_eq!(parse_timestamp("1764579600000"), Ok(1_764_579_600_000));
        let now = parse_timestamp("now").unwrap();
        assert!((now - now_ms()).abs() < 60_000);
        let ms = parse_timestamp("2026-12-01#09:30:15:250").unwrap();
        assert_eq!(format_local(ms), "2026-12-01 09:30:15.250");
        let no_ms = parse_timestamp("2026-12-01#09:30:15").unwrap();
        assert_eq!(ms - no_ms, 250);
        for bad in [
            "yesterday",
            "2026-13-01#00:00:00:000",
            "2026-02-30#00:00:00",
            "2026-12-01",
        ] {
            let error = parse_timestamp(bad).unwrap_err();
            assert!(error.contains("yyyy-MM-dd#HH:mm:ss:SSS"), "{bad}: {error}");
        }
    }
}

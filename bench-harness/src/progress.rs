//! The live progress line, one per second, on stderr.

use crate::hist::format_us;
use crate::recorder::Sample;

/// `1234567.8` as `1,234,568`.
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One progress line for `sample`.
pub fn progress_line(phase: &str, sample: &Sample, e2e: bool) -> String {
    let mut line = format!(
        "[{:>6.1}s] {:<12} {:<8}{} sent {:>10}/s  recv {:>10}/s  {:>8.1} MB/s  p99 {:>9}",
        sample.t_s,
        sample.target,
        phase,
        if sample.warmup { " (warm-up)" } else { "" },
        thousands(sample.sent_per_s),
        thousands(sample.received_per_s),
        sample.mb_per_s,
        format_us(sample.request_p99_us),
    );
    if e2e {
        line.push_str(&format!("  e2e p99 {:>9}", format_us(sample.e2e_p99_us)));
    }
    line.push_str(&format!("  err {}", sample.errors));
    if let Some(pct) = sample.broker_cpu_pct {
        line.push_str(&format!("  broker cpu {pct:.0}%"));
    }
    line
}

pub fn print_progress(phase: &str, sample: &Sample, e2e: bool) {
    eprintln!("{}", progress_line(phase, sample, e2e));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1_000.0), "1,000");
        assert_eq!(thousands(1_234_567.8), "1,234,568");
        assert_eq!(thousands(-5.0), "0");
    }

    #[test]
    fn line_shows_rates_latency_and_errors() {
        let sample = Sample {
            t_s: 3.0,
            target: "ferrocket".into(),
            warmup: true,
            sent_per_s: 123_456.0,
            received_per_s: 0.0,
            mb_per_s: 126.4,
            errors: 2,
            request_p99_us: 1_230.0,
            e2e_p99_us: 0.0,
            broker_cpu_pct: Some(95.2),
        };
        let line = progress_line("produce", &sample, false);
        assert!(line.contains("(warm-up)"), "{line}");
        assert!(line.contains("123,456/s"), "{line}");
        assert!(line.contains("126.4 MB/s"), "{line}");
        assert!(line.contains("1.23 ms"), "{line}");
        assert!(line.contains("err 2"), "{line}");
        assert!(line.contains("broker cpu 95%"), "{line}");
        assert!(!line.contains("e2e"), "{line}");
        assert!(progress_line("e2e", &sample, true).contains("e2e p99"));
    }
}

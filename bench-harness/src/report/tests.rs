//! Tests of the report tables, ratios and one-second medians.

use super::*;
use crate::proc_stat::CpuTicks;

fn result() -> TargetResult {
    let mut result = TargetResult::default();
    for i in 0..1_000u64 {
        result.totals.sent(100_000 + i * 1_000, 1, 1_000);
    }
    result
        .totals
        .send_failed(&crate::recorder::ErrorKind::Code(2));
    result.measured_s = 2.0;
    result.windows = 1;
    result.broker_cpu = Some(CpuTicks {
        user: 30,
        system: 20,
    });
    result.client_cpu = CpuTicks {
        user: 10,
        system: 0,
    };
    result
}

fn report(label: &str, result: &TargetResult) -> TargetReport {
    TargetReport::build(
        label,
        "127.0.0.1:9876",
        "T",
        8,
        BTreeMap::new(),
        None,
        &[42],
        100,
        result,
        Headline::Sent,
        (RequestLatency::Send, "send ack"),
        false,
    )
}

#[test]
fn rates_and_cpu_per_message_come_from_totals() {
    let report = report("A", &result());
    assert_eq!(report.msgs_per_s, 500.0);
    assert_eq!(report.mb_per_s, 0.5);
    assert_eq!(report.error_total, 1);
    let cpu = report.broker_cpu.as_ref().unwrap();
    assert_eq!(cpu.cpu_s, 0.5);
    assert_eq!(cpu.cpu_pct_of_core, 25.0);
    assert_eq!(cpu.cpu_us_per_msg, 500.0);
    assert_eq!(report.client_cpu.cpu_us_per_msg, 100.0);
    assert!(report.e2e_latency.is_none());
    let table = target_table("produce", &report);
    assert!(table.contains("500 msg/s"), "{table}");
    assert!(table.contains("code 2 SYSTEM_BUSY"), "{table}");
    assert!(table.contains("500.00 cpu-us/msg"), "{table}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["request_latency"]["count"], 1000);
    assert_eq!(json["headline"], "sent");
}

#[test]
fn comparison_divides_a_by_b() {
    let a = report("A", &result());
    let mut slower = result();
    slower.measured_s = 4.0;
    slower.broker_cpu = None;
    let b = report("B", &slower);
    let comparison = Comparison::build(&a, &b, 3, 5);
    assert_eq!(comparison.ratios["msgs_per_s"], Some(2.0));
    assert_eq!(comparison.ratios["request_p99_us"], Some(1.0));
    assert_eq!(comparison.ratios["broker_cpu_us_per_msg"], None);
    assert_eq!(comparison.ratios["e2e_p99_us"], None);
    let table = comparison_table(&a, &b, &comparison);
    assert!(table.contains("2.00x"), "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
    };
    assert!(row("msgs_per_s").ends_with("higher is better"), "{table}");
    assert!(
        row("request_p99_us").ends_with("lower is better"),
        "{table}"
    );
    assert!(
        row("broker_cpu_us_per_msg").ends_with("lower is better"),
        "{table}"
    );
}

fn sample(t_s: f64, warmup: bool, sent_per_s: f64, cpu_pct: Option<f64>) -> Sample {
    Sample {
        t_s,
        target: "A".into(),
        warmup,
        sent_per_s,
        received_per_s: sent_per_s / 2.0,
        mb_per_s: 0.0,
        errors: 0,
        request_p99_us: 0.0,
        e2e_p99_us: 0.0,
        broker_cpu_pct: cpu_pct,
    }
}

#[test]
fn one_second_medians_skip_warmup_and_follow_the_headline() {
    let samples = vec![
        sample(1.0, true, 900.0, Some(90.0)),
        sample(2.0, false, 200.0, Some(40.0)),
        sample(3.0, false, 100.0, Some(50.0)),
        sample(4.0, false, 400.0, Some(60.0)),
        sample(5.0, false, 0.0, Some(70.0)),
    ];
    let (rate, cpu) = sample_medians(&samples, Headline::Sent);
    assert_eq!(rate, Some(150.0), "median of 200, 100, 400, 0");
    // 2000, 5000 and 1500 µs per message; the idle second has none.
    assert_eq!(cpu, Some(2000.0));
    let (received, _) = sample_medians(&samples, Headline::Received);
    assert_eq!(received, Some(75.0));
    let unwatched: Vec<Sample> = samples
        .iter()
        .map(|s| Sample {
            broker_cpu_pct: None,
            ..s.clone()
        })
        .collect();
    assert_eq!(sample_medians(&unwatched, Headline::Sent).1, None);
    assert_eq!(sample_medians(&[], Headline::Sent), (None, None));
}

#[test]
fn ratio_guards_against_zero_and_missing() {
    assert_eq!(ratio(Some(3.0), Some(1.5)), Some(2.0));
    assert_eq!(ratio(Some(3.0), Some(0.0)), None);
    assert_eq!(ratio(None, Some(1.0)), None);
    assert_eq!(ratio(Some(f64::NAN), Some(1.0)), None);
}

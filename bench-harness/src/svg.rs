//! A self-contained SVG report: a latency-percentile plot (HDR style, the
//! x axis stretching the tail: 90%, 99%, 99.9%, ...) and a
//! throughput-over-time plot, one line per target.

use std::fmt::Write as _;

mod time_axis;

use crate::hist::CurvePoint;
use crate::recorder::Sample;
use crate::report::{Headline, TargetReport};
use time_axis::TimeAxis;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 845.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 920.0;
/// Top and bottom of each panel's plot area.
const PANELS: [(f64, f64); 2] = [(135.0, 415.0), (525.0, 785.0)];
/// Header lines under the title: the host, the workload, one headline
/// per target; more are left out (the JSON report has everything).
const HEADER_LINES_MAX: usize = 4;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];
/// Where the max is drawn, past the last percentile, in decades.
const MAX_POINT_EXTRA_DECADES: f64 = 0.5;
/// A gap in samples longer than this (seconds) breaks the line (compare
/// rounds of other targets run in between).
const TIMELINE_GAP_S: f64 = 1.6;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// x of a percentile: decades of 1 / (1 - p).
pub fn tail_decades(percentile: f64) -> f64 {
    let tail = (1.0 - percentile / 100.0).max(1e-12);
    -tail.log10()
}

/// A round step for about `count` ticks over `range`.
pub fn nice_step(range: f64, count: usize) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / count.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

fn latency_label(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{} s", us / 1_000_000.0)
    } else if us >= 1_000.0 {
        format!("{} ms", us / 1_000.0)
    } else {
        format!("{us} µs")
    }
}

fn rate_label(value: f64) -> String {
    if value >= 1e6 {
        format!("{}M", value / 1e6)
    } else if value >= 1e3 {
        format!("{}k", value / 1e3)
    } else {
        format!("{value}")
    }
}

struct Axis {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl Axis {
    fn map(&self, value: f64) -> f64 {
        let span = (self.hi - self.lo).max(1e-12);
        self.from + (value - self.lo) / span * (self.to - self.from)
    }
}

fn frame(out: &mut String, title: &str, top: f64, bottom: f64) {
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{top}" width="{}" height="{}" fill="#fafafa" stroke="#444"/>"##,
        RIGHT - LEFT,
        bottom - top
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="16" text-anchor="middle" font-weight="bold">{}</text>"#,
        (LEFT + RIGHT) / 2.0,
        top - 14.0,
        escape(title)
    );
}

fn polyline(out: &mut String, points: &[(f64, f64)], color: &str, dashed: bool, opacity: f64) {
    if points.is_empty() {
        return;
    }
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let dash = if dashed {
        r#" stroke-dasharray="6,4""#
    } else {
        ""
    };
    let _ = writeln!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2" stroke-opacity="{opacity}"{dash}/>"#,
        path.join(" ")
    );
}

fn legend(out: &mut String, entries: &[(String, &str, bool)], top: f64) {
    for (i, (label, color, dashed)) in entries.iter().enumerate() {
        let y = top + 16.0 + i as f64 * 18.0;
        let dash = if *dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/><text x="{}" y="{}" font-size="12">{}</text>"#,
            LEFT + 12.0,
            LEFT + 40.0,
            LEFT + 46.0,
            y + 4.0,
            escape(label)
        );
    }
}

/// One latency curve: its legend label, colour, dashing and points.
type Series<'a> = (String, &'a str, bool, &'a [CurvePoint]);

fn latency_panel(out: &mut String, targets: &[&TargetReport]) {
    let (top, bottom) = PANELS[0];
    frame(out, "Latency by percentile", top, bottom);
    let series = latency_series(targets);
    let finite_x = series
        .iter()
        .flat_map(|s| s.3.iter())
        .filter(|p| p.percentile < 100.0)
        .map(|p| tail_decades(p.percentile))
        .fold(1.0f64, f64::max)
        .ceil();
    let x_axis = Axis {
        lo: 0.0,
        hi: finite_x + MAX_POINT_EXTRA_DECADES,
        from: LEFT,
        to: RIGHT,
    };
    let Some(y_axis) = latency_axis(&series, top, bottom) else {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">no latency samples</text>"#,
            (LEFT + RIGHT) / 2.0,
            (top + bottom) / 2.0
        );
        return;
    };
    latency_grid(out, &x_axis, &y_axis, finite_x, (top, bottom));
    for (_, color, dashed, curve) in &series {
        let points: Vec<(f64, f64)> = curve
            .iter()
            .map(|p| {
                let x = if p.percentile >= 100.0 {
                    finite_x + MAX_POINT_EXTRA_DECADES
                } else {
                    tail_decades(p.percentile)
                };
                (x_axis.map(x), y_axis.map(p.latency_us.max(0.1).log10()))
            })
            .collect();
        polyline(out, &points, color, *dashed, 1.0);
    }
    let entries: Vec<(String, &str, bool)> =
        series.iter().map(|s| (s.0.clone(), s.1, s.2)).collect();
    legend(out, &entries, top);
}

/// Each target's request latency curve (solid) and, where measured, its
/// send-to-receive curve (dashed), in the target's colour.
fn latency_series<'a>(targets: &[&'a TargetReport]) -> Vec<Series<'a>> {
    let mut series = Vec::new();
    for (i, report) in targets.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let kind = report.request_latency_kind;
        series.push((
            format!("{} — {kind}", report.label),
            color,
            false,
            &report.request_latency.curve[..],
        ));
        if let Some(e2e) = &report.e2e_latency {
            series.push((
                format!("{} — send to receive", report.label),
                color,
                true,
                &e2e.curve[..],
            ));
        }
    }
    series
}

/// The log-latency axis over whole decades; none without samples.
fn latency_axis(series: &[Series], top: f64, bottom: f64) -> Option<Axis> {
    let values = series
        .iter()
        .flat_map(|s| s.3.iter())
        .map(|p| p.latency_us.max(0.1));
    let (lo, hi) = values.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi <= 0.0 {
        return None;
    }
    Some(Axis {
        lo: lo.log10().floor(),
        hi: hi.log10().ceil().max(lo.log10().floor() + 1.0),
        from: bottom,
        to: top,
    })
}

/// Decade lines of both axes and their labels.
fn latency_grid(out: &mut String, x_axis: &Axis, y_axis: &Axis, finite_x: f64, panel: (f64, f64)) {
    let (top, bottom) = panel;
    for decade in (y_axis.lo as i32)..=(y_axis.hi as i32) {
        let y = y_axis.map(decade as f64);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            y + 4.0,
            latency_label(10f64.powi(decade))
        );
    }
    for decade in 0..=(finite_x as i32) {
        let x = x_axis.map(decade as f64);
        let label = if decade == 0 {
            "0%".to_string()
        } else {
            format!("{}%", 100.0 - 100.0 * 10f64.powi(-decade))
        };
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{label}</text>"##,
            bottom + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">max</text><text x="{}" y="{}" font-size="12" text-anchor="middle">percentile (log of 1/(1-p))</text>"#,
        x_axis.map(finite_x + MAX_POINT_EXTRA_DECADES),
        bottom + 16.0,
        (LEFT + RIGHT) / 2.0,
        bottom + 34.0
    );
}

#[derive(Clone, Copy)]
enum Direction {
    Sent,
    Received,
}

impl Direction {
    fn rate(self, sample: &Sample) -> f64 {
        match self {
            Direction::Sent => sample.sent_per_s,
            Direction::Received => sample.received_per_s,
        }
    }

    fn has_data(self, report: &TargetReport) -> bool {
        match self {
            Direction::Sent => report.sent_msgs > 0,
            Direction::Received => report.received_msgs > 0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Direction::Sent => "sent",
            Direction::Received => "received",
        }
    }
}

/// A line's colour and dashing.
#[derive(Clone, Copy)]
struct Stroke<'a> {
    color: &'a str,
    dashed: bool,
}

fn throughput_panel(out: &mut String, targets: &[&TargetReport]) {
    let (top, bottom) = PANELS[1];
    frame(
        out,
        "Throughput over time (messages per second)",
        top,
        bottom,
    );
    let (time, x_axis, y_axis, y_step) = throughput_axes(targets, top, bottom);
    throughput_grid(out, (&time, &x_axis), (&y_axis, y_step), bottom);
    let mut entries = Vec::new();
    for (i, report) in targets.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // The headline direction solid; the other one dashed when it has data.
        let (headline, other) = match report.headline {
            Headline::Sent => (Direction::Sent, Direction::Received),
            Headline::Received => (Direction::Received, Direction::Sent),
        };
        for (direction, dashed) in [(headline, false), (other, true)] {
            if dashed && !other.has_data(report) {
                continue;
            }
            let stroke = Stroke { color, dashed };
            timeline_line(out, &report.timeline, direction, stroke, (&x_axis, &y_axis));
            let what = direction.name();
            entries.push((format!("{} — {what}", report.label), color, dashed));
        }
    }
    legend(out, &entries, top);
}

/// Time and rate axes over all targets' timelines, with the rate's tick step.
fn throughput_axes(
    targets: &[&TargetReport],
    top: f64,
    bottom: f64,
) -> (TimeAxis, Axis, Axis, f64) {
    let time = TimeAxis::of(targets.iter().flat_map(|r| r.timeline.iter()));
    let rate_max = targets
        .iter()
        .flat_map(|r| {
            r.timeline
                .iter()
                .map(|s| s.sent_per_s.max(s.received_per_s))
        })
        .fold(1.0f64, f64::max);
    let y_step = nice_step(rate_max, 5);
    let y_axis = Axis {
        lo: 0.0,
        hi: (rate_max / y_step).ceil() * y_step,
        from: bottom,
        to: top,
    };
    let x_axis = Axis {
        lo: 0.0,
        hi: time.hi,
        from: LEFT,
        to: RIGHT,
    };
    (time, x_axis, y_axis, y_step)
}

/// Rate lines, time ticks and the axis caption.
fn throughput_grid(out: &mut String, x: (&TimeAxis, &Axis), y: (&Axis, f64), bottom: f64) {
    let ((time, x_axis), (y_axis, y_step)) = (x, y);
    let mut value = 0.0;
    while value <= y_axis.hi + 1e-9 {
        let y = y_axis.map(value);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            y + 4.0,
            rate_label(value)
        );
        value += y_step;
    }
    for (at, label) in time.ticks() {
        let x = x_axis.map(at);
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{label}</text>"#,
            bottom + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
        (LEFT + RIGHT) / 2.0,
        bottom + 34.0,
        time.caption()
    );
}

/// One direction of a timeline: a dot per sample and a line broken at gaps
/// and at the end of warm-up (faded).
fn timeline_line(
    out: &mut String,
    timeline: &[Sample],
    direction: Direction,
    stroke: Stroke,
    axes: (&Axis, &Axis),
) {
    let (x_axis, y_axis) = axes;
    let Stroke { color, dashed } = stroke;
    let mut segment: Vec<(f64, f64)> = Vec::new();
    let mut last_t = f64::NEG_INFINITY;
    let mut last_warm = None;
    for sample in timeline {
        let point = (x_axis.map(sample.t_s), y_axis.map(direction.rate(sample)));
        if sample.t_s - last_t > TIMELINE_GAP_S || last_warm != Some(sample.warmup) {
            let opacity = if last_warm == Some(true) { 0.35 } else { 1.0 };
            polyline(out, &segment, color, dashed, opacity);
            segment.clear();
        }
        segment.push(point);
        let _ = writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="2" fill="{color}" fill-opacity="{}"/>"#,
            point.0,
            point.1,
            if sample.warmup { 0.35 } else { 1.0 }
        );
        last_t = sample.t_s;
        last_warm = Some(sample.warmup);
    }
    polyline(
        out,
        &segment,
        color,
        dashed,
        if last_warm == Some(true) { 0.35 } else { 1.0 },
    );
}

/// The whole SVG document.
/// The whole plot: the title, then `header` lines (the host, the workload,
/// each target's headline numbers), then the latency and throughput panels.
pub fn render(title: &str, header: &[String], targets: &[&TargetReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="28" font-size="20" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    for (i, line) in header.iter().take(HEADER_LINES_MAX).enumerate() {
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#555">{}</text>"##,
            WIDTH / 2.0,
            48 + 16 * i,
            escape(line)
        );
    }
    latency_panel(&mut out, targets);
    throughput_panel(&mut out, targets);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Sample;
    use crate::report::headline_line;
    use crate::window::TargetResult;
    use std::collections::BTreeMap;

    #[test]
    fn tail_decades_stretch_the_tail() {
        assert_eq!(tail_decades(0.0), 0.0);
        assert!((tail_decades(90.0) - 1.0).abs() < 1e-9);
        assert!((tail_decades(99.9) - 3.0).abs() < 1e-9);
        assert!(tail_decades(100.0) > 11.0);
    }

    #[test]
    fn nice_steps_are_round() {
        assert_eq!(nice_step(100.0, 5), 20.0);
        assert_eq!(nice_step(1_234_567.0, 5), 250_000.0);
        assert_eq!(nice_step(7.0, 10), 1.0);
        assert_eq!(nice_step(0.0, 5), 1.0);
    }

    #[test]
    fn document_has_both_plots_and_escapes_labels() {
        let mut result = TargetResult::default();
        for i in 0..500u64 {
            result.totals.sent(50_000 + i * 3_000, 1, 100);
        }
        result.measured_s = 1.0;
        for t in 1..=4 {
            result.samples.push(Sample {
                t_s: t as f64,
                target: "a<b".into(),
                warmup: t == 1,
                sent_per_s: 1_000.0 * t as f64,
                received_per_s: 0.0,
                mb_per_s: 0.1,
                errors: 0,
                request_p99_us: 100.0,
                e2e_p99_us: 0.0,
                broker_cpu_pct: None,
            });
        }
        let report = crate::report::TargetReport::build(
            "a<b",
            "n",
            "T",
            1,
            BTreeMap::new(),
            None,
            &[],
            100,
            &result,
            Headline::Sent,
            (crate::report::RequestLatency::Send, "send ack"),
            false,
        );
        let header = [
            "host".to_string(),
            "1024 B bodies".to_string(),
            headline_line(&report),
        ];
        let svg = render("bench & co", &header, &[&report]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("Latency by percentile"));
        assert!(svg.contains("Throughput over time"));
        assert!(svg.contains("bench &amp; co"));
        assert!(svg.contains("1024 B bodies"));
        assert!(svg.contains("a&lt;b: 500 msg/s"), "{svg}");
        assert!(svg.contains("a&lt;b — send ack"));
        assert!(!svg.contains("a<b"));
        assert!(svg.matches("<polyline").count() >= 2);
        assert!(!svg.contains("NaN"));
    }
}

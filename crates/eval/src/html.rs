//! `agentls eval report` and `agentls eval --html`: result files of `agentls eval --out`
//! as one self-contained HTML page.
//!
//! The page holds, per model, pass@1 and pass@k with Wilson's 95% intervals (a bar chart
//! with error bars, and the same lines `agentls eval` prints), a task × model table
//! (solved attempts / attempts, mean wall time, tokens in/out, tool calls; cells coloured
//! by pass rate), each model's wall times (a box over the attempts' dots) and its tool
//! errors by class, then the source files and the date.
//!
//! Invariants: nothing is fetched (no scripts, fonts, stylesheets or images from
//! elsewhere: inline `<style>`, SVG drawn here, a Content-Security-Policy that allows
//! no script at all); every string read from a file (task, model, error class, path)
//! goes through [`escape`]; the same files and date give the same bytes (everything is
//! keyed by sorted maps, numbers have fixed precision).
//!
//! A line's model is its `model` field, else the stem of its file's name (lines written
//! before `model` was recorded). Files may share a model (shards of one run); a (task,
//! attempt) of one model in two files is refused, as `agentls eval merge` does.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::results::{Attempt, TaskResult, by_task, read, summary, wilson};

/// `agentls eval report FILE… [--html OUT]`: each model's summary line, and the page.
pub fn report(inputs: &[PathBuf], html: Option<&Path>) -> anyhow::Result<ExitCode> {
    let report = load(inputs)?;
    let mut stdout = std::io::stdout().lock();
    for (model, attempts) in &report.models {
        writeln!(stdout, "{model}: {}", summary(&by_task(attempts)))?;
    }
    if let Some(html) = html {
        save(&report, html)?;
        writeln!(stdout, "report in {}", html.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `inputs` to `html` (for `agentls eval --out F --html H`).
pub fn write(inputs: &[PathBuf], html: &Path) -> anyhow::Result<()> {
    save(&load(inputs)?, html)
}

fn save(report: &Report, html: &Path) -> anyhow::Result<()> {
    let page = render(report, &today())?;
    std::fs::write(html, page).with_context(|| format!("writing {}", html.display()))
}

/// `s` safe as HTML text and as a double- or single-quoted attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One input file.
#[derive(Debug)]
struct Source {
    /// As given on the command line.
    path: String,
    attempts: usize,
    models: BTreeSet<String>,
}

/// The attempts of every file, grouped by model.
#[derive(Debug)]
pub struct Report {
    sources: Vec<Source>,
    /// Each model's attempts, sorted by (task, attempt).
    models: BTreeMap<String, Vec<Attempt>>,
}

fn load(inputs: &[PathBuf]) -> anyhow::Result<Report> {
    let mut files = Vec::new();
    for input in inputs {
        let attempts = read(input)?.into_iter().map(|(a, _)| a).collect();
        let stem = input.file_stem().map_or_else(
            || input.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        files.push((input.display().to_string(), stem, attempts));
    }
    build(files)
}

/// Groups `(path, fallback model name, attempts)` by model.
fn build(files: Vec<(String, String, Vec<Attempt>)>) -> anyhow::Result<Report> {
    let mut sources = Vec::new();
    let mut models: BTreeMap<String, Vec<Attempt>> = BTreeMap::new();
    let mut seen: BTreeMap<(String, String, u32), String> = BTreeMap::new();
    for (path, stem, attempts) in files {
        let mut source = Source {
            path: path.clone(),
            attempts: attempts.len(),
            models: BTreeSet::new(),
        };
        for a in attempts {
            let model = a.model.clone().unwrap_or_else(|| stem.clone());
            let key = (model.clone(), a.task.clone(), a.attempt);
            if let Some(first) = seen.insert(key, path.clone()) {
                anyhow::bail!(
                    "model {model}, task {} attempt {} is in both {first} and {path}",
                    a.task,
                    a.attempt
                );
            }
            source.models.insert(model.clone());
            models.entry(model).or_default().push(a);
        }
        sources.push(source);
    }
    for attempts in models.values_mut() {
        attempts.sort_by(|x, y| (&x.task, x.attempt).cmp(&(&y.task, y.attempt)));
    }
    Ok(Report { sources, models })
}

/// Today's date (UTC), or that of `SOURCE_DATE_EPOCH` for a reproducible page.
fn today() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The civil date `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `s` cut to `max` characters (an ellipsis last), for labels inside a chart; the
/// whole name stays in the page's lists and tables.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// Tableau 10: one colour per model, in name order.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222;background:#fff}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
.meta{color:#666}code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.cell{text-align:center;min-width:8em}td.none{color:#999;text-align:center}
td.num{text-align:right}.sub{font-size:.85em;color:#333}
svg{display:block;margin:.5em 0;max-width:100%;height:auto}svg text{font:12px system-ui,sans-serif;fill:#222}
svg .axis{stroke:#888}svg .grid{stroke:#e4e4e4}svg .err{stroke:#222;stroke-width:1.5}
";

/// The page.
pub fn render(report: &Report, date: &str) -> Result<String, std::fmt::Error> {
    let mut o = String::new();
    let tasks: BTreeSet<&str> = report
        .models
        .values()
        .flatten()
        .map(|a| a.task.as_str())
        .collect();
    writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    )?;
    // Nothing may load or run, whatever a file held.
    writeln!(
        o,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    )?;
    writeln!(
        o,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>agentls eval report</title>\n<style>\n{STYLE}</style>\n</head>\n<body>"
    )?;
    writeln!(o, "<h1>agentls eval report</h1>")?;
    writeln!(
        o,
        "<p class=\"meta\">{} model(s), {} task(s), {} attempt(s) from {} file(s); written {} (UTC).</p>",
        report.models.len(),
        tasks.len(),
        report.models.values().map(Vec::len).sum::<usize>(),
        report.sources.len(),
        escape(date)
    )?;

    writeln!(o, "<h2>Pass rates</h2>\n<ul>")?;
    for (model, attempts) in &report.models {
        writeln!(
            o,
            "<li><b>{}</b>: {}</li>",
            escape(model),
            escape(&summary(&by_task(attempts)))
        )?;
    }
    writeln!(o, "</ul>")?;
    pass_chart(&mut o, report)?;

    writeln!(o, "<h2>Tasks × models</h2>")?;
    task_table(&mut o, report, &tasks)?;

    writeln!(o, "<h2>Wall time per attempt</h2>")?;
    time_chart(&mut o, report)?;

    writeln!(o, "<h2>Tool errors by class</h2>")?;
    error_chart(&mut o, report)?;

    writeln!(
        o,
        "<h2>Sources</h2>\n<table>\n<tr><th>file</th><th>attempts</th><th>model(s)</th></tr>"
    )?;
    for s in &report.sources {
        let models: Vec<String> = s.models.iter().map(|m| escape(m)).collect();
        writeln!(
            o,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&s.path),
            s.attempts,
            models.join(", ")
        )?;
    }
    writeln!(
        o,
        "</table>\n<p class=\"meta\">Written by <code>agentls eval report</code> on {} (UTC). pass@1: share of tasks whose first attempt passed; pass@k: share with any of k attempts passed; intervals: Wilson's 95%.</p>\n</body>\n</html>",
        escape(date)
    )?;
    Ok(o)
}

/// pass@1 and pass@k of one model, each with Wilson's 95% interval.
struct Rates {
    k: u32,
    pass1: (f64, f64, f64),
    passk: (f64, f64, f64),
}

fn rates(results: &BTreeMap<String, TaskResult>) -> Rates {
    let n = results.len() as f64;
    let firsts = results.values().filter(|r| r.first).count() as f64;
    let any = results.values().filter(|r| r.passed > 0).count() as f64;
    let share = |x: f64| if n == 0.0 { 0.0 } else { x / n };
    let with_ci = |x: f64| {
        let (lo, hi) = wilson(x, n);
        (share(x), lo, hi)
    };
    Rates {
        k: results.values().map(|r| r.attempts).max().unwrap_or(1),
        pass1: with_ci(firsts),
        passk: with_ci(any),
    }
}

/// Bars of pass@1 (solid) and pass@k (light) per model, with their intervals.
fn pass_chart(o: &mut String, report: &Report) -> std::fmt::Result {
    let (left, top, plot_h, group_w) = (44.0, 16.0, 200.0, 150.0);
    let width = left + 16.0 + group_w * report.models.len().max(1) as f64;
    let height = top + plot_h + 56.0;
    let y = |v: f64| top + (1.0 - v) * plot_h;
    writeln!(
        o,
        "<svg viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"pass@1 and pass@k per model\">"
    )?;
    for i in 0..=4 {
        let v = f64::from(i) / 4.0;
        writeln!(
            o,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.2}</text>",
            width - 8.0,
            y(v),
            y(v),
            left - 6.0,
            y(v) + 4.0
        )?;
    }
    writeln!(
        o,
        "<line class=\"axis\" x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{:.1}\"/>",
        y(0.0)
    )?;
    for (i, (model, attempts)) in report.models.iter().enumerate() {
        let r = rates(&by_task(attempts));
        let x0 = left + 16.0 + group_w * i as f64;
        let bar_w = 46.0;
        for (j, (label, (v, lo, hi), opacity)) in [
            ("pass@1".to_owned(), r.pass1, 1.0),
            (format!("pass@{}", r.k), r.passk, 0.5),
        ]
        .into_iter()
        .enumerate()
        {
            let x = x0 + j as f64 * (bar_w + 12.0);
            let cx = x + bar_w / 2.0;
            writeln!(
                o,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar_w}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"{opacity}\"><title>{} {label} {v:.2} (95% CI {lo:.2}-{hi:.2})</title></rect>",
                y(v),
                y(0.0) - y(v),
                colour(i),
                escape(model)
            )?;
            writeln!(
                o,
                "<line class=\"err\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><line class=\"err\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><line class=\"err\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
                y(lo),
                y(hi),
                cx - 6.0,
                cx + 6.0,
                y(lo),
                y(lo),
                cx - 6.0,
                cx + 6.0,
                y(hi),
                y(hi)
            )?;
            writeln!(
                o,
                "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text><text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{v:.2}</text>",
                y(0.0) + 15.0,
                y(0.0) + 29.0
            )?;
        }
        writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}<title>{}</title></text>",
            x0 + bar_w + 6.0,
            y(0.0) + 47.0,
            escape(&clip(model, 20)),
            escape(model)
        )?;
    }
    writeln!(o, "</svg>")
}

/// The mean of the values present, if any.
fn mean(xs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = xs.flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn ms(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.0} ms")
    } else {
        format!("{:.1} s", v / 1000.0)
    }
}

fn count(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.0}")
    } else if v < 1e6 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{:.1}M", v / 1e6)
    }
}

/// One row per task, one column per model.
fn task_table(o: &mut String, report: &Report, tasks: &BTreeSet<&str>) -> std::fmt::Result {
    write!(o, "<table>\n<tr><th>task</th>")?;
    for model in report.models.keys() {
        write!(o, "<th>{}</th>", escape(model))?;
    }
    writeln!(o, "</tr>")?;
    for task in tasks {
        write!(o, "<tr><th class=\"mono\">{}</th>", escape(task))?;
        for attempts in report.models.values() {
            let of: Vec<&Attempt> = attempts.iter().filter(|a| a.task == *task).collect();
            if of.is_empty() {
                write!(o, "<td class=\"none\">not run</td>")?;
                continue;
            }
            let passed = of.iter().filter(|a| a.passed).count();
            let rate = passed as f64 / of.len() as f64;
            let show = |v: Option<f64>, f: fn(f64) -> String| v.map_or("–".to_owned(), f);
            let time = show(mean(of.iter().map(|a| a.agent_ms)), ms);
            let tin = show(
                mean(of.iter().map(|a| a.input_tokens.map(|t| t as f64))),
                count,
            );
            let tout = show(
                mean(of.iter().map(|a| a.output_tokens.map(|t| t as f64))),
                count,
            );
            let calls = show(
                mean(of.iter().map(|a| a.tool_calls.map(|t| t as f64))),
                |v| format!("{v:.1}"),
            );
            // Red (none solved) through yellow to green (all solved).
            write!(
                o,
                "<td class=\"cell\" style=\"background:hsl({:.0},70%,82%)\"><b>{passed}/{}</b><div class=\"sub\">{time} · {tin} in / {tout} out tok · {calls} calls</div></td>",
                rate * 120.0,
                of.len()
            )?;
        }
        writeln!(o, "</tr>")?;
    }
    writeln!(
        o,
        "</table>\n<p class=\"meta\">Solved attempts / attempts; means per attempt of wall time, tokens and tool calls.</p>"
    )
}

/// The value at quantile `q` of sorted `v` (linear between neighbours).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match v.get(i + 1) {
        Some(next) => v[i] + (next - v[i]) * frac,
        None => v[i],
    }
}

/// A step of 1, 2 or 5 × 10^n giving about five ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Per model a row: the attempts' wall times as dots (green passed, red failed) over
/// a box from the first to the third quartile, the median and whiskers to min and max.
fn time_chart(o: &mut String, report: &Report) -> std::fmt::Result {
    let times: Vec<(&String, Vec<(f64, bool)>)> = report
        .models
        .iter()
        .map(|(m, xs)| {
            let v = xs
                .iter()
                .filter_map(|a| a.agent_ms.map(|t| (t, a.passed)))
                .collect();
            (m, v)
        })
        .collect();
    let max = times
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(t, _)| *t))
        .fold(0.0_f64, f64::max);
    let step = tick_step(max);
    let end = (max / step).ceil().max(1.0) * step;
    let (left, plot_w, row_h, top) = (150.0, 560.0, 46.0, 10.0);
    let width = left + plot_w + 30.0;
    let height = top + row_h * times.len().max(1) as f64 + 40.0;
    let x = |t: f64| left + t / end * plot_w;
    writeln!(
        o,
        "<svg viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"wall time per attempt, per model\">"
    )?;
    let axis_y = top + row_h * times.len().max(1) as f64;
    let mut t = 0.0;
    while t <= end + step / 2.0 {
        writeln!(
            o,
            "<line class=\"grid\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{top}\" y2=\"{axis_y:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(t),
            x(t),
            x(t),
            axis_y + 16.0,
            ms(t)
        )?;
        t += step;
    }
    writeln!(
        o,
        "<line class=\"axis\" x1=\"{left}\" x2=\"{:.1}\" y1=\"{axis_y:.1}\" y2=\"{axis_y:.1}\"/>",
        left + plot_w
    )?;
    for (i, (model, v)) in times.iter().enumerate() {
        let cy = top + row_h * i as f64 + row_h / 2.0;
        writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-weight=\"bold\">{}<title>{}</title></text>",
            left - 8.0,
            cy + 4.0,
            escape(&clip(model, 20)),
            escape(model)
        )?;
        if v.is_empty() {
            writeln!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\">no times recorded</text>",
                left + 8.0,
                cy + 4.0
            )?;
            continue;
        }
        let mut sorted: Vec<f64> = v.iter().map(|(t, _)| *t).collect();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(&sorted, p);
        let (lo, q1, med, q3, hi) = (q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
        writeln!(
            o,
            "<line class=\"axis\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\"/><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"24\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"{}\"><title>{} wall time: min {}, median {}, max {}</title></rect><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\"/>",
            x(lo),
            x(hi),
            x(q1),
            cy - 12.0,
            (x(q3) - x(q1)).max(1.0),
            colour(i),
            colour(i),
            escape(model),
            ms(lo),
            ms(med),
            ms(hi),
            x(med),
            x(med),
            cy - 12.0,
            cy + 12.0
        )?;
        // Dots in (task, attempt) order, spread over five heights so ties stay visible.
        for (j, (t, passed)) in v.iter().enumerate() {
            let dy = (j % 5) as f64 * 4.0 - 8.0;
            writeln!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"/>",
                x(*t),
                cy + dy,
                if *passed { "#2e7d32" } else { "#c62828" }
            )?;
        }
    }
    writeln!(o, "</svg>")?;
    writeln!(
        o,
        "<p class=\"meta\">Dots: attempts (green passed, red failed); box: quartiles; bar: median; whiskers: min and max.</p>"
    )
}

/// Per error class a bar per model: failed tool calls over all its attempts.
fn error_chart(o: &mut String, report: &Report) -> std::fmt::Result {
    let recorded = report
        .models
        .values()
        .flatten()
        .any(|a| a.errors_by_class.is_some());
    if !recorded {
        return writeln!(
            o,
            "<p>Not recorded in these files (lines written before <code>errors_by_class</code>).</p>"
        );
    }
    // class → model → count.
    let mut by_class: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for (model, attempts) in &report.models {
        for a in attempts {
            for (class, n) in a.errors_by_class.iter().flatten() {
                *by_class
                    .entry(class.as_str())
                    .or_default()
                    .entry(model.as_str())
                    .or_default() += u64::from(*n);
            }
        }
    }
    by_class.retain(|_, m| m.values().any(|n| *n > 0));
    if by_class.is_empty() {
        return writeln!(o, "<p>No tool call failed.</p>");
    }
    let max = by_class
        .values()
        .flat_map(|m| m.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let n_models = report.models.len();
    let (left, plot_w, bar_h, top) = (190.0, 460.0, 14.0, 30.0);
    let group_h = bar_h * n_models as f64 + 10.0;
    let width = left + plot_w + 60.0;
    let height = top + group_h * by_class.len() as f64 + 10.0;
    writeln!(
        o,
        "<svg viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"tool errors by class per model\">"
    )?;
    // Legend: one swatch per model.
    let mut lx = left;
    for (i, model) in report.models.keys().enumerate() {
        writeln!(
            o,
            "<rect x=\"{lx:.1}\" y=\"6\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"16\">{}</text>",
            colour(i),
            lx + 16.0,
            escape(&clip(model, 24))
        )?;
        lx += 24.0 + 7.0 * clip(model, 24).chars().count() as f64;
    }
    for (g, (class, counts)) in by_class.iter().enumerate() {
        let y0 = top + group_h * g as f64;
        writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y0 + group_h / 2.0,
            escape(&clip(class, 26))
        )?;
        for (i, model) in report.models.keys().enumerate() {
            let n = counts.get(model.as_str()).copied().unwrap_or(0);
            let y = y0 + bar_h * i as f64;
            let w = n as f64 / max * plot_w;
            writeln!(
                o,
                "<rect x=\"{left}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {n}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">{n}</text>",
                bar_h - 2.0,
                colour(i),
                escape(model),
                escape(class),
                left + w + 4.0,
                y + bar_h - 4.0
            )?;
        }
    }
    writeln!(o, "</svg>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(model: &str, task: &str, n: u32, passed: bool, ms: f64) -> Attempt {
        Attempt {
            task: task.to_owned(),
            attempt: n,
            passed,
            agent_ms: Some(ms),
            input_tokens: Some(1200),
            output_tokens: Some(300),
            model: Some(model.to_owned()),
            tool_calls: Some(4),
            errors_by_class: Some(BTreeMap::from([("Timeout".to_owned(), u32::from(!passed))])),
            ..Attempt::default()
        }
    }

    /// Two models × two tasks, two attempts each.
    fn two_by_two(model_b: &str) -> Report {
        let a = vec![
            attempt("alpha", "py-add", 1, true, 900.0),
            attempt("alpha", "py-add", 2, true, 1100.0),
            attempt("alpha", "js-reverse", 1, false, 2500.0),
            attempt("alpha", "js-reverse", 2, true, 2000.0),
        ];
        let b = vec![
            attempt(model_b, "py-add", 1, false, 3000.0),
            attempt(model_b, "py-add", 2, false, 4000.0),
            attempt(model_b, "js-reverse", 1, false, 5000.0),
            attempt(model_b, "js-reverse", 2, false, 6000.0),
        ];
        build(vec![
            ("runs/a.jsonl".to_owned(), "a".to_owned(), a),
            ("runs/b.jsonl".to_owned(), "b".to_owned(), b),
        ])
        .unwrap()
    }

    #[test]
    fn escape_leaves_no_markup_and_no_quote() {
        assert_eq!(
            escape("<script>alert('x')</script>"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("&\"'"), "&amp;&quot;&#39;");
        assert_eq!(escape("a &amp; b"), "a &amp;amp; b");
        assert_eq!(escape("plain-name_1.2 · ü"), "plain-name_1.2 · ü");
    }

    #[test]
    fn a_report_names_every_task_and_model_with_one_svg_per_chart() {
        let report = two_by_two("beta");
        let html = render(&report, "2026-01-02").unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
        for name in [
            "py-add",
            "js-reverse",
            "alpha",
            "beta",
            "runs/a.jsonl",
            "Timeout",
        ] {
            assert!(html.contains(name), "{name} missing");
        }
        assert!(html.contains("2026-01-02"));
        // Pass rates, tasks × models, wall time, tool errors: three charts, one table.
        assert_eq!(html.matches("<svg").count(), 3, "{html}");
        assert_eq!(html.matches("</svg>").count(), 3);
        // The pass@1 figures as `agentls eval` prints them.
        for model in ["alpha", "beta"] {
            let line = summary(&by_task(&report.models[model]));
            assert!(html.contains(&line), "{line} missing");
        }
        assert!(html.contains("pass@1 0.50 (95% CI 0.09-0.91) · pass@2 1.00"));
        assert!(html.contains("pass@1 0.00 (95% CI 0.00-0.66) · pass@2 0.00"));
        // The table: alpha solved 2 of 2 py-add attempts and 1 of 2 js-reverse.
        assert!(html.contains("<b>2/2</b>") && html.contains("<b>1/2</b>"));
        assert!(html.contains("1.0 s · 1.2k in / 300 out tok · 4.0 calls"));
        assert!(!html.contains("<script") && !html.contains("http://"));
        assert!(!html.contains("https://"));
        // The same input gives the same bytes.
        assert_eq!(html, render(&two_by_two("beta"), "2026-01-02").unwrap());
    }

    #[test]
    fn a_hostile_model_name_appears_only_escaped() {
        let evil = "<img src=x onerror=alert(1)>";
        let html = render(&two_by_two(evil), "2026-01-02").unwrap();
        assert!(!html.contains(evil), "raw name in the page");
        assert!(!html.contains("<img"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }

    #[test]
    fn without_errors_recorded_the_page_says_so_instead_of_a_chart() {
        let old = |task: &str| Attempt {
            task: task.to_owned(),
            attempt: 1,
            passed: true,
            ..Attempt::default()
        };
        let report = build(vec![(
            "old.jsonl".to_owned(),
            "old".to_owned(),
            vec![old("t1"), old("t2")],
        )])
        .unwrap();
        // No model field: the file's stem names the model.
        assert_eq!(report.models.keys().collect::<Vec<_>>(), ["old"]);
        let html = render(&report, "2026-01-02").unwrap();
        assert!(html.contains("Not recorded in these files"));
        assert!(html.contains("no times recorded"));
        assert_eq!(html.matches("<svg").count(), 2);
    }

    #[test]
    fn one_model_s_attempt_in_two_files_is_refused() {
        let a = || vec![attempt("m", "t", 1, true, 1.0)];
        let e = build(vec![
            ("x.jsonl".to_owned(), "x".to_owned(), a()),
            ("y.jsonl".to_owned(), "y".to_owned(), a()),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "model m, task t attempt 1 is in both x.jsonl and y.jsonl"
        );
        // Two models' runs of the same task are two series.
        let b = vec![attempt("n", "t", 1, true, 1.0)];
        let r = build(vec![
            ("x.jsonl".to_owned(), "x".to_owned(), a()),
            ("y.jsonl".to_owned(), "y".to_owned(), b),
        ])
        .unwrap();
        assert_eq!(r.models.len(), 2);
    }

    #[test]
    fn dates_and_ticks() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_000), (2024, 10, 4));
        assert_eq!(tick_step(6000.0), 2000.0);
        assert_eq!(tick_step(900.0), 200.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(clip("short", 8), "short");
        assert_eq!(clip("a-very-long-model-name", 8), "a-very-…");
    }
}

//! What `agentls eval` writes, read back: the summary (pass@1 with Wilson's interval,
//! pass@k), `agentls eval merge` (shards into one file) and `agentls eval compare`
//! (two runs, task by task, with a paired sign test deciding whether the difference
//! is larger than noise).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde::Deserialize;
use serde_json::{Value, json};

/// One attempt, as `--out` writes it (the fields compare, merge and report need).
/// Lines written before `model`, `tool_calls` and `errors_by_class` were recorded
/// read with those absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Attempt {
    /// The task's name (its directory).
    pub task: String,
    /// Which attempt at it, from 1.
    pub attempt: u32,
    /// Whether its hidden check passed.
    pub passed: bool,
    /// The agent's time.
    #[serde(default)]
    pub agent_ms: Option<f64>,
    /// Tokens read.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Tokens written.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// The model the run was given (`--model`, else the first configured).
    #[serde(default)]
    pub model: Option<String>,
    /// Tool calls the session made.
    #[serde(default)]
    pub tool_calls: Option<u64>,
    /// Failed tool calls by error class.
    #[serde(default)]
    pub errors_by_class: Option<BTreeMap<String, u32>>,
    /// Copying the task's repository in.
    #[serde(default)]
    pub setup_ms: Option<f64>,
    /// The agent loop's own time: neither the model's nor the tools'.
    #[serde(default)]
    pub harness_ms: Option<f64>,
    /// Whether some candidate of the small-model pipeline passed the check (`None`
    /// when the pipeline did not run): see `crate::solve`.
    #[serde(default)]
    pub covered: Option<bool>,
    /// The pipeline's strategy that made the last change it tried (`None` when the
    /// pipeline did not run or no strategy applied).
    #[serde(default)]
    pub strategy: Option<String>,
    /// Where that strategy's time went.
    #[serde(default)]
    pub solve_timings: Option<agentls_agent::solve::SolveTimings>,
    /// The candidates that strategy checked.
    #[serde(default)]
    pub candidates: Option<usize>,
    /// Tokens drafted from the original code for its greedy answers, and kept.
    #[serde(default)]
    pub drafted: Option<u64>,
    /// Of those drafted tokens, the ones the model kept.
    #[serde(default)]
    pub accepted: Option<u64>,
}

/// Every attempt of `path`, with each line kept as written (for merge). A (task,
/// attempt) written twice is refused: one run writes each once, and counting one twice
/// would skew every rate.
pub fn read(path: &Path) -> anyhow::Result<Vec<(Attempt, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut seen: BTreeMap<(Option<String>, String, u32), usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let attempt: Attempt = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not an attempt line of `agentls eval --out`",
                path.display(),
                i + 1
            )
        })?;
        let key = (attempt.model.clone(), attempt.task.clone(), attempt.attempt);
        if let Some(first) = seen.insert(key, i + 1) {
            anyhow::bail!(
                "{}:{}: task {} attempt {}{} again (first on line {first})",
                path.display(),
                i + 1,
                attempt.task,
                attempt.attempt,
                attempt
                    .model
                    .as_ref()
                    .map(|m| format!(" of model {m}"))
                    .unwrap_or_default()
            );
        }
        out.push((attempt, line.to_owned()));
    }
    Ok(out)
}

/// Per task: attempts, passes, and whether the first attempt passed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskResult {
    /// Attempts made.
    pub attempts: u32,
    /// Attempts that passed.
    pub passed: u32,
    /// Whether the first attempt passed.
    pub first: bool,
}

impl TaskResult {
    fn rate(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            f64::from(self.passed) / f64::from(self.attempts)
        }
    }
}

/// The attempts grouped by task.
pub fn by_task<'a>(
    attempts: impl IntoIterator<Item = &'a Attempt>,
) -> BTreeMap<String, TaskResult> {
    let mut out: BTreeMap<String, TaskResult> = BTreeMap::new();
    for a in attempts {
        let r = out.entry(a.task.clone()).or_default();
        r.attempts += 1;
        r.passed += u32::from(a.passed);
        if a.attempt == 1 {
            r.first = a.passed;
        }
    }
    out
}

/// The summary line `agentls eval` ends with.
pub fn summary(results: &BTreeMap<String, TaskResult>) -> String {
    let n = results.len() as f64;
    let firsts = results.values().filter(|r| r.first).count() as f64;
    let any = results.values().filter(|r| r.passed > 0).count() as f64;
    let k = results.values().map(|r| r.attempts).max().unwrap_or(1);
    let (lo, hi) = wilson(firsts, n);
    let share = |x: f64| if n == 0.0 { 0.0 } else { x / n };
    // With one attempt per task pass@k is pass@1: said once.
    let at_k = if k > 1 {
        let (lo, hi) = wilson(any, n);
        format!(" · pass@{k} {:.2} (95% CI {lo:.2}-{hi:.2})", share(any))
    } else {
        String::new()
    };
    format!(
        "pass@1 {:.2} (95% CI {lo:.2}-{hi:.2}){at_k} · {} task(s)",
        share(firsts),
        results.len()
    )
}

/// What the harness adds to the agent's time, over the attempts that measured it:
/// copying the repository in, and the agent loop's own work (what neither the model
/// nor the tools took). The task's check is the task's, not the harness's.
pub fn overhead(attempts: &[Attempt]) -> Option<String> {
    let measured: Vec<(f64, f64, f64)> = attempts
        .iter()
        .filter_map(|a| Some((a.setup_ms?, a.harness_ms?, a.agent_ms?)))
        .collect();
    let agent: f64 = measured.iter().map(|m| m.2).sum();
    if measured.is_empty() || agent <= 0.0 {
        return None;
    }
    let n = measured.len() as f64;
    let setup: f64 = measured.iter().map(|m| m.0).sum();
    let harness: f64 = measured.iter().map(|m| m.1).sum();
    Some(format!(
        "harness overhead {:.1}% of agent time: {:.0} ms per attempt (copying the repository {:.0} ms, the agent loop's own work {:.0} ms; agent {:.0} ms)",
        (setup + harness) / agent * 100.0,
        (setup + harness) / n,
        setup / n,
        harness / n,
        agent / n
    ))
}

/// Wilson's 95% interval for `k` successes in `n`.
pub fn wilson(k: f64, n: f64) -> (f64, f64) {
    if n == 0.0 {
        return (0.0, 0.0);
    }
    let z = 1.96_f64;
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let center = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The two-sided exact sign test: `better` tasks improved, `worse` got worse (ties
/// left out); the probability of a split at least this uneven if neither run is
/// better.
pub fn sign_test(better: u32, worse: u32) -> f64 {
    let n = better + worse;
    if n == 0 {
        return 1.0;
    }
    let k = better.min(worse);
    // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so large n stays finite.
    let ln_half_n = f64::from(n) * 0.5_f64.ln();
    let mut ln_choose = 0.0_f64;
    let mut tail = 0.0_f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += (f64::from(n - i + 1)).ln() - f64::from(i).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// `agentls eval merge OUT IN…`: the shards' lines in one file, each (task, attempt)
/// once; prints the summary over all of them.
pub fn merge(out: &Path, inputs: &[std::path::PathBuf]) -> anyhow::Result<ExitCode> {
    let mut seen: BTreeMap<(String, u32), std::path::PathBuf> = BTreeMap::new();
    let mut lines = Vec::new();
    let mut attempts = Vec::new();
    for input in inputs {
        for (a, line) in read(input)? {
            if let Some(first) = seen.insert((a.task.clone(), a.attempt), input.clone()) {
                anyhow::bail!(
                    "task {} attempt {} is in both {} and {}: shards must not overlap",
                    a.task,
                    a.attempt,
                    first.display(),
                    input.display()
                );
            }
            lines.push(line);
            attempts.push(a);
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{} attempt(s) from {} file(s) in {}",
        attempts.len(),
        inputs.len(),
        out.display()
    )?;
    writeln!(stdout, "{}", summary(&by_task(&attempts)))?;
    Ok(ExitCode::SUCCESS)
}

/// The comparison of two runs, as `--json` prints it.
pub fn compare_value(a: &[Attempt], b: &[Attempt]) -> Value {
    let (ra, rb) = (by_task(a), by_task(b));
    let both: Vec<&String> = ra.keys().filter(|t| rb.contains_key(*t)).collect();
    let mut tasks = Vec::new();
    let (mut better, mut worse) = (0u32, 0u32);
    for t in &both {
        let (x, y) = (&ra[*t], &rb[*t]);
        let change = y.rate() - x.rate();
        if change > 0.0 {
            better += 1;
        } else if change < 0.0 {
            worse += 1;
        }
        tasks.push(json!({
            "task": t,
            "a": {"passed": x.passed, "attempts": x.attempts},
            "b": {"passed": y.passed, "attempts": y.attempts},
            "change": change,
        }));
    }
    let only = |of: &BTreeMap<String, TaskResult>, other: &BTreeMap<String, TaskResult>| {
        of.keys()
            .filter(|t| !other.contains_key(*t))
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    // pass@1 over the tasks both ran, so the two rates are comparable.
    let pass1 = |r: &BTreeMap<String, TaskResult>| {
        let n = both.len() as f64;
        let k = both.iter().filter(|t| r[**t].first).count() as f64;
        let (lo, hi) = wilson(k, n);
        json!({"pass_at_1": if n == 0.0 { 0.0 } else { k / n }, "ci95": [lo, hi]})
    };
    // Means over the attempts at tasks both ran, like pass@1.
    let mean = |xs: &[Attempt], f: fn(&Attempt) -> Option<f64>| {
        let v: Vec<f64> = xs
            .iter()
            .filter(|x| ra.contains_key(&x.task) && rb.contains_key(&x.task))
            .filter_map(f)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let p = sign_test(better, worse);
    let (pa, pb) = (pass1(&ra), pass1(&rb));
    let difference =
        pb["pass_at_1"].as_f64().unwrap_or(0.0) - pa["pass_at_1"].as_f64().unwrap_or(0.0);
    json!({
        "tasks": tasks,
        "tasks_in_both": both.len(),
        "only_in_a": only(&ra, &rb),
        "only_in_b": only(&rb, &ra),
        "a": pa,
        "b": pb,
        "pass_at_1_difference": difference,
        "test": {
            "name": "two-sided exact sign test over tasks in both (per-task pass rate; ties left out)",
            "better": better,
            "worse": worse,
            "p": p,
            "significant": p < 0.05,
        },
        "mean_agent_ms": {"a": mean(a, |x| x.agent_ms), "b": mean(b, |x| x.agent_ms)},
        "mean_input_tokens": {
            "a": mean(a, |x| x.input_tokens.map(|t| t as f64)),
            "b": mean(b, |x| x.input_tokens.map(|t| t as f64)),
        },
        "mean_output_tokens": {
            "a": mean(a, |x| x.output_tokens.map(|t| t as f64)),
            "b": mean(b, |x| x.output_tokens.map(|t| t as f64)),
        },
    })
}

/// The attempts of each model in a file (`""` for lines without a model).
fn by_model(attempts: Vec<Attempt>) -> BTreeMap<String, Vec<Attempt>> {
    let mut out: BTreeMap<String, Vec<Attempt>> = BTreeMap::new();
    for a in attempts {
        out.entry(a.model.clone().unwrap_or_default())
            .or_default()
            .push(a);
    }
    out
}

/// One comparison to make: its name, A's attempts, B's.
type Pair = (String, Vec<Attempt>, Vec<Attempt>);

/// The pairs to compare: a file of one model against a file of one model, whatever
/// their names (a model against another); otherwise each model named in both files
/// against itself (a change judged per model), or only `model`. The models left out
/// are named.
fn pairs(
    a: Vec<Attempt>,
    b: Vec<Attempt>,
    model: Option<&str>,
) -> anyhow::Result<(Vec<Pair>, Vec<String>)> {
    let (mut ma, mut mb) = (by_model(a), by_model(b));
    if let Some(name) = model {
        let (Some(x), Some(y)) = (ma.remove(name), mb.remove(name)) else {
            anyhow::bail!("model `{name}` is not in both files");
        };
        return Ok((vec![(name.to_owned(), x, y)], Vec::new()));
    }
    if ma.len() == 1 && mb.len() == 1 {
        let (na, x) = ma.pop_first().unwrap_or_default();
        let (nb, y) = mb.pop_first().unwrap_or_default();
        let name = if na == nb {
            na
        } else {
            format!("{na} vs {nb}")
        };
        return Ok((vec![(name, x, y)], Vec::new()));
    }
    let mut out = Vec::new();
    let mut left = Vec::new();
    for (name, x) in ma {
        match mb.remove(&name) {
            Some(y) => out.push((name, x, y)),
            None => left.push(format!("{name} (only in A)")),
        }
    }
    left.extend(mb.into_keys().map(|name| format!("{name} (only in B)")));
    anyhow::ensure!(
        !out.is_empty(),
        "no model is in both files ({}): name one with --model",
        left.join(", ")
    );
    Ok((out, left))
}

/// `agentls eval compare A B [--model NAME] [--json]`: per model (see [`pairs`]), the
/// comparison; with `--json` one object per line, each with its `model`.
pub fn compare(a: &Path, b: &Path, model: Option<&str>, as_json: bool) -> anyhow::Result<ExitCode> {
    let xs: Vec<Attempt> = read(a)?.into_iter().map(|(x, _)| x).collect();
    let ys: Vec<Attempt> = read(b)?.into_iter().map(|(x, _)| x).collect();
    let (pairs, left) = pairs(xs, ys, model)?;
    let several = pairs.len() > 1;
    let mut out = std::io::stdout().lock();
    for (name, xs, ys) in pairs {
        let mut v = compare_value(&xs, &ys);
        v["model"] = json!(name);
        if as_json {
            writeln!(out, "{v}")?;
            continue;
        }
        if several {
            writeln!(out, "model {name}:")?;
        }
        print_comparison(&mut out, &v)?;
    }
    if !left.is_empty() && !as_json {
        writeln!(out, "not compared: {}", left.join(", "))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One comparison ([`compare_value`]) for people.
fn print_comparison(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    writeln!(out, "{:<28} {:>7} {:>7} {:>7}", "task", "A", "B", "change")?;
    for t in v["tasks"].as_array().into_iter().flatten() {
        let frac = |s: &Value| format!("{}/{}", s["passed"], s["attempts"]);
        let change = t["change"].as_f64().unwrap_or(0.0);
        writeln!(
            out,
            "{:<28} {:>7} {:>7} {:>+7.2}",
            t["task"].as_str().unwrap_or_default(),
            frac(&t["a"]),
            frac(&t["b"]),
            change
        )?;
    }
    let rate = |s: &Value| {
        format!(
            "{:.2} (95% CI {:.2}-{:.2})",
            s["pass_at_1"].as_f64().unwrap_or(0.0),
            s["ci95"][0].as_f64().unwrap_or(0.0),
            s["ci95"][1].as_f64().unwrap_or(0.0)
        )
    };
    let in_both = v["tasks_in_both"].as_u64().unwrap_or(0);
    if in_both == 0 {
        writeln!(out, "no task is in both files: nothing to compare")?;
    } else {
        writeln!(
            out,
            "pass@1 over {in_both} task(s) in both: A {} · B {} · difference {:+.2}",
            rate(&v["a"]),
            rate(&v["b"]),
            v["pass_at_1_difference"].as_f64().unwrap_or(0.0)
        )?;
        let test = &v["test"];
        let p = test["p"].as_f64().unwrap_or(1.0);
        writeln!(
            out,
            "sign test (two-sided, exact) over {in_both} task(s) in both: {} better, {} worse, p = {p:.3}: {}",
            test["better"],
            test["worse"],
            if p < 0.05 {
                "the difference is larger than noise"
            } else {
                "no significant difference"
            }
        )?;
    }
    for (what, key, unit) in [
        ("agent time", "mean_agent_ms", " ms"),
        ("input tokens", "mean_input_tokens", ""),
        ("output tokens", "mean_output_tokens", ""),
    ] {
        if let (Some(x), Some(y)) = (v[key]["a"].as_f64(), v[key]["b"].as_f64()) {
            let pct = if x == 0.0 { 0.0 } else { (y - x) / x * 100.0 };
            writeln!(
                out,
                "mean {what} (tasks in both): A {x:.0}{unit} · B {y:.0}{unit} ({pct:+.1}%)"
            )?;
        }
    }
    for (side, key) in [("A", "only_in_a"), ("B", "only_in_b")] {
        let names: Vec<&str> = v[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !names.is_empty() {
            writeln!(out, "only in {side} (not compared): {}", names.join(", "))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(task: &str, attempt: u32, passed: bool) -> Attempt {
        Attempt {
            task: task.to_owned(),
            attempt,
            passed,
            agent_ms: Some(100.0),
            input_tokens: Some(10),
            output_tokens: Some(2),
            ..Attempt::default()
        }
    }

    #[test]
    fn the_sign_test_gives_known_p_values() {
        // Ten tasks all one way: 2 / 2^10.
        assert!((sign_test(10, 0) - 0.001_953).abs() < 1e-5);
        assert!((sign_test(0, 10) - 0.001_953).abs() < 1e-5);
        // Even splits and no difference are not evidence.
        assert_eq!(sign_test(5, 5), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        // 8 of 10: 2 * (1 + 10 + 45) / 1024.
        assert!((sign_test(8, 2) - 0.109_375).abs() < 1e-6);
        // Large n stays finite.
        assert!(sign_test(600, 400) < 1e-9);
    }

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = wilson(5.0, 10.0);
        assert!(
            (lo - 0.237).abs() < 0.01 && (hi - 0.763).abs() < 0.01,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0.0, 0.0), (0.0, 0.0));
        let (lo, hi) = wilson(10.0, 10.0);
        assert!(hi <= 1.0 && lo > 0.6, "{lo} {hi}");
    }

    #[test]
    fn compare_pairs_tasks_and_lists_the_unpaired() {
        let a = vec![
            attempt("t1", 1, false),
            attempt("t2", 1, true),
            attempt("t3", 1, false),
            attempt("only-a", 1, true),
        ];
        let b = vec![
            attempt("t1", 1, true),
            attempt("t2", 1, true),
            attempt("t3", 1, true),
            attempt("only-b", 1, false),
        ];
        let v = compare_value(&a, &b);
        assert_eq!(v["test"]["better"], 2);
        assert_eq!(v["test"]["worse"], 0);
        assert_eq!(v["test"]["p"], 0.5);
        assert_eq!(v["test"]["significant"], false);
        assert_eq!(v["a"]["pass_at_1"].as_f64().unwrap(), 1.0 / 3.0);
        assert_eq!(v["b"]["pass_at_1"], 1.0);
        assert_eq!(v["only_in_a"], json!(["only-a"]));
        assert_eq!(v["only_in_b"], json!(["only-b"]));
        assert_eq!(v["tasks_in_both"], 3);
        assert!((v["pass_at_1_difference"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn compare_means_and_rates_cover_the_tasks_in_both_only() {
        let slow = |task: &str, ms: f64, tokens: u64| Attempt {
            agent_ms: Some(ms),
            input_tokens: Some(tokens),
            ..attempt(task, 1, true)
        };
        let a = vec![slow("t", 100.0, 10), slow("only-a", 10_000.0, 9_999)];
        let b = vec![slow("t", 300.0, 30)];
        let v = compare_value(&a, &b);
        assert_eq!(v["mean_agent_ms"], json!({"a": 100.0, "b": 300.0}));
        assert_eq!(v["mean_input_tokens"], json!({"a": 10.0, "b": 30.0}));
        // Per-attempt pass rates: 1 of 3 against 2 of 3 is better, 2 of 3 against 2 of
        // 3 a tie, whatever the first attempts did.
        let a = vec![
            attempt("x", 1, true),
            attempt("x", 2, false),
            attempt("x", 3, false),
            attempt("y", 1, true),
            attempt("y", 2, true),
            attempt("y", 3, false),
        ];
        let b = vec![
            attempt("x", 1, false),
            attempt("x", 2, true),
            attempt("x", 3, true),
            attempt("y", 1, false),
            attempt("y", 2, true),
            attempt("y", 3, true),
        ];
        let v = compare_value(&a, &b);
        assert_eq!(
            (v["test"]["better"].as_u64(), v["test"]["worse"].as_u64()),
            (Some(1), Some(0))
        );
        assert_eq!(v["a"]["pass_at_1"], 1.0);
        assert_eq!(v["b"]["pass_at_1"], 0.0);
    }

    #[test]
    fn reading_refuses_bad_lines_and_an_attempt_twice() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("run.jsonl");
        std::fs::write(
            &f,
            "{\"task\":\"a\",\"attempt\":1,\"passed\":true}\n\n{\"task\":\"a\",\"attempt\":2,\"passed\":false}\n",
        )
        .unwrap();
        assert_eq!(read(&f).unwrap().len(), 2);
        std::fs::write(
            &f,
            "{\"task\":\"a\",\"attempt\":1,\"passed\":true}\n{\"task\":\"a\",\"attempt\":1,\"passed\":false}\n",
        )
        .unwrap();
        let e = read(&f).unwrap_err().to_string();
        assert!(
            e.contains("run.jsonl:2: task a attempt 1 again (first on line 1)"),
            "{e}"
        );
        std::fs::write(&f, "{\"task\":\"a\",\"attempt\":1}\n").unwrap();
        let e = format!("{:#}", read(&f).unwrap_err());
        assert!(
            e.contains("run.jsonl:1: not an attempt line") && e.contains("passed"),
            "{e}"
        );
        let e = format!("{:#}", read(&dir.path().join("none.jsonl")).unwrap_err());
        assert!(e.contains("reading ") && e.contains("none.jsonl"), "{e}");
    }

    #[test]
    fn overhead_is_the_copy_and_the_loop_s_own_work_over_agent_time() {
        let timed = |setup: f64, harness: f64, agent: f64| Attempt {
            agent_ms: Some(agent),
            setup_ms: Some(setup),
            harness_ms: Some(harness),
            ..attempt("a", 1, true)
        };
        let line = overhead(&[timed(10.0, 5.0, 1000.0), timed(30.0, 5.0, 3000.0)]).unwrap();
        assert!(line.starts_with("harness overhead 1.2% of agent time: 25 ms per attempt (copying the repository 20 ms, the agent loop's own work 5 ms; agent 2000 ms)"), "{line}");
        // Lines written before the figures were recorded say nothing.
        assert_eq!(overhead(&[attempt("a", 1, true)]), None);
    }

    #[test]
    fn summary_counts_first_attempts_and_any() {
        let r = by_task(&[
            attempt("a", 1, false),
            attempt("a", 2, true),
            attempt("b", 1, true),
            attempt("b", 2, true),
        ]);
        assert_eq!(
            summary(&r),
            "pass@1 0.50 (95% CI 0.09-0.91) · pass@2 1.00 (95% CI 0.34-1.00) · 2 task(s)"
        );
    }

    #[test]
    fn merge_refuses_overlapping_shards() {
        let dir = tempfile::tempdir().unwrap();
        let (x, y, out) = (
            dir.path().join("x.jsonl"),
            dir.path().join("y.jsonl"),
            dir.path().join("all.jsonl"),
        );
        std::fs::write(&x, "{\"task\":\"a\",\"attempt\":1,\"passed\":true}\n").unwrap();
        std::fs::write(&y, "{\"task\":\"a\",\"attempt\":1,\"passed\":false}\n").unwrap();
        let e = merge(&out, &[x.clone(), y.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("task a attempt 1 is in both"), "{e}");
        std::fs::write(
            &y,
            "{\"task\":\"b\",\"attempt\":1,\"passed\":false}\nnot json\n",
        )
        .unwrap();
        let e = format!("{:#}", merge(&out, &[x, y]).unwrap_err());
        assert!(e.contains("y.jsonl:2"), "{e}");
    }
}

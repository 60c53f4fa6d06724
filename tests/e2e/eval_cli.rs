//! `agentls eval` over the task suite in fixtures/tasks: the suite checks itself (every
//! check fails untouched and passes with its solution), and a scripted model that
//! solves one task of two scores pass@1 0.50, one JSON line per attempt, with the
//! suite's own files left as they were; `eval report --html` writes one self-contained
//! page.

use std::path::Path;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{agentls_ok, bin, fixture_config};

fn tasks() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/tasks")
}

/// `agentls eval --tasks fixtures/tasks --config CFG --out OUT ARGS…`, succeeded: its
/// stdout.
async fn eval_ok(cfg: &Path, out: &Path, args: &[&str]) -> String {
    let tasks = tasks();
    let fixed: [&std::ffi::OsStr; 7] = [
        "eval".as_ref(),
        "--tasks".as_ref(),
        tasks.as_os_str(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    agentls_ok(
        fixed
            .into_iter()
            .chain(args.iter().map(std::ffi::OsStr::new)),
    )
    .await
}

#[test]
fn every_task_fails_untouched_and_passes_with_its_solution() {
    let out = std::process::Command::new(bin())
        .args(["eval", "--verify-tasks", "--tasks"])
        .arg(tasks())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 bad"), "{stdout}");
    assert!(!stdout.contains("BAD"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_solves_one_task_of_two_scores_half() {
    let model = ModelServer::start().await.unwrap();
    // Tasks run in name order: js-reverse (given up), then py-add (fixed).
    model.push_turn(Turn::text("I cannot do that."));
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
    ));
    model.push_turn(Turn::text("Fixed."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let jsonl = dir.path().join("out.jsonl");
    let html = dir.path().join("report.html");
    let stdout = eval_ok(
        &cfg,
        &jsonl,
        &[
            "--only",
            "js-reverse,py-add",
            "--html",
            html.to_str().unwrap(),
        ],
    )
    .await;
    assert!(stdout.contains("FAIL js-reverse #1"), "{stdout}");
    assert!(stdout.contains("PASS py-add #1"), "{stdout}");
    assert!(stdout.contains("pass@1 0.50"), "{stdout}");
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["task"], "js-reverse");
    assert_eq!(lines[0]["passed"], false);
    assert_eq!(lines[1]["task"], "py-add");
    assert_eq!(lines[1]["passed"], true);
    assert_eq!(lines[1]["status"], "done");
    assert_eq!(lines[1]["model"], "fixture");
    assert!(
        lines[1]["tool_calls"].as_u64().unwrap() >= 1,
        "{}",
        lines[1]
    );
    let fixed = &lines[1];
    assert_eq!(fixed["calls_by_tool"]["str_replace"], 1, "{fixed}");
    assert_eq!(fixed["errors_by_tool"], json!({}), "{fixed}");
    assert!(fixed["cached_input_tokens"].is_u64(), "{fixed}");
    // Times add up: the attempt's wall time holds the copy, the agent and the check,
    // and the agent's first token and first edit came within its time.
    let num = |k: &str| fixed[k].as_f64().unwrap_or_else(|| panic!("{k}: {fixed}"));
    assert!(
        num("wall_ms") >= num("setup_ms") + num("agent_ms") + num("check_ms") - 0.5,
        "{fixed}"
    );
    assert!(num("first_token_ms") <= num("first_edit_ms"), "{fixed}");
    assert!(num("first_edit_ms") <= num("agent_ms"), "{fixed}");
    assert!(num("harness_ms") < num("agent_ms"), "{fixed}");
    // The trajectory is kept beside the results, and records the edit.
    let trajectory = std::path::PathBuf::from(fixed["trajectory"].as_str().unwrap());
    assert!(
        trajectory.starts_with(dir.path().join("out.trajectories")),
        "{fixed}"
    );
    let recorded = std::fs::read_to_string(&trajectory).unwrap();
    assert!(recorded.contains("return a + b"), "{recorded}");
    // What the harness adds, measured in this run.
    let overhead = stdout
        .lines()
        .find(|l| l.starts_with("harness overhead "))
        .unwrap_or_else(|| panic!("{stdout}"));
    eprintln!("{overhead}");
    // The run's report, drawn from its --out file.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        page.contains("js-reverse") && page.contains("py-add") && page.contains("fixture"),
        "{page}"
    );
    assert!(page.contains("pass@1 0.50"), "{page}");
    // Each attempt worked on a copy: the suite is untouched.
    let repo = std::fs::read_to_string(tasks().join("py-add/repo/calc.py")).unwrap();
    assert!(repo.contains("return a - b"), "{repo}");
}

/// A suite run as two shards, the shards merged, and the merged run compared with a
/// baseline: what a CI matrix would do.
#[tokio::test(flavor = "multi_thread")]
async fn shards_merge_into_one_run_and_compare_with_a_baseline() {
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let eval = |args: Vec<std::ffi::OsString>| {
        agentls_ok(std::iter::once(std::ffi::OsString::from("eval")).chain(args))
    };
    let shard = |i: &str, out: &Path| -> Vec<std::ffi::OsString> {
        vec![
            "--only".into(),
            "js-reverse,py-add".into(),
            "--tasks".into(),
            tasks().into(),
            "--config".into(),
            cfg.clone().into(),
            "--shard".into(),
            i.into(),
            "--out".into(),
            out.into(),
        ]
    };
    // Shard 1 of 2 holds js-reverse (given up), shard 2 py-add (fixed).
    model.push_turn(Turn::text("I cannot do that."));
    let one = dir.path().join("one.jsonl");
    let printed = eval(shard("1/2", &one)).await;
    assert!(
        printed.contains("FAIL js-reverse #1") && !printed.contains("py-add"),
        "{printed}"
    );
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
    ));
    model.push_turn(Turn::text("Fixed."));
    let two = dir.path().join("two.jsonl");
    let printed = eval(shard("2/2", &two)).await;
    assert!(
        printed.contains("PASS py-add #1") && !printed.contains("js-reverse"),
        "{printed}"
    );

    let merged = dir.path().join("merged.jsonl");
    let printed = eval(vec![
        "merge".into(),
        merged.clone().into(),
        one.into(),
        two.clone().into(),
    ])
    .await;
    assert!(
        printed.contains("pass@1 0.50") && printed.contains("2 task(s)"),
        "{printed}"
    );
    assert_eq!(std::fs::read_to_string(&merged).unwrap().lines().count(), 2);
    // Merging a shard twice is refused.
    let out = std::process::Command::new(bin())
        .args(["eval", "merge"])
        .arg(dir.path().join("twice.jsonl"))
        .arg(&two)
        .arg(&two)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in both"));

    // A baseline that solved neither: B is better on one task, not beyond noise.
    let baseline = dir.path().join("baseline.jsonl");
    std::fs::write(
        &baseline,
        "{\"task\":\"js-reverse\",\"attempt\":1,\"passed\":false,\"agent_ms\":10}\n\
         {\"task\":\"py-add\",\"attempt\":1,\"passed\":false,\"agent_ms\":10}\n",
    )
    .unwrap();
    let printed = eval(vec![
        "compare".into(),
        baseline.clone().into(),
        merged.clone().into(),
    ])
    .await;
    assert!(
        printed.contains("py-add") && printed.contains("+1.00"),
        "{printed}"
    );
    assert!(
        printed.contains("1 better, 0 worse, p = 1.000: no significant difference"),
        "{printed}"
    );
    let printed = eval(vec![
        "compare".into(),
        "--json".into(),
        baseline.into(),
        merged.into(),
    ])
    .await;
    let v: Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(v["b"]["pass_at_1"], 0.5);
    assert_eq!(v["test"]["significant"], false);
}

/// `--jobs 2` reports the same attempts as `--jobs 1`; the wall times of both are
/// printed side by side (each attempt's check runs in its own sandbox).
#[tokio::test(flavor = "multi_thread")]
async fn two_jobs_report_what_one_job_does() {
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let only = "py-add,py-dedupe,py-word-count,js-reverse,js-sum,go-lru";
    let mut runs = Vec::new();
    for jobs in ["1", "2"] {
        // Every attempt gives up at once: the answers cannot depend on the order.
        for _ in 0..6 {
            model.push_turn(Turn::text("I cannot do that."));
        }
        let out_file = dir.path().join(format!("jobs{jobs}.jsonl"));
        let started = std::time::Instant::now();
        let stdout = eval_ok(&cfg, &out_file, &["--only", only, "--jobs", jobs]).await;
        let took = started.elapsed();
        assert!(
            stdout.contains("pass@1 0.00") && stdout.contains("6 task(s)"),
            "{stdout}"
        );
        let mut seen: Vec<(String, bool)> = std::fs::read_to_string(&out_file)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["task"].as_str().unwrap().to_owned(),
                    v["passed"].as_bool().unwrap(),
                )
            })
            .collect();
        seen.sort();
        runs.push((seen, took));
    }
    assert_eq!(runs[0].0, runs[1].0);
    // A task that does not exist is an error, not a smaller suite.
    let out = std::process::Command::new(bin())
        .args(["eval", "--only", "py-add,no-such-task", "--tasks"])
        .arg(tasks())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no task named no-such-task"));
    assert_eq!(runs[0].0.len(), 6);
    eprintln!(
        "eval of 6 tasks: --jobs 1 {:.2?}, --jobs 2 {:.2?} ({:.2}x)",
        runs[0].1,
        runs[1].1,
        runs[0].1.as_secs_f64() / runs[1].1.as_secs_f64()
    );
}

/// `eval report` on two runs written here (two models, one a hostile name): a
/// self-contained page naming every task, nothing that runs or loads; `--html` on a run
/// without `--out` is refused before anything runs.
#[test]
fn report_writes_one_self_contained_html_page() {
    let dir = tempfile::tempdir().unwrap();
    let line = |model: &str, task: &str, attempt: u32, passed: bool, ms: u32| {
        json!({
            "task": task, "attempt": attempt, "model": model, "passed": passed,
            "status": "done", "agent_ms": ms, "input_tokens": 1000, "output_tokens": 200,
            "tool_calls": 3, "errors_by_class": {"InvalidArguments": u32::from(!passed)},
        })
        .to_string()
    };
    let names = ["py-add", "js-reverse", "go-lru"];
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let evil = "<script>alert(1)</script>";
    let mut text_a = String::new();
    let mut text_b = String::new();
    for (i, task) in names.iter().enumerate() {
        for attempt in 1..=2 {
            text_a += &(line("small", task, attempt, i == 0, 1000 + 100 * attempt) + "\n");
            text_b += &(line(evil, task, attempt, i < 2, 3000 + 100 * attempt) + "\n");
        }
    }
    std::fs::write(&a, text_a).unwrap();
    std::fs::write(&b, text_b).unwrap();
    // Lines of an older run, with no model: named after their file.
    let old = dir.path().join("baseline.jsonl");
    std::fs::write(
        &old,
        "{\"task\":\"py-add\",\"attempt\":1,\"passed\":false,\"agent_ms\":10}\n",
    )
    .unwrap();
    let html = dir.path().join("report.html");
    let out = std::process::Command::new(bin())
        .args(["eval", "report"])
        .args([&a, &b, &old])
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("small: pass@1 0.33") && stdout.contains("baseline: pass@1 0.00"),
        "{stdout}"
    );
    assert!(stdout.contains("report in "), "{stdout}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(!page.to_lowercase().contains("<script"), "{page}");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{page}"
    );
    for name in names
        .iter()
        .chain(&["small", "baseline", "InvalidArguments"])
    {
        assert!(page.contains(name), "{name} not in the page");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains(&a.display().to_string()));

    // --html on a run needs --out; nothing is written.
    let refused = dir.path().join("refused.html");
    let out = std::process::Command::new(bin())
        .args(["eval", "--tasks"])
        .arg(tasks())
        .arg("--html")
        .arg(&refused)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("needs --out"), "{stderr}");
    assert!(!refused.exists());
}

/// Two models in one run: each runs every task, each line names its model, the summary
/// is per model, `eval report` reads the file back per model, and `eval compare` pairs
/// each model with itself rather than one model's tasks with another's.
#[tokio::test(flavor = "multi_thread")]
async fn two_models_in_one_run_are_scored_apart() {
    let model = ModelServer::start().await.unwrap();
    // One job: py-add with `good` first (it fixes the bug), then with `weak` (gives up).
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
    ));
    model.push_turn(Turn::text("Fixed."));
    model.push_turn(Turn::text("I cannot do that."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.good]\nwire = \"openai_chat\"\nbase_url = \"{0}\"\n\
             [models.weak]\nwire = \"openai_chat\"\nbase_url = \"{0}\"\n",
            model.url()
        ),
    )
    .unwrap();
    let jsonl = dir.path().join("both.jsonl");
    let stdout = eval_ok(&cfg, &jsonl, &["--only", "py-add", "--model", "good,weak"]).await;
    assert!(stdout.contains("PASS py-add #1 [good]"), "{stdout}");
    assert!(stdout.contains("FAIL py-add #1 [weak]"), "{stdout}");
    assert!(stdout.contains("good: pass@1 1.00"), "{stdout}");
    assert!(stdout.contains("weak: pass@1 0.00"), "{stdout}");
    let models: Vec<String> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["model"].to_string())
        .collect();
    assert_eq!(models, ["\"good\"", "\"weak\""]);
    // The same (task, attempt) under two models is no duplicate.
    let printed = agentls_ok(["eval".as_ref(), "report".as_ref(), jsonl.as_os_str()]).await;
    assert!(
        printed.contains("good: pass@1 1.00") && printed.contains("weak: pass@1 0.00"),
        "{printed}"
    );
    // Compared model by model, never one model's tasks against another's.
    let said = agentls_ok([
        "eval".as_ref(),
        "compare".as_ref(),
        jsonl.as_os_str(),
        jsonl.as_os_str(),
    ])
    .await;
    assert!(
        said.contains("model good:\n") && said.contains("model weak:\n"),
        "{said}"
    );
    assert!(
        said.contains("A 1.00 (95% CI") && said.contains("A 0.00 (95% CI"),
        "{said}"
    );
    let json = agentls_ok([
        "eval".as_ref(),
        "compare".as_ref(),
        jsonl.as_os_str(),
        jsonl.as_os_str(),
        "--model".as_ref(),
        "weak".as_ref(),
        "--json".as_ref(),
    ])
    .await;
    let v: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["model"], "weak");
    assert_eq!(v["a"]["pass_at_1"], 0.0);
    let missing = std::process::Command::new(bin())
        .args(["eval", "compare", "--model", "nobody"])
        .args([&jsonl, &jsonl])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("model `nobody` is not in both files"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}

/// Each attempt has a budget: with `--max-steps 1` the agent stops after its first
/// model call, the line says why, and the check still decides.
#[tokio::test(flavor = "multi_thread")]
async fn an_attempt_stops_at_its_budget_and_is_still_checked() {
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call("c1", "read_file", json!({"path": "calc.py"})));
    model.push_turn(Turn::text("Never asked for."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let jsonl = dir.path().join("out.jsonl");
    let stdout = eval_ok(&cfg, &jsonl, &["--only", "py-add", "--max-steps", "1"]).await;
    assert!(
        stdout.contains("FAIL py-add #1: budgetexhausted"),
        "{stdout}"
    );
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&jsonl).unwrap().trim()).unwrap();
    assert_eq!(line["steps"], 1, "{line}");
    assert_eq!(line["passed"], false, "{line}");
    assert_eq!(model.remaining_turns(), 1, "the second call was never made");
}

/// A model call that runs past the attempt's time limit is cancelled, not waited for:
/// the budget's own check comes only before each call. The cancel comes a wind-down
/// reserve (40 ms of 2 s) before the limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_call_past_the_time_limit_is_cancelled() {
    let model = ModelServer::start().await.unwrap();
    // 40 frames 250 ms apart: ten seconds of streaming.
    model.push_turn(
        Turn::text("word ".repeat(40))
            .chunked(5)
            .frame_delay(std::time::Duration::from_millis(250)),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let jsonl = dir.path().join("out.jsonl");
    let stdout = eval_ok(&cfg, &jsonl, &["--only", "py-add", "--time-limit", "2"]).await;
    assert!(stdout.contains("FAIL py-add #1: time limit"), "{stdout}");
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&jsonl).unwrap().trim()).unwrap();
    let agent_ms = line["agent_ms"].as_f64().unwrap();
    assert!((1960.0..8000.0).contains(&agent_ms), "{line}");
}

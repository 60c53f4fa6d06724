//! Catching a model that repeats itself: the same call failing the same way, or the same
//! read giving the same answer, step after step.
//!
//! Small models loop: they resend a call with placeholder arguments after an
//! `InvalidArguments` error, or call `repo_map` thirty times in a row, until the budget
//! runs out. The guard watches consecutive steps. When a call fails the same way twice
//! in a row, its result carries a note saying so and what to do instead; after the third
//! time the identical call is refused for the next step without running (the model must
//! change something). Identical successful calls get the same treatment after
//! [`SAME_OK_NOTE`] and [`SAME_OK_REFUSE`] repeats: their answer cannot change. The
//! session logs every time the guard fires, so trajectories show it.

use std::collections::HashMap;

use agentls_model::ToolCall;
use agentls_tools::{ToolError, ToolOutput};

/// Identical failures after which the result carries a note.
pub const SAME_ERROR_NOTE: u32 = 2;
/// Identical failures after which the identical call is refused for the next step.
pub const SAME_ERROR_REFUSE: u32 = 3;
/// Identical successes after which the result carries a note.
pub const SAME_OK_NOTE: u32 = 2;
/// Identical successes after which the identical call is refused for the next step.
pub const SAME_OK_REFUSE: u32 = 3;

/// A call as the guard compares it: tool and arguments with whitespace and key order
/// made canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    name: String,
    args: String,
}

impl CallKey {
    /// The key of `call`.
    pub fn of(call: &ToolCall) -> Self {
        let args = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .map(|v| canonical(&v))
            .unwrap_or_else(|_| call.arguments.trim().to_owned());
        Self {
            name: call.name.clone(),
            args,
        }
    }
}

/// JSON text with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` agree.
fn canonical(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{:?}:{}", k, canonical(&map[k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        serde_json::Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

/// What one call came to, as the guard compares outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// It failed with this message.
    Failed(String),
    /// The tool worked but what it ran failed (a command exited non-zero) with this
    /// output: a failure, not an answer to read again.
    Exited(String),
    /// It succeeded with this output.
    Succeeded(String),
}

impl Seen {
    /// What `result` came to, with its digits masked and its lines in order: a test
    /// run's "finished in 0.01s" against "0.00s", or its two failures printed in the
    /// other order, is the same failure (the 0.5B model ran one failing `cargo test`
    /// 25 times in a row, each output differing only in timings and order).
    pub fn of(result: &Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(out) if out.failed => Self::Exited(outcome(&out.content)),
            Ok(out) => Self::Succeeded(outcome(&out.content)),
            Err(e) => Self::Failed(outcome(&e.message)),
        }
    }
}

/// `text` as outcomes are compared: digits masked (see [`without_digits`]) and lines
/// sorted, since parallel tests print their failures in any order.
fn outcome(text: &str) -> String {
    let masked = without_digits(text);
    let mut lines: Vec<&str> = masked.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// `text` with each run of digits replaced by one `#`.
fn without_digits(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

#[derive(Debug, Clone)]
struct Streak {
    seen: Seen,
    count: u32,
    /// The step the streak was last extended in.
    step: u32,
}

/// What the guard says about a call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to add.
    Quiet,
    /// Add this note to the result the model sees.
    Note(String),
}

/// The guard of one session.
#[derive(Debug, Default)]
pub struct RepeatGuard {
    streaks: HashMap<CallKey, Streak>,
    /// Calls refused until the step after the one named.
    refused: HashMap<CallKey, u32>,
}

impl RepeatGuard {
    /// Whether `call` is refused in `step`, and why (for the model).
    pub fn refuses(&self, call: &ToolCall, step: u32) -> Option<String> {
        let key = CallKey::of(call);
        let until = *self.refused.get(&key)?;
        (step <= until).then(|| {
            format!(
                "not run: this exact `{}` call has been made {} times in a row with the same result, so the harness refused it for this step. Change the arguments (use paths and names you have seen in earlier results, never placeholders like <path>), use what the earlier results told you, or take another step toward the task (read, edit, or run the tests)",
                call.name,
                self.streaks.get(&key).map_or(0, |s| s.count),
            )
        })
    }

    /// The tools with a call refused in `step`: a provider that constrains calls can
    /// keep the model off them for the step, rather than let it write the refused call
    /// again (the 0.5B model did, 25 times).
    pub fn refused_tools(&self, step: u32) -> Vec<String> {
        let mut names: Vec<String> = self
            .refused
            .iter()
            .filter(|(_, until)| step <= **until)
            .map(|(k, _)| k.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The edit `by` landed: what any other call comes to may now differ, so their
    /// streaks start over (a test run after a fix is not a repeat). The edit's own
    /// streak stands, so the same edit made again and again is still caught, and so do
    /// refusals already made.
    pub fn workspace_changed(&mut self, by: &ToolCall) {
        let key = CallKey::of(by);
        self.streaks.retain(|k, _| *k == key);
    }

    /// Records what `call` came to in `step` and says what to tell the model.
    pub fn record(&mut self, call: &ToolCall, step: u32, seen: Seen) -> Verdict {
        let key = CallKey::of(call);
        let streak = self.streaks.entry(key.clone()).or_insert(Streak {
            seen: seen.clone(),
            count: 0,
            step,
        });
        // A streak is consecutive steps with the identical call and outcome; a step
        // in which the call was refused does not break it.
        let refused_since = self
            .refused
            .get(&key)
            .is_some_and(|until| step <= until + 1);
        if streak.seen == seen && (step <= streak.step + 1 || refused_since) {
            if streak.step != step || streak.count == 0 {
                streak.count += 1;
            }
        } else {
            streak.seen = seen.clone();
            streak.count = 1;
        }
        streak.step = step;
        let count = streak.count;
        let (note_at, refuse_at) = match seen {
            Seen::Failed(_) | Seen::Exited(_) => (SAME_ERROR_NOTE, SAME_ERROR_REFUSE),
            Seen::Succeeded(_) => (SAME_OK_NOTE, SAME_OK_REFUSE),
        };
        if count >= refuse_at {
            self.refused.insert(key, step + 1);
        }
        if count < note_at {
            return Verdict::Quiet;
        }
        let what = match seen {
            Seen::Failed(_) => format!(
                "Note from the harness: this exact `{}` call has now failed the same way {count} times in a row. Repeating it will fail again. Read the error above and change what it points at: use real paths and names from earlier results (list_dir, find_files, grep), never placeholders like <path> or <command>, or take a different step.",
                call.name
            ),
            Seen::Exited(_) => format!(
                "Note from the harness: this exact `{}` call has now failed the same way {count} times in a row, with no edit of yours landing in between, so it will fail again. Read its error: open the file it points at, fix the code with an edit, then run it again.",
                call.name
            ),
            Seen::Succeeded(_) => format!(
                "Note from the harness: you have made this exact `{}` call {count} times in a row and got the same result each time; it will not change. Use it: read or edit the files it names, or run the tests.",
                call.name
            ),
        };
        if count >= refuse_at {
            Verdict::Note(format!(
                "{what} The identical call is refused for the next step."
            ))
        } else {
            Verdict::Note(what)
        }
    }
}

/// Whether a final answer is template text rather than an answer: an invented tool
/// response or call, as small models write when they imitate the chat template.
pub fn is_template_echo(answer: &str) -> bool {
    let a = answer.trim_start();
    [
        "<tool_response>",
        "<tool_call>",
        "<|im_start|>",
        "<|im_end|>",
    ]
    .iter()
    .any(|t| a.contains(t))
}

/// Whether an answer opens by repeating one of the tool `results` it follows: its
/// first line opens as the result's first line does, over that line's first
/// [`ECHO_CHARS`] characters (the whole line when shorter, but at least 12). Small models
/// answer with a copy of the last tool result ("error (InvalidArguments): …", "Edited
/// src/util.rs (1 change)"), often drifting from the original after a few words.
pub fn echoes_result<'a>(answer: &str, mut results: impl Iterator<Item = &'a str>) -> bool {
    let first = |t: &'a str| t.trim_start().lines().next().unwrap_or_default().trim();
    let answer: Vec<char> = answer.trim_start().chars().collect();
    results.any(|r| {
        let line: Vec<char> = first(r).chars().take(ECHO_CHARS).collect();
        line.len() >= 12 && answer.starts_with(&line)
    })
}

/// Characters of a tool result's first line an answer must repeat to count as its copy.
const ECHO_CHARS: usize = 40;

/// The part of an answer before any template text, trimmed.
pub fn before_template(answer: &str) -> &str {
    let cut = [
        "<tool_response>",
        "<tool_call>",
        "<|im_start|>",
        "<|im_end|>",
    ]
    .iter()
    .filter_map(|t| answer.find(t))
    .min()
    .unwrap_or(answer.len());
    answer[..cut].trim()
}

/// `answer` without a code fence opened on its last line and never closed
/// ("done.\n```json"): small models start a block as their turn ends.
pub fn without_dangling_fence(answer: &str) -> &str {
    let trimmed = answer.trim_end();
    let fences = trimmed
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    let last_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
    let last = trimmed[last_start..].trim();
    let opens = last.starts_with("```")
        && last[3..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '+');
    if fences % 2 == 1 && opens {
        trimmed[..last_start].trim_end()
    } else {
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn the_same_failure_is_noted_twice_and_refused_the_third_time() {
        let mut g = RepeatGuard::default();
        let c = call("run_command", r#"{"command": "<command>", "cwd": "<cwd>"}"#);
        let same = call("run_command", r#"{"cwd":"<cwd>","command":"<command>"}"#);
        let err = || Seen::Failed("InvalidArguments: no such directory <cwd>".into());
        assert_eq!(g.record(&c, 1, err()), Verdict::Quiet);
        assert!(g.refuses(&c, 2).is_none());
        let Verdict::Note(n) = g.record(&same, 2, err()) else {
            panic!("no note")
        };
        assert!(n.contains("2 times"), "{n}");
        assert!(g.refuses(&c, 3).is_none());
        let Verdict::Note(n) = g.record(&c, 3, err()) else {
            panic!("no note")
        };
        assert!(n.contains("refused"), "{n}");
        assert!(g.refuses(&c, 4).is_some());
        // Only for the next step, and only the identical call.
        assert!(g.refuses(&c, 5).is_none());
        assert!(
            g.refuses(&call("run_command", r#"{"command":"ls"}"#), 4)
                .is_none()
        );
    }

    #[test]
    fn a_failing_command_is_a_failure_whatever_its_timings() {
        let mut g = RepeatGuard::default();
        let c = call("run_command", r#"{"command":"cargo test"}"#);
        let run = |secs: &str| {
            let (a, b) = ("---- a stdout ----", "---- b stdout ----");
            let (first, second) = if secs == "0.01" { (b, a) } else { (a, b) };
            let mut out = ToolOutput::text(format!(
                "{first}\n{second}\ntest result: FAILED. 0 passed; 2 failed; finished in {secs}s\nexit code 101"
            ));
            out.failed = true;
            Seen::of(&Ok(out))
        };
        assert_eq!(g.record(&c, 1, run("0.00")), Verdict::Quiet);
        let Verdict::Note(n) = g.record(&c, 2, run("0.01")) else {
            panic!("no note")
        };
        assert!(n.contains("failed the same way 2 times"), "{n}");
        assert!(n.contains("fix the code"), "{n}");
        let Verdict::Note(n) = g.record(&c, 3, run("0.13")) else {
            panic!("no note")
        };
        assert!(n.contains("refused"), "{n}");
        assert!(g.refuses(&c, 4).is_some());
        // Another failure count is another outcome, and a passing run is not a failure.
        let mut g = RepeatGuard::default();
        g.record(&c, 1, run("0.00"));
        let other = {
            let mut out = ToolOutput::text("error[E0308]: mismatched types");
            out.failed = true;
            Seen::of(&Ok(out))
        };
        assert_eq!(g.record(&c, 2, other), Verdict::Quiet);
        // An edit in between starts the count over: the same run may now pass.
        let mut g = RepeatGuard::default();
        g.record(&c, 1, run("0.00"));
        let edit = call("str_replace", r#"{"path":"src/util.rs"}"#);
        g.workspace_changed(&edit);
        assert_eq!(g.record(&c, 2, run("0.00")), Verdict::Quiet);
        // ... but not the edit's own count: the same edit again and again is a loop.
        let mut g = RepeatGuard::default();
        let ok = || Seen::of(&Ok(ToolOutput::text("wrote src/util.rs")));
        g.workspace_changed(&edit);
        assert_eq!(g.record(&edit, 1, ok()), Verdict::Quiet);
        g.workspace_changed(&edit);
        assert!(matches!(g.record(&edit, 2, ok()), Verdict::Note(_)));
        assert!(matches!(
            Seen::of(&Ok(ToolOutput::text("ok"))),
            Seen::Succeeded(_)
        ));
    }

    #[test]
    fn a_different_outcome_or_a_gap_starts_over() {
        let mut g = RepeatGuard::default();
        let c = call("grep", r#"{"pattern":"x"}"#);
        g.record(&c, 1, Seen::Failed("a".into()));
        assert_eq!(g.record(&c, 2, Seen::Failed("b".into())), Verdict::Quiet);
        assert_eq!(g.record(&c, 5, Seen::Failed("b".into())), Verdict::Quiet);
    }

    #[test]
    fn identical_reads_are_noted_then_refused() {
        let mut g = RepeatGuard::default();
        let c = call("repo_map", "{}");
        let ok = || Seen::Succeeded("src/lib.rs: fn add".into());
        assert_eq!(g.record(&c, 1, ok()), Verdict::Quiet);
        assert!(matches!(g.record(&c, 2, ok()), Verdict::Note(_)));
        assert!(g.refuses(&c, 3).is_none());
        let Verdict::Note(n) = g.record(&c, 3, ok()) else {
            panic!("no note")
        };
        assert!(n.contains("refused"), "{n}");
        assert!(g.refuses(&c, 4).is_some());
    }

    #[test]
    fn template_echoes_are_recognised() {
        assert!(is_template_echo(
            "done.\n<tool_response>\n{\"path\": \"<path>\"}\n</tool_response>"
        ));
        assert_eq!(
            before_template("done.\n<tool_response>x</tool_response>"),
            "done."
        );
        assert!(!is_template_echo("Implemented `add`; the tests pass."));
    }

    #[test]
    fn an_answer_copying_a_tool_result_is_recognised() {
        let results = [
            "Edited src/util.rs (1 change)\n  src/util.rs hunk 1 at line 14\n",
            "error (InvalidArguments): src/util.rs: this edit was not made",
            "ok\n",
        ];
        let echo = |a: &str| echoes_result(a, results.iter().copied());
        assert!(echo(
            "Edited src/util.rs (1 change)\n  src/util.rs hunk 1 at line 14"
        ));
        assert!(echo(
            "  error (InvalidArguments): src/util.rs: this edit was not made"
        ));
        // Drifting from the result after its opening words.
        assert!(echo(
            "error (InvalidArguments): src/util.rs: this edit was not, because you"
        ));
        assert!(!echo("Edited src/util.rs: perimeter is implemented."));
        // A short result line is too common to count.
        assert!(!echo("ok, done"));
    }

    #[test]
    fn a_fence_opened_at_the_end_is_dropped_and_a_closed_one_kept() {
        assert_eq!(without_dangling_fence("done.\n```json"), "done.");
        assert_eq!(without_dangling_fence("done.\n```json\n\n"), "done.");
        assert_eq!(without_dangling_fence("```"), "");
        let closed = "Changed:\n```rust\nlet x = 1;\n```";
        assert_eq!(without_dangling_fence(closed), closed);
        let open_with_code = "Here:\n```rust\nlet x = 1;";
        assert_eq!(without_dangling_fence(open_with_code), open_with_code);
        assert_eq!(without_dangling_fence("plain answer"), "plain answer");
    }

    #[test]
    fn a_refused_tool_is_named_for_the_step_and_the_streak_survives_it() {
        let mut g = RepeatGuard::default();
        let read = call("read_file", r#"{"path": "a.py"}"#);
        for step in 1..=SAME_OK_REFUSE {
            assert!(g.refused_tools(step).is_empty(), "step {step}");
            g.record(&read, step, Seen::Succeeded("x".into()));
        }
        let next = SAME_OK_REFUSE + 1;
        assert_eq!(g.refused_tools(next), ["read_file"]);
        assert!(g.refused_tools(next + 1).is_empty());
        // Made again right after the step it was kept from: still a repeat.
        let verdict = g.record(&read, next + 1, Seen::Succeeded("x".into()));
        assert!(matches!(verdict, Verdict::Note(n) if n.contains("refused")));
        assert_eq!(g.refused_tools(next + 2), ["read_file"]);
    }
}

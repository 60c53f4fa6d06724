//! Writing tests for code that has none (characterisation tests). A small model
//! writes plausible calls but wrong expected values: asked what `slugify("Héllo
//! Wörld")` returns, the 0.5B model guesses. So the model only proposes calls (the
//! calls of its test answers, from several samples), each call's neighbours are added
//! (every integer argument one lower and one higher, where off-by-one mistakes hide),
//! the code as it is runs them all in the sandbox's overlay ([`pinned::probe`]), and
//! the test file asserts what it returned or raised. The tests pass on the code by
//! construction (checked before landing) and fail on a change of any behaviour a
//! call reaches. Only for tasks that ask for tests of code they say is not to change
//! or has none: pinning today's behaviour is what they ask.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls_index::{Language, SymbolKind};
use agentls_model::{ChatRequest, Message, Provider};
use agentls_tools::ToolContext;
use serde_json::json;

use super::ask::ModelUse;
use super::config::{MORE_SAMPLES, SolveConfig};
use super::generate::{code_of, fence, sampled};
use super::localise::{is_test_file, named_files, protected, task_words};
use super::pinned::{self, Layout, Outcome, Pinned};
use super::progress::Progress;
use super::report::{CandidateReport, SolveReport, Solved};
use super::verify::Verifier;
use crate::event::EventSender;

/// Most calls probed: the model's first, then neighbours.
const MAX_CALLS: usize = 300;

/// Longest call kept (longer ones are rarely one call on literals).
const MAX_CALL_CHARS: usize = 160;

/// Sampled test answers decoded together in one batch (where the provider can): the
/// engine reads the prompt once, and a step of four sequences costs little more than
/// one of a single sequence (`agentls bench decode`).
const TOGETHER: usize = 4;

/// Rounds of dropping the calls a compiler rejects (Go, Rust) before giving up.
const COMPILE_ROUNDS: usize = 4;

/// The test file the task names that the workspace does not have yet, below the
/// root: where tests would be written. `None` when the task names none.
pub fn new_test_file(task: &str, exists: impl Fn(&str) -> bool) -> Option<String> {
    task.split_whitespace().find_map(|w| {
        let w = w.trim_matches(|c: char| "`'\"(),;:!?".contains(c));
        let w = w.strip_suffix('.').unwrap_or(w).trim_start_matches("./");
        let path = Path::new(w);
        (Language::from_path(path).is_some()
            && !w.contains("..")
            && !w.starts_with('/')
            && is_test_file(Path::new(""), path)
            && !exists(w))
        .then(|| w.to_owned())
    })
}

/// Characterisation tests: a new test file the task names, written so it pins what
/// the code does today. Only where the task asks for tests and leaves the code as it
/// is (a fix that adds a test would pin its bug): where the task forbids changing
/// the code, that is settled; elsewhere the model chooses between the two readings.
pub(super) struct Characterising;

#[async_trait::async_trait]
impl super::strategy::Strategy for Characterising {
    fn name(&self) -> &'static str {
        "characterise"
    }

    fn plan(&self, scene: &super::strategy::Scene<'_>) -> Option<super::strategy::Plan> {
        let rel = new_test_file(scene.task, |w| held(scene.root, scene.index.paths(), w))?;
        Some(super::strategy::Plan {
            why: format!("the task names the test file {rel}, which does not exist yet"),
            work: Box::new(rel),
        })
    }

    async fn run(
        &self,
        cx: &super::strategy::Cx<'_>,
        work: super::strategy::Work,
    ) -> Option<Solved> {
        let Ok(rel) = work.downcast::<String>().map(|r| *r) else {
            return None;
        };
        let mut used = ModelUse::default();
        // A task that forbids changing the code and names a test file to write asks
        // for tests of the code as it is: the model's reading (margins of a few
        // hundredths on the 0.5B) is asked only where the task forbids nothing.
        let keep = if protected(cx.task).is_empty() {
            let reading = used
                .choose(
                    cx.provider,
                    cx.task,
                    "New tests of code that already exists, the code left exactly as it is",
                    "A change to the code (new tests may come with it)",
                    &cx.ctx.cancel,
                )
                .await;
            tracing::debug!("solve: tests only rather than a change to the code: {reading:?}");
            reading.is_some_and(|margin| margin > 0.0)
        } else {
            true
        };
        if !keep {
            tracing::info!("solve: the task does not ask only for tests");
            return None;
        }
        let mut solved = solve(cx.provider, cx.ctx, cx.task, cx.config, cx.events, rel).await?;
        solved.calls += used.calls;
        solved.model_ms += used.model_ms;
        Some(solved)
    }
}

/// Whether the workspace at `root` (whose files are `paths`) holds the file `w` a
/// task names: at that path below the root, or, for a bare file name, anywhere
/// (`test_schedule.py` for `tests/test_schedule.py` names a fix's failing test,
/// not a file to write).
fn held<P: AsRef<Path>>(root: &Path, paths: impl IntoIterator<Item = P>, w: &str) -> bool {
    root.join(w).exists()
        || (!w.contains('/')
            && paths
                .into_iter()
                .any(|p| p.as_ref().file_name().is_some_and(|n| n == w)))
}

/// The calls of `code` to any of `functions` (`slugify("a b")`, also written as
/// `slug.slugify(…)`), each on one line, as `(function, call)`; each call once.
pub fn calls(code: &str, functions: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for f in functions {
        for (at, _) in code.match_indices(f.as_str()) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            // A definition is not a call.
            let head = code[..at].trim_end();
            if ["def", "fn", "func", "function"]
                .iter()
                .any(|k| head.ends_with(k))
            {
                continue;
            }
            let open = at + f.len();
            if !code[open..].starts_with('(') {
                continue;
            }
            let Some(end) = call_end(code, open, true) else {
                continue;
            };
            let call = &code[at..end];
            if call.contains('\n') || call.len() > MAX_CALL_CHARS {
                continue;
            }
            if !out.iter().any(|(_, c)| c == call) {
                out.push((f.clone(), call.to_owned()));
            }
        }
    }
    out
}

/// The characters of `s` outside its string literals (`"…"`, `'…'`, `` `…` ``, with
/// backslash escapes), by byte offset; the quotes themselves are left out too.
pub(super) fn outside_quotes(s: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    s.char_indices().filter(move |&(_, c)| {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            return false;
        }
        if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
            return false;
        }
        true
    })
}

/// The end (after the `)`) of the call whose `(` is at `open`, across string literals;
/// `None` past a line's end when `one_line` (a harvested call), not otherwise (a
/// definition's parameters may span lines).
fn call_end(code: &str, open: usize, one_line: bool) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in outside_quotes(&code[open..]) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (c == ')').then_some(open + i + 1);
                }
            }
            '\n' if one_line => return None,
            _ => {}
        }
    }
    None
}

/// Variants of a call where mistakes hide: each integer argument one lower and one
/// higher, and each short string argument empty, doubled, upper-cased, with a
/// character appended (`!`, `é`), padded with spaces and split by one; outside
/// strings, and only for calls with at most three literals of a kind.
pub fn neighbours(call: &str) -> Vec<String> {
    let Some(open) = call.find('(') else {
        return Vec::new();
    };
    let bytes = call.as_bytes();
    let mut ints: Vec<(usize, usize)> = Vec::new();
    // Each string's content, between its quotes.
    let mut strings: Vec<(usize, usize)> = Vec::new();
    let mut quote: Option<(u8, usize)> = None;
    let mut escapes = false;
    let mut i = open;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some((q, start)) = quote {
            if c == b'\\' {
                escapes = true;
                i += 1;
            } else if c == q {
                if !escapes {
                    strings.push((start, i));
                }
                quote = None;
            }
            i += 1;
            continue;
        }
        if matches!(c, b'"' | b'\'' | b'`') {
            quote = Some((c, i + 1));
            escapes = false;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let prev = bytes[start - 1];
            let next = bytes.get(i).copied().unwrap_or(b')');
            let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
            if !word(prev) && !word(next) {
                ints.push((start, i));
            }
            continue;
        }
        i += 1;
    }
    let mut out = Vec::new();
    let mut put = |start: usize, end: usize, with: &str| {
        let v = format!("{}{with}{}", &call[..start], &call[end..]);
        if v != call && !out.contains(&v) {
            out.push(v);
        }
    };
    if ints.len() <= 3 {
        for &(start, end) in &ints {
            let Ok(n) = call[start..end].parse::<i64>() else {
                continue;
            };
            // A negative number written in place of a positive one reads `-1`.
            put(start, end, &(n - 1).to_string());
            put(start, end, &(n + 1).to_string());
        }
    }
    if strings.len() <= 2 {
        for &(start, end) in &strings {
            let s = &call[start..end];
            if s.chars().count() > 40 {
                continue;
            }
            put(start, end, "");
            put(start, end, &format!("{s}{s}"));
            put(start, end, &s.to_uppercase());
            put(start, end, &format!("{s}!"));
            put(start, end, &format!("{s}é"));
            put(start, end, &format!(" {s} "));
            let half = s
                .char_indices()
                .nth(s.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            if half > 0 {
                put(start, end, &format!("{} {}", &s[..half], &s[half..]));
            }
        }
    }
    out
}

/// Calls of every one-argument-shaped function on each value another returned: a
/// parser's result fed to its formatter (`formatDuration(172800)`), an encoder's to
/// its decoder. Only plain strings and numbers are fed on.
pub fn chained(pinned: &[Pinned], functions: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for p in pinned {
        let Outcome::Returned(value) = &p.outcome else {
            continue;
        };
        let plain =
            value.starts_with('"') || value.starts_with('\'') || value.parse::<f64>().is_ok();
        if !plain || value.contains(", ") || value.len() > 60 {
            continue;
        }
        for g in functions.iter().filter(|g| **g != p.function) {
            let call = format!("{g}({value})");
            if !out.iter().any(|(_, c)| *c == call) && !pinned.iter().any(|q| q.call == call) {
                out.push((g.clone(), call));
            }
        }
    }
    out
}

/// How many arguments `function` needs, from its definition in `source` (Python's
/// and JavaScript's defaulted parameters, `self`, `*args` and `**kwargs` not
/// counted); `None` when it is not found.
pub fn arity(lang: Language, source: &str, function: &str) -> Option<usize> {
    let params = parameters(lang, source, function)?;
    Some(
        params
            .iter()
            .filter(|p| {
                !p.contains('=')
                    && !p.starts_with('*')
                    && *p != "self"
                    && !p.starts_with("&self")
                    && !p.starts_with("...")
            })
            .count(),
    )
}

/// Python's parameters of `function` with an integer default (`max_length=50`), by
/// name and default.
pub fn int_defaults(source: &str, function: &str) -> Vec<(String, i64)> {
    parameters(Language::Python, source, function)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let (name, default) = p.split_once('=')?;
            let name = name.split(':').next()?.trim();
            Some((name.to_owned(), default.trim().parse().ok()?))
        })
        .collect()
}

/// The parameters of `function`'s definition in `source`, each as written.
fn parameters(lang: Language, source: &str, function: &str) -> Option<Vec<String>> {
    let keyword = match lang {
        Language::Python => "def",
        Language::JavaScript => "function",
        Language::Go => "func",
        _ => "fn",
    };
    let at = source
        .match_indices(&format!("{keyword} {function}"))
        .find_map(|(at, m)| {
            let rest = source[at + m.len()..].trim_start();
            // Rust generics come between the name and the parameters.
            let rest = match rest.strip_prefix('<') {
                Some(r) => r.split_once('>').map_or(r, |(_, r)| r),
                None => rest,
            };
            rest.starts_with('(').then(|| source.len() - rest.len())
        })?;
    let end = call_end(source, at, false)?;
    let params = &source[at + 1..end - 1];
    let mut depth = 0i32;
    let mut pieces = vec![String::new()];
    for c in params.chars() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                pieces.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = pieces.last_mut() {
            last.push(c);
        }
    }
    Some(
        pieces
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect(),
    )
}

/// The call with each integer-defaulted keyword set near its first string argument's
/// length (that length, one less, one more, half): limits and cut-offs show at those
/// values. `slugify("Hello World")` gives `slugify("Hello World", max_length=11)`.
pub fn limited(call: &str, defaults: &[(String, i64)]) -> Vec<String> {
    let Some(inner) = call.strip_suffix(')') else {
        return Vec::new();
    };
    let Some(open) = inner.find('(') else {
        return Vec::new();
    };
    let args = &inner[open + 1..];
    let len = args
        .char_indices()
        .find(|(_, c)| *c == '"' || *c == '\'')
        .and_then(|(i, q)| {
            let body = &args[i + 1..];
            let end = body.find(q)?;
            (!body[..end].contains('\\')).then(|| body[..end].chars().count() as i64)
        });
    let Some(len) = len.filter(|l| *l > 1) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, _) in defaults {
        if args.contains(&format!("{name}=")) {
            continue;
        }
        for k in [len, len - 1, len + 1, len / 2] {
            let sep = if args.trim().is_empty() { "" } else { ", " };
            let v = format!("{inner}{sep}{name}={k})");
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// Calls made of a table-driven test's rows: a line that is one row (`{"79927398713",
/// true},`, `(2000, true),`, `["1h", 3600],`) of literals, more than a function
/// needs, gives that function called on the row's first values. Small models write
/// tables even when asked not to, and the loop's call (`Valid(tc.number)`) names no
/// value. Calls of the wrong types fail to compile or raise, and are dropped.
pub fn table_calls(code: &str, arities: &[(String, usize)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in code.lines() {
        let row = line.trim().trim_end_matches(',');
        let inner = [("{", "}"), ("(", ")"), ("[", "]")]
            .iter()
            .find_map(|(o, c)| row.strip_prefix(o)?.strip_suffix(c));
        let Some(inner) = inner else {
            continue;
        };
        let values = literals(inner);
        let Some(values) = values else {
            continue;
        };
        for (f, n) in arities {
            if *n == 0 || values.len() <= *n {
                continue;
            }
            let call = format!("{f}({})", values[..*n].join(", "));
            if call.len() <= MAX_CALL_CHARS && !out.iter().any(|(_, c)| *c == call) {
                out.push((f.clone(), call));
            }
        }
    }
    out
}

/// The comma-separated values of a row when each is a literal (a string, a number,
/// a boolean, `None`/`nil`/`null`, or a literal wrapped as `Some(…)`, `Ok(…)`); a
/// named field (`number: "1"`) counts as its value. `None` otherwise.
pub(super) fn literals(inner: &str) -> Option<Vec<String>> {
    let mut values = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let end = value_end(rest)?;
        let mut value = rest[..end].trim();
        // A named field: `number: "1"` (Go, JavaScript), not a string's colon.
        if let Some((name, v)) = value.split_once(':')
            && name.trim().chars().all(|c| c.is_alphanumeric() || c == '_')
            && !name.trim().is_empty()
        {
            value = v.trim();
        }
        if !is_literal(value) {
            return None;
        }
        values.push(value.to_owned());
        rest = rest[end..]
            .trim_start()
            .strip_prefix(',')
            .unwrap_or("")
            .trim_start();
    }
    Some(values)
}

/// The end of the first comma-separated value of `s`, across quotes and brackets.
fn value_end(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in outside_quotes(s) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    (depth == 0).then_some(s.len())
}

pub(super) fn is_literal(v: &str) -> bool {
    let quoted = |q: char| v.len() >= 2 && v.starts_with(q) && v.ends_with(q);
    if quoted('"') || quoted('\'') || quoted('`') {
        return true;
    }
    if [
        "true",
        "false",
        "True",
        "False",
        "None",
        "nil",
        "null",
        "undefined",
    ]
    .contains(&v)
    {
        return true;
    }
    if v.trim_start_matches('-').parse::<f64>().is_ok() {
        return true;
    }
    ["Some(", "Ok(", "Err("].iter().any(|w| {
        v.strip_prefix(w)
            .and_then(|r| r.strip_suffix(')'))
            .is_some_and(is_literal)
    })
}

/// The request for one test answer about `f`: the task, the code, and tests that
/// call it directly on literal arguments. One function an answer: asked about
/// several, a small model tests the first only.
fn request(task: &str, layout: &Layout, source: &str, f: &str) -> ChatRequest {
    let lang = fence(layout.lang);
    // One check a line, in the shape the language's tests take: small models copy
    // the shape, and table-driven tests hide the calls' arguments from the harvest.
    let example = match layout.lang {
        Language::Python => format!("self.assertEqual({f}(...), ...)"),
        Language::JavaScript => format!("assert.strictEqual({f}(...), ...);"),
        Language::Go => format!("if got := {f}(...); got != ... {{ t.Errorf(...) }}"),
        _ => format!("assert_eq!({f}(...), ...);"),
    };
    let user = format!(
        "Task: {task}\n\nFile `{}`:\n```{lang}\n{}\n```\n\nWrite tests of `{f}` only: many short checks, one per line like `{example}`, each calling `{f}` directly with literal arguments (no tables, no loops), covering every case its comments describe, the edge cases and the errors. Answer with the test code only, in one ```{lang} code block.",
        layout.source_rel,
        source.trim_end(),
    );
    ChatRequest {
        system: Some(format!(
            "You are an expert {lang} programmer who writes thorough unit tests. You answer with code only, in one fenced code block."
        )),
        messages: vec![Message::user(user)],
        // Long answers repeat themselves (`is_leap_year(2026)`, `(2027)`, …).
        max_tokens: Some(600),
        code_block: Some(lang.to_owned()),
        ..ChatRequest::default()
    }
}

/// Where the tests go and what they call, from the workspace; `None` when the code
/// under test cannot be told (no named or single source file of the test's
/// language, no functions) or the layout is one the probes do not handle.
fn layout(ctx: &ToolContext, task: &str, test_rel: &str) -> Option<(Layout, String, PathBuf)> {
    let root = &ctx.root;
    let lang = Language::from_path(Path::new(test_rel))?;
    let index = ctx.index.read().unwrap_or_else(|p| p.into_inner());
    let words = task_words(task);
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let mut sources: Vec<PathBuf> = index
        .paths()
        .filter(|p| Language::from_path(p) == Some(lang) && !is_test_file(root, p))
        .map(|p| p.to_path_buf())
        .collect();
    sources.sort();
    let named = named_files(&sources, &lower);
    let source = match (named.as_slice(), sources.as_slice()) {
        ([one], _) | ([], [one]) => one.clone(),
        _ => return None,
    };
    let source_rel = source.strip_prefix(root).ok()?.display().to_string();
    let text = ctx
        .store
        .read(&source, &ctx.read_limits)
        .ok()?
        .rope
        .to_string();
    let defined: Vec<String> = index
        .file_symbols(&source)
        .into_iter()
        .filter(|s| s.kind == SymbolKind::Function && s.container.is_none())
        .map(|s| s.name.to_string())
        .collect();
    let mut functions: Vec<String> = defined
        .iter()
        .filter(|f| words.iter().any(|w| w == *f))
        .cloned()
        .collect();
    if functions.is_empty() {
        functions = defined
            .into_iter()
            .filter(|f| {
                !(f.starts_with('_') || (lang == Language::Go && f.starts_with(char::is_lowercase)))
            })
            .collect();
    }
    if functions.is_empty() {
        return None;
    }
    let unit = unit(root, lang, &text, test_rel, &source_rel)?;
    let esm = lang == Language::JavaScript
        && (source_rel.ends_with(".mjs")
            || (!text.contains("module.exports")
                && text.lines().any(|l| l.starts_with("export "))));
    Some((
        Layout {
            lang,
            test_rel: test_rel.to_owned(),
            source_rel,
            functions,
            unit,
            esm,
        },
        text,
        root.join(test_rel),
    ))
}

/// What a test at `test_rel` reaches the code of `source_rel` (whose text is
/// `text`) through: Go's package, when the test sits beside the code; the library
/// crate's name, for a Rust integration test of a crate with a library; nothing for
/// Python and JavaScript. `None` where the probes cannot reach the code.
pub(super) fn unit(
    root: &Path,
    lang: Language,
    text: &str,
    test_rel: &str,
    source_rel: &str,
) -> Option<String> {
    let test_dir = test_rel.rsplit_once('/').map_or("", |(d, _)| d);
    let source_dir = source_rel.rsplit_once('/').map_or("", |(d, _)| d);
    match lang {
        Language::Go if test_dir == source_dir => Some(
            text.lines()
                .find_map(|l| l.trim().strip_prefix("package "))?
                .trim()
                .to_owned(),
        ),
        Language::Rust if test_dir == "tests" && root.join("src/lib.rs").is_file() => {
            crate_name(&std::fs::read_to_string(root.join("Cargo.toml")).ok()?)
        }
        Language::Python | Language::JavaScript => Some(String::new()),
        _ => None,
    }
}

/// The library crate's name from `Cargo.toml` (`[package] name`, `-` as `_`).
fn crate_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').replace('-', "_"));
        }
    }
    None
}

/// Writes the tests in `test_rel` the characterisation way and lands the file;
/// `None` when the file exists or the layout is not one handled (the other ways take
/// the task).
async fn solve(
    provider: &Arc<dyn Provider>,
    ctx: &ToolContext,
    task: &str,
    config: &SolveConfig,
    events: Option<&EventSender>,
    test_rel: String,
) -> Option<Solved> {
    if ctx.root.join(&test_rel).exists() {
        return None;
    }
    let (layout, source, test_path) = layout(ctx, task, &test_rel)?;
    let started = Instant::now();
    let progress = Progress::new(events);
    let target = format!(
        "{}: new tests of {} in {}",
        layout.test_rel,
        layout.functions.join(", "),
        layout.source_rel
    );
    progress.start(json!({ "targets": [target.clone()], "samples": config.samples }));
    let verifier = Verifier::detected(ctx).await;
    let mut used = ModelUse::default();
    let mut report = SolveReport {
        targets: vec![target],
        tests: Some(pinned::test_command(&layout)),
        baseline: "no tests".to_owned(),
        ..SolveReport::default()
    };

    let proposed = propose(
        provider, ctx, task, config, &layout, &source, &mut used, &progress,
    )
    .await;
    let from_model = proposed.len();
    let mut all = proposed.clone();
    // Round by round (one variant of each call, then another of each, …), so the
    // cap cuts variants of every call alike.
    // Python's integer-defaulted keywords, read once a function.
    let defaults: Vec<Vec<(String, i64)>> = layout
        .functions
        .iter()
        .map(|f| match layout.lang {
            Language::Python => int_defaults(&source, f),
            _ => Vec::new(),
        })
        .collect();
    let variants: Vec<(String, Vec<String>)> = proposed
        .iter()
        .map(|(f, call)| {
            let mut near = neighbours(call);
            if let Some(k) = layout.functions.iter().position(|g| g == f) {
                near.extend(limited(call, &defaults[k]));
            }
            (f.clone(), near)
        })
        .collect();
    let rounds = variants.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    // Each function's share of the cap, so one the model wrote most about does not
    // crowd out the others.
    let share = MAX_CALLS / layout.functions.len().max(1);
    'rounds: for k in 0..rounds {
        for (j, (f, vs)) in variants.iter().enumerate() {
            if all.len() >= MAX_CALLS {
                break 'rounds;
            }
            // Each call starts at another kind of variant, so the cap leaves every
            // kind some calls.
            if k < vs.len()
                && let Some(v) = vs.get((j + k) % vs.len())
                && all.iter().filter(|(g, _)| g == f).count() < share
                && !all.iter().any(|(_, c)| c == v)
            {
                all.push((f.clone(), v.clone()));
            }
        }
    }
    let mut pinned = probe(
        &verifier,
        (&layout, &source),
        &test_path,
        &[],
        all,
        &progress,
    )
    .await;
    // Fed-on values and their neighbours (`formatDuration(0)` gives
    // `formatDuration(-1)`).
    let mut chain: Vec<(String, String)> = Vec::new();
    for (f, call) in chained(&pinned, &layout.functions) {
        let near = neighbours(&call);
        for c in std::iter::once(call).chain(near) {
            if chain.len() < MAX_CALLS / 2
                && !chain.iter().any(|(_, d)| *d == c)
                && !pinned.iter().any(|p| p.call == c)
            {
                chain.push((f.clone(), c));
            }
        }
    }
    if !chain.is_empty() {
        progress.line(format!(
            "{} call(s) feed one function's results to another",
            chain.len()
        ));
        pinned.extend(
            probe(
                &verifier,
                (&layout, &source),
                &test_path,
                &[],
                chain,
                &progress,
            )
            .await,
        );
    }
    let answer = if pinned.is_empty() {
        report.reason =
            format!("none of the {from_model} calls the model proposed ran on the code as it is");
        None
    } else {
        let text = pinned::test_file(&layout, &pinned);
        check_and_land(
            ctx,
            &verifier,
            &layout,
            &test_path,
            text,
            &pinned,
            from_model,
            &mut report,
            &progress,
        )
        .await
    };
    report.timings = used.spent(&verifier);
    progress.finish(&report, answer.is_some(), started);
    config.tap(&report);
    Some(Solved {
        report,
        answer,
        calls: used.calls,
        usage: used.usage,
        model_ms: used.model_ms,
    })
}

/// The calls the model's test answers make, from as many samples as the deadline
/// leaves time for (at least one; `samples` without a deadline).
#[allow(clippy::too_many_arguments)]
async fn propose(
    provider: &Arc<dyn Provider>,
    ctx: &ToolContext,
    task: &str,
    config: &SolveConfig,
    layout: &Layout,
    source: &str,
    used: &mut ModelUse,
    progress: &Progress<'_>,
) -> Vec<(String, String)> {
    let requests: Vec<ChatRequest> = layout
        .functions
        .iter()
        .map(|f| request(task, layout, source, f))
        .collect();
    let arities: Vec<(String, usize)> = layout
        .functions
        .iter()
        .filter_map(|f| Some((f.clone(), arity(layout.lang, source, f)?)))
        .collect();
    // Probing and checking come after the samples: Go and Rust build twice or more.
    let reserve = match layout.lang {
        Language::Go | Language::Rust => Duration::from_secs(15),
        _ => Duration::from_secs(5),
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let n = requests.len();
    let least = config.samples.max(n);
    let most = least * MORE_SAMPLES;
    // Each function's greedy answer first, then its samples in batches.
    let (mut answers, mut unit, mut last) = (0, 0, Duration::ZERO);
    while answers < most && out.len() < MAX_CALLS && !ctx.cancel.is_cancelled() {
        let (f, round) = (unit % n, unit / n);
        let width = if round == 0 || !config.together {
            1
        } else {
            TOGETHER.min(most - answers)
        };
        // Past `least` answers, only while the calls are few and the deadline leaves
        // time for one more unit like the last and the probes.
        let more = match config.deadline {
            _ if unit == 0 => true,
            None => answers < least,
            Some(deadline) => {
                (answers < least || out.len() < MAX_CALLS / 2)
                    && Instant::now() + last + reserve < deadline
            }
        };
        if !more {
            break;
        }
        let t0 = Instant::now();
        let asked = |k: usize| {
            let mut req = sampled(&requests[f], round + k, config.temperature, config.seed);
            req.sampling.seed = Some(config.seed.wrapping_add((answers + k) as u64));
            req
        };
        // What was asked counts, answered or not: a failing provider must not keep
        // the loop asking.
        let (texts, asked_for) = if width == 1 {
            (vec![used.ask(provider, &asked(0), &ctx.cancel).await], 1)
        } else {
            let samplings: Vec<_> = (0..width).map(|k| asked(k).sampling).collect();
            match used
                .ask_together(provider, &requests[f], &samplings, &ctx.cancel)
                .await
            {
                Some(texts) => (texts, width),
                None => (vec![used.ask(provider, &asked(0), &ctx.cancel).await], 1),
            }
        };
        let (first, mut answer_no) = (answers, answers);
        // The next unit is like this one; the first batch after the greedy answers
        // writes several answers at once.
        last = t0.elapsed() * if width == 1 && config.together { 2 } else { 1 };
        for answer in texts {
            answer_no += 1;
            let before = out.len();
            tracing::debug!("solve: test answer {answer_no}:\n{answer}");
            let code = code_of(&answer);
            for call in calls(&code, &layout.functions)
                .into_iter()
                .chain(table_calls(&code, &arities))
            {
                if !out.iter().any(|(_, c)| *c == call.1) {
                    out.push(call);
                }
            }
            progress.line(format!(
                "answer {answer_no}: {} new call(s), {} in all",
                out.len() - before,
                out.len()
            ));
        }
        answers = first + asked_for;
        unit += 1;
    }
    out
}

/// Runs every call on the code as it is (`source`, with the files of `over` laid
/// over the workspace) and keeps what a test can pin: values, and errors the code
/// raises on purpose. For Go and Rust, the calls the compiler rejects are dropped and
/// the rest probed again.
pub(super) async fn probe(
    verifier: &Verifier,
    (layout, source): (&Layout, &str),
    test_path: &Path,
    over: &[(&Path, &str)],
    mut calls: Vec<(String, String)>,
    progress: &Progress<'_>,
) -> Vec<Pinned> {
    for _ in 0..COMPILE_ROUNDS {
        if calls.is_empty() {
            break;
        }
        let Some(probe) = pinned::probe(layout, &calls) else {
            return Vec::new();
        };
        let laid: Vec<(&Path, &str)> = probe
            .file
            .as_deref()
            .map(|f| (test_path, f))
            .into_iter()
            .chain(over.iter().copied())
            .collect();
        let Some((_, output)) = verifier.output(&probe.command, &laid).await else {
            return Vec::new();
        };
        tracing::debug!("solve: probe of {} call(s):\n{output}", calls.len());
        let outcomes = pinned::outcomes(layout.lang, &output, calls.len());
        if outcomes.iter().all(Option::is_none) && probe.file.is_some() {
            let rejected: Vec<usize> = pinned::rejected_lines(&output, &layout.test_rel)
                .into_iter()
                .filter_map(|line| line.checked_sub(probe.first_line))
                .filter(|k| *k < calls.len())
                .collect();
            if rejected.is_empty() {
                tracing::info!("solve: the probe did not run: {}", output.trim());
                return Vec::new();
            }
            progress.line(format!(
                "probe: the compiler rejects {} call(s)",
                rejected.len()
            ));
            let mut k = 0;
            calls.retain(|_| {
                k += 1;
                !rejected.contains(&(k - 1))
            });
            continue;
        }
        let kept: Vec<Pinned> = calls
            .into_iter()
            .zip(outcomes)
            .filter_map(|((function, call), outcome)| {
                let outcome = outcome?;
                if let Outcome::Raised { name, .. } = &outcome
                    && !pinned::raises(layout.lang, source, name)
                {
                    return None;
                }
                Some(Pinned {
                    function,
                    call,
                    outcome,
                })
            })
            .collect();
        progress.line(format!(
            "probe: {} call(s) pinned to what the code as it is returns",
            kept.len()
        ));
        return kept;
    }
    Vec::new()
}

/// Runs the new tests in the overlay and lands the file when they pass; the answer.
#[allow(clippy::too_many_arguments)]
async fn check_and_land(
    ctx: &ToolContext,
    verifier: &Verifier,
    layout: &Layout,
    test_path: &Path,
    text: String,
    pinned: &[Pinned],
    from_model: usize,
    report: &mut SolveReport,
    progress: &Progress<'_>,
) -> Option<String> {
    let command = pinned::test_command(layout);
    let ran = verifier.run(&command, &[(test_path, &text)]).await;
    let ok = ran.as_ref().is_some_and(|r| r.ok);
    let verdict = match &ran {
        Some(r) if r.ok => "the new tests pass".to_owned(),
        Some(r) => format!("the new tests fail: {}", r.tail),
        None => "the new tests could not run".to_owned(),
    };
    progress.line(format!("{}: {verdict}", layout.test_rel));
    report.candidates.push(CandidateReport {
        path: layout.test_rel.clone(),
        temperature: 0.0,
        seed: None,
        repair: false,
        fim: false,
        text: Some(text.clone()),
        also: Vec::new(),
        verdict: verdict.clone(),
        builds: ran.is_some(),
        passes: ok,
    });
    if !ok {
        report.reason = verdict;
        return None;
    }
    let functions: Vec<&str> = layout.functions.iter().map(String::as_str).collect();
    report.chosen = Some(0);
    report.reason = format!(
        "{} checks of {} from {from_model} calls the model proposed and their neighbours, each pinned to what {} returns or raises today; {verdict}",
        pinned.len(),
        functions.join(", "),
        layout.source_rel
    );
    let landing = vec![(test_path.to_path_buf(), String::new(), text)];
    match super::land::land_files(ctx, landing).await {
        Ok(summary) => {
            report.landed = true;
            Some(format!(
                "Wrote {}: {}. The expected values are what the code does now, not what a model guessed. {summary}",
                layout.test_rel, report.reason
            ))
        }
        Err(e) => {
            report.reason = format!("the tests did not land: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_test_file_a_task_names() {
        let none = |_: &str| false;
        assert_eq!(
            new_test_file(
                "slug.py has no tests. Write unit tests (unittest, in tests/test_slug.py, run with `python3 -m unittest discover -s tests`) that pin down everything. Do not change slug.py.",
                none
            ),
            Some("tests/test_slug.py".to_owned())
        );
        assert_eq!(
            new_test_file(
                "Cover Valid with tests in luhn_test.go; luhn.go stays.",
                none
            ),
            Some("luhn_test.go".to_owned())
        );
        assert_eq!(
            new_test_file(
                "Implement `perimeter` so that tests/perimeter.rs passes.",
                |w| { w == "tests/perimeter.rs" }
            ),
            None
        );
        assert_eq!(new_test_file("Fix add in calc.py.", none), None);
    }

    /// Of the suite's tasks, only those that ask for tests of code to keep take this
    /// way without a model to confirm it (a fix that adds a test would pin its bug).
    #[test]
    fn every_fixture_task_but_the_test_writing_ones_goes_elsewhere() {
        for (name, prompt) in super::super::fixtures::prompts() {
            let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures/tasks")
                .join(&name)
                .join("repo");
            let files: Vec<PathBuf> = super::super::fixtures::repo_files(&name)
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            let named = new_test_file(&prompt, |w| held(&repo, &files, w));
            assert_eq!(
                named.is_some(),
                name.contains("-mutant-"),
                "{name}: {prompt}"
            );
            assert_eq!(
                named.is_some() && !protected(&prompt).is_empty(),
                name.contains("-mutant-"),
                "{name}: {prompt}"
            );
        }
    }

    #[test]
    fn calls_are_harvested_from_any_test_shape() {
        let fs = vec!["slugify".to_owned(), "Valid".to_owned()];
        let code = "def test_a(self):\n    self.assertEqual(slugify(\"Héllo (x)\"), 'hello-x')\n    self.assertEqual(slug.slugify('a', max_length=3), 'a')\n    s = slugify(text)\nfunc Valid(n string) bool {}\nif !Valid(\"79927398713\") {\nisValid(\"1\")\nslugify(\"unclosed\n";
        let got: Vec<String> = calls(code, &fs).into_iter().map(|(_, c)| c).collect();
        assert_eq!(
            got,
            vec![
                "slugify(\"Héllo (x)\")",
                "slugify('a', max_length=3)",
                "slugify(text)",
                "Valid(\"79927398713\")"
            ]
        );
    }

    #[test]
    fn literal_arguments_get_their_neighbours() {
        assert_eq!(
            neighbours("days_in_month(2024, 2)"),
            vec![
                "days_in_month(2023, 2)",
                "days_in_month(2025, 2)",
                "days_in_month(2024, 1)",
                "days_in_month(2024, 3)"
            ]
        );
        // Not inside strings, floats or names.
        assert_eq!(
            neighbours("f(x2, 1.5, 0)"),
            vec!["f(x2, 1.5, -1)", "f(x2, 1.5, 1)"]
        );
        assert_eq!(
            neighbours("parse('1h')"),
            vec![
                "parse('')",
                "parse('1h1h')",
                "parse('1H')",
                "parse('1h!')",
                "parse('1hé')",
                "parse(' 1h ')",
                "parse('1 h')"
            ]
        );
        // Strings with escapes are left alone.
        assert!(neighbours(r#"f("a\n")"#).is_empty());
    }

    #[test]
    fn table_rows_become_calls() {
        let go = "func Valid(number string) bool {\n}\nfunc CheckDigit(partial string) (int, error) {}\n";
        let arities = vec![
            (
                "Valid".to_owned(),
                arity(Language::Go, go, "Valid").unwrap(),
            ),
            (
                "CheckDigit".to_owned(),
                arity(Language::Go, go, "CheckDigit").unwrap(),
            ),
        ];
        let code = "\ttests := []struct{ number string; want bool }{\n\t\t{\"79927398713\", true},\n\t\t{number: \"1, 2\", want: false},\n\t\t{\"7992739871\", 3, nil},\n\t\t{x, true},\n\t}\n";
        let got: Vec<String> = table_calls(code, &arities)
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        assert_eq!(
            got,
            vec![
                "Valid(\"79927398713\")",
                "CheckDigit(\"79927398713\")",
                "Valid(\"1, 2\")",
                "CheckDigit(\"1, 2\")",
                "Valid(\"7992739871\")",
                "CheckDigit(\"7992739871\")"
            ]
        );
        let rust = "pub fn day_of_year(year: i32, month: u32, day: u32) -> Option<u32> {";
        assert_eq!(arity(Language::Rust, rust, "day_of_year"), Some(3));
        let py = "def slugify(text, max_length=50, separator=\"-\"):";
        assert_eq!(arity(Language::Python, py, "slugify"), Some(1));
        let rows = "    (2024, 2, 29, Some(60)),\n    [\"1h\", 3600],\n";
        let ar = vec![("day_of_year".to_owned(), 3), ("parse".to_owned(), 1)];
        let got: Vec<String> = table_calls(rows, &ar).into_iter().map(|(_, c)| c).collect();
        assert_eq!(
            got,
            vec!["day_of_year(2024, 2, 29)", "parse(2024)", "parse(\"1h\")"]
        );
    }

    #[test]
    fn integer_keywords_are_set_near_the_text_length() {
        let src = "def slugify(text, max_length=50, separator=\"-\"):\n    pass\n";
        let defaults = int_defaults(src, "slugify");
        assert_eq!(defaults, vec![("max_length".to_owned(), 50)]);
        assert_eq!(
            limited("slugify(\"Hello World\")", &defaults),
            vec![
                "slugify(\"Hello World\", max_length=11)",
                "slugify(\"Hello World\", max_length=10)",
                "slugify(\"Hello World\", max_length=12)",
                "slugify(\"Hello World\", max_length=5)"
            ]
        );
        assert!(limited("slugify(\"a b\", max_length=2)", &defaults).is_empty());
    }

    #[test]
    fn results_feed_the_other_functions() {
        let p = |function: &str, call: &str, value: &str| Pinned {
            function: function.into(),
            call: call.into(),
            outcome: Outcome::Returned(value.into()),
        };
        let pinned = vec![
            p("parse", "parse('2d')", "172800"),
            p("format", "format(60)", "'1m'"),
            p("parse", "parse('x')", "[1, 2]"),
        ];
        let fs = vec!["parse".to_owned(), "format".to_owned()];
        assert_eq!(
            chained(&pinned, &fs),
            vec![
                ("format".to_owned(), "format(172800)".to_owned()),
                ("parse".to_owned(), "parse('1m')".to_owned())
            ]
        );
    }

    #[test]
    fn the_crate_name_comes_from_the_package() {
        assert_eq!(
            crate_name("[package]\nname = \"my-cal\"\n[dependencies]\nname = \"x\"\n"),
            Some("my_cal".to_owned())
        );
    }
}

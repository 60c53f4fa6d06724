//! Edit sets: changes that span several files, each small enough to be written
//! whole. The set comes from the workspace, not from the task's words: the file the
//! task points to ([`super::localise`]); the files that call a function it names
//! (the index's references), since a new parameter or a changed signature reaches
//! them; the data files (JSON, TOML, YAML, INI, `.env`) the code opens that hold a
//! key the task names, or that the task names itself. A candidate is the new text
//! of every file of the set, written one file after the other, each prompt showing
//! the files already rewritten (the callee's new signature when a caller is
//! written); the candidate is verified as one change in the overlay, and the pick
//! lands as one plan.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentls_index::Language;
use agentls_model::{ChatRequest, Message};
use serde_json::json;

use super::ask::ModelUse;
use super::generate::{MAX_TOKENS, code_of, fence, sampled, signature};
use super::land::land_files;
use super::localise::{Scope, WHOLE_FILE_CHARS, is_test_file};
use super::progress::Progress;
use super::report::{CandidateReport, SolveReport, Solved};
use super::strategy::{Cx, Plan, Scene, Strategy, Work};
use super::verify::{Verdict, Verifier};

/// Extensions of the data files a set may hold.
const DATA_EXTENSIONS: &[&str] = &["json", "toml", "yaml", "yml", "ini", "cfg", "conf", "env"];

/// Most files in one set, tests aside.
const MAX_FILES: usize = 4;

/// Most test files in one set (only their calls change: [`calls_only`]).
const MAX_TEST_FILES: usize = 1;

/// Candidates of a set at most: each costs a whole file per member.
const MAX_SAMPLES: usize = 4;

/// Files to change together, in the order they are written.
#[derive(Clone, Debug)]
pub struct EditSet {
    /// The files, the one the task points to first.
    pub files: Vec<Member>,
    /// The function in the first file whose callers joined ([`Joined::Callers`]): a
    /// set that keeps its signature is no candidate (the single rewrite, tried
    /// before, writes changes that keep it).
    pub function: Option<Calls>,
}

/// One file of a set.
#[derive(Clone, Debug)]
pub struct Member {
    /// Absolute path.
    pub path: PathBuf,
    /// Its text as the editor shows it.
    pub text: String,
    /// Why it is in the set.
    pub why: String,
    /// A test file that calls the set's function: only its calls may change
    /// ([`calls_only`]), and only when the function's signature did (a set that
    /// keeps it ends before its tests).
    pub test: bool,
}

/// What a test member of a set may change: the lines that call `name`, defined in
/// the set's first file.
#[derive(Clone, Debug)]
pub struct Calls {
    /// The function.
    pub name: String,
    /// Its language (for its signature).
    pub language: Language,
}

/// Which places join the file the task points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Joined {
    /// Data files the code reads that hold what the task names: tried before any
    /// single-function rewrite, which would hard-code the value.
    Data,
    /// The files that call a function the task names: tried after the single-function
    /// rewrite, which defers to it when its pick changes that function's signature.
    Callers,
}

/// Writes sets of files whole.
pub(super) struct EditSets(pub Joined);

#[async_trait::async_trait]
impl Strategy for EditSets {
    fn name(&self) -> &'static str {
        match self.0 {
            Joined::Data => "edit set (code and data)",
            Joined::Callers => "edit set (function and callers)",
        }
    }

    fn plan(&self, scene: &Scene<'_>) -> Option<Plan> {
        let set = gather(scene, self.0)?;
        let why = set
            .files
            .iter()
            .map(|m| format!("{}: {}", shown(scene.root, &m.path), m.why))
            .collect::<Vec<_>>()
            .join("; ");
        Some(Plan {
            why,
            work: Box::new(set),
        })
    }

    async fn run(&self, cx: &Cx<'_>, work: Work) -> Option<Solved> {
        let Ok(set) = work.downcast::<EditSet>() else {
            return None;
        };
        Some(write_sets(cx, &set).await)
    }
}

fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The set for the task, or `None` when nothing of the kind `joined` joins the file
/// the task points to (the single-file strategies take it) or a file of the set is
/// too long to write whole.
fn gather(scene: &Scene<'_>, joined: Joined) -> Option<EditSet> {
    let targets = scene.targets();
    let data = match joined {
        Joined::Data => data_files(scene),
        Joined::Callers => Vec::new(),
    };
    if joined == Joined::Data && data.is_empty() {
        return None;
    }
    let mut files: Vec<Member> = Vec::new();
    let add = |path: &Path, why: String, test: bool, files: &mut Vec<Member>| {
        if files.iter().any(|m| m.path == path) || scene.is_protected(path) {
            return;
        }
        if let Some(text) = scene.read(path) {
            files.push(Member {
                path: path.to_path_buf(),
                text,
                why,
                test,
            });
        }
    };
    let mut tests = Vec::new();
    let mut function = None;
    if let Some(first) = targets.first() {
        add(&first.path, first.why.clone(), false, &mut files);
        if joined == Joined::Callers
            && let Scope::Function { name, .. } = &first.scope
        {
            for path in callers(scene, name, &first.path) {
                add(&path, format!("it uses `{name}`"), false, &mut files);
            }
            // The tests that call it follow a new signature too ("fix the tests for
            // the new signature"), or no candidate that changes it compiles.
            for path in test_callers(scene, name, &first.path) {
                add(&path, format!("its tests call `{name}`"), true, &mut tests);
            }
            function = Some(Calls {
                name: name.clone(),
                language: first.language,
            });
        }
    } else if let Some((_, reader)) = data.first() {
        // Nothing named but a data file: the code that reads it, beside it.
        let reader = reader.clone()?;
        add(
            &reader,
            "it reads the data file".to_owned(),
            false,
            &mut files,
        );
    }
    for (path, _) in &data {
        add(
            path,
            "data the task's change is in".to_owned(),
            false,
            &mut files,
        );
    }
    let fits = |files: &[Member]| files.iter().all(|m| m.text.len() <= WHOLE_FILE_CHARS);
    if files.len() < 2 || files.len() > MAX_FILES || !fits(&files) {
        return None;
    }
    // Written last, after the function's new signature; one file at most (each
    // costs a whole file per set), and only one short enough to write whole.
    tests.retain(|m| m.path != files[0].path && fits(std::slice::from_ref(m)));
    files.extend(tests.into_iter().take(MAX_TEST_FILES));
    Some(EditSet { files, function })
}

/// The test files other than `home` that call `name`, those calling it most first.
fn test_callers(scene: &Scene<'_>, name: &str, home: &Path) -> Vec<PathBuf> {
    let mut counted: Vec<(PathBuf, usize)> = Vec::new();
    for r in scene.index.references(name) {
        if *r.path == *home || !is_test_file(scene.root, &r.path) {
            continue;
        }
        match counted.iter_mut().find(|(p, _)| *p == *r.path) {
            Some((_, n)) => *n += 1,
            None => counted.push((r.path.to_path_buf(), 1)),
        }
    }
    counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counted.into_iter().map(|(p, _)| p).collect()
}

/// `new` kept only where it changes the arguments of calls to `name`: a new line
/// that reads as an old one but for the arguments of its calls (`Slugify(tc.in)`,
/// `Slugify(tc.in, 0)`) takes that line's place, a new line calling `name` that
/// replaces none is added (a new call), and every other change is undone, deleted
/// lines included. A test is never weakened to let a candidate pass: its lines stay
/// as they were but for the calls' arguments.
pub fn calls_only(old: &str, new: &str, name: &str) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
    let mut out = String::with_capacity(old.len());
    for op in &ops {
        let (tag, olds, news) = op.as_tag_tuple();
        let (olds, news) = (&old_lines[olds], &new_lines[news]);
        if tag == similar::DiffTag::Equal {
            olds.iter().for_each(|l| out.push_str(l));
            continue;
        }
        let shapes: Vec<Option<String>> = olds.iter().map(|l| call_shape(l, name)).collect();
        let mut taken: Vec<Option<&str>> = vec![None; olds.len()];
        let mut added: Vec<&str> = Vec::new();
        for line in news {
            let Some(shape) = call_shape(line, name) else {
                continue;
            };
            match (0..olds.len())
                .find(|&i| taken[i].is_none() && shapes[i].as_ref() == Some(&shape))
            {
                Some(i) => taken[i] = Some(line),
                None => added.push(line),
            }
        }
        for (old, new) in olds.iter().zip(&taken) {
            out.push_str(new.unwrap_or(old));
        }
        added.iter().for_each(|l| out.push_str(l));
    }
    out
}

/// `line` with the arguments of its calls to `name` left out (`got := Slugify(…)`),
/// or `None` when it calls no `name`.
fn call_shape(line: &str, name: &str) -> Option<String> {
    let mut shape = String::with_capacity(line.len());
    let mut rest = line;
    let mut found = false;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().next_back().or(shape.chars().next_back());
        let after = &rest[at + name.len()..];
        shape.push_str(&rest[..at + name.len()]);
        rest = after;
        if before.is_some_and(super::mention::is_ident_char)
            || after.starts_with(super::mention::is_ident_char)
            || !after.starts_with('(')
        {
            continue;
        }
        // Skip to the matching parenthesis; a call left open continues on the next
        // line, whose shape is its own.
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        found = true;
        shape.push_str("(…)");
        rest = &after[end..];
    }
    shape.push_str(rest);
    found.then_some(shape)
}

/// The source files other than `home` (tests aside) that use `name`.
pub(super) fn callers(scene: &Scene<'_>, name: &str, home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = scene
        .index
        .references(name)
        .into_iter()
        .filter(|r| *r.path != *home && !is_test_file(scene.root, &r.path))
        .map(|r| r.path.to_path_buf())
        .collect();
    out.dedup();
    out
}

/// The data files the task points to, with the source file that opens each (if one
/// does): files the task names, and files whose name a source file writes (it opens
/// them) holding a key the task names.
fn data_files(scene: &Scene<'_>) -> Vec<(PathBuf, Option<PathBuf>)> {
    let task_lower = scene.task.to_ascii_lowercase();
    let words: Vec<String> = task_lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 4)
        .map(str::to_owned)
        .collect();
    let sources: Vec<(PathBuf, String)> = scene
        .index
        .paths()
        .filter(|p| Language::from_path(p).is_some() && !is_test_file(scene.root, p))
        .filter_map(|p| Some((p.to_path_buf(), scene.read(p)?)))
        .collect();
    let mut out = Vec::new();
    for path in small_data_files(scene.root) {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().to_string()) else {
            continue;
        };
        let reader = sources
            .iter()
            .find(|(_, text)| text.contains(name.as_str()))
            .map(|(p, _)| p.clone());
        let named = task_lower.contains(&name.to_ascii_lowercase());
        let keyed = reader.is_some()
            && scene
                .read(&path)
                .is_some_and(|text| keys(&text).iter().any(|k| names_key(&words, k)));
        if named || keyed {
            out.push((path, reader));
        }
    }
    out
}

/// Whether one of the task's `words` names `key` (`timeout` for `upload_timeout`,
/// `thumbnails` for `thumbnail`): a part of the key of four letters or more that a
/// word starts with, or that starts the word.
fn names_key(words: &[String], key: &str) -> bool {
    key.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| p.len() >= 4)
        .any(|part| {
            words
                .iter()
                .any(|w| w.starts_with(part) || part.starts_with(w.as_str()))
        })
}

/// The keys of a data file: the names before `=` or `:` that open its lines (TOML,
/// INI, YAML, `.env`) and JSON's quoted names.
fn keys(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches("- ");
        let Some(end) = line.find([':', '=']) else {
            continue;
        };
        let key = line[..end].trim().trim_matches(|c| c == '"' || c == '\'');
        if !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_alphanumeric() || "_-.".contains(c))
        {
            out.push(key.to_owned());
        }
    }
    out
}

/// Data files of at most [`WHOLE_FILE_CHARS`] below `root`, three levels deep at
/// most, `.gitignore` honoured, package manifests and lock files left out (a task's
/// key is never theirs to change by accident).
fn small_data_files(root: &Path) -> Vec<PathBuf> {
    const MANIFESTS: &[&str] = &[
        "package.json",
        "package-lock.json",
        "Cargo.toml",
        "Cargo.lock",
        "go.mod",
        "pyproject.toml",
        "tsconfig.json",
        "jsconfig.json",
    ];
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .max_depth(Some(3))
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != "node_modules")
        .build();
    let mut out: Vec<PathBuf> = walk
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let ext = p
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase());
            let data = ext.is_some_and(|e| DATA_EXTENSIONS.contains(&e.as_str()))
                || name == ".env"
                || name.starts_with(".env.");
            data && !MANIFESTS.contains(&name.as_str())
                && std::fs::metadata(p).is_ok_and(|m| m.len() <= WHOLE_FILE_CHARS as u64)
        })
        .collect();
    out.sort();
    out
}

/// The fence name of a file of the set.
fn fence_of(path: &Path) -> &'static str {
    if let Some(lang) = Language::from_path(path) {
        return fence(lang);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => "json",
        Some("toml") => "toml",
        Some("yaml" | "yml") => "yaml",
        Some("ini" | "cfg" | "conf") => "ini",
        _ => "",
    }
}

/// The request for the new text of `set.files[k]`, the files before it shown as
/// they are now written (`written`), the others as they are.
fn request(root: &Path, task: &str, set: &EditSet, k: usize, written: &[String]) -> ChatRequest {
    let mut user = format!("Task: {task}\n\nThese files change together.\n");
    for (i, m) in set.files.iter().enumerate() {
        // A test file is shown only when it is written (it follows the others).
        if m.test && i != k {
            continue;
        }
        let (text, state) = match written.get(i) {
            Some(new) => (new.as_str(), " (already changed for the task)"),
            None => (m.text.as_str(), ""),
        };
        user.push_str(&format!(
            "\nFile `{}`{state}:\n```{}\n{}\n```\n",
            shown(root, &m.path),
            fence_of(&m.path),
            text.trim_end()
        ));
    }
    let m = &set.files[k];
    let lang = fence_of(&m.path);
    user.push_str(&format!(
        "\nWrite the complete new content of `{}` so that the task is done, consistent with the files already changed. If it needs no change, repeat it unchanged. Answer with the whole file only, in one ```{lang} code block.",
        shown(root, &m.path)
    ));
    ChatRequest {
        system: Some(
            "You are an expert programmer. You answer with code only, in one fenced code block, with no explanation."
                .to_owned(),
        ),
        messages: vec![Message::user(user)],
        max_tokens: Some(MAX_TOKENS * 2),
        code_block: Some(lang.to_owned()),
        ..ChatRequest::default()
    }
}

/// `code` as a file's new text: its trailing newline as the old text had it; the
/// old text when the answer has no code.
fn as_text(old: &str, code: &str) -> String {
    let code = code.trim_matches('\n').trim_end();
    if code.trim().is_empty() {
        return old.to_owned();
    }
    if old.ends_with('\n') {
        format!("{code}\n")
    } else {
        code.to_owned()
    }
}

/// Whether a data file's new text still reads (JSON only: the others have no parser
/// here, and the project's checks read them).
fn data_reads(path: &Path, text: &str) -> bool {
    path.extension().and_then(|e| e.to_str()) != Some("json")
        || serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// Set `i`'s files, written one after the other; with the name of the set's
/// function when it kept its signature (the writing stops after that first file).
async fn write_set(
    cx: &Cx<'_>,
    set: &EditSet,
    i: usize,
    used: &mut ModelUse,
) -> (Vec<String>, Option<String>) {
    let root = &cx.ctx.root;
    let mut written: Vec<String> = Vec::new();
    for k in 0..set.files.len() {
        let member = &set.files[k];
        let req = request(root, cx.task, set, k, &written);
        let req = sampled(&req, i, cx.config.temperature, cx.config.seed);
        let answer = used.ask(cx.provider, &req, &cx.ctx.cancel).await;
        let new = as_text(&member.text, &code_of(&answer));
        written.push(match &set.function {
            Some(f) if member.test => calls_only(&member.text, &new, &f.name),
            _ => new,
        });
        if k == 0
            && let Some(f) = &set.function
            && signature(f.language, &member.text, &f.name)
                == signature(f.language, &written[0], &f.name)
        {
            return (written, Some(f.name.clone()));
        }
    }
    (written, None)
}

/// Samples sets until one turns a failing check green, the samples run out or the
/// deadline nears; picks as the single-file pipeline does and lands the pick whole.
async fn write_sets(cx: &Cx<'_>, set: &EditSet) -> Solved {
    let started = Instant::now();
    let root = &cx.ctx.root;
    let progress = Progress::new(cx.events);
    let targets: Vec<String> = set
        .files
        .iter()
        .map(|m| format!("{}: {}", shown(root, &m.path), m.why))
        .collect();
    progress.start(json!({ "targets": targets, "samples": cx.config.samples.min(MAX_SAMPLES) }));
    let verifier = Verifier::detected(cx.ctx).await;
    let baseline = verifier.verify_files(&[]).await;
    progress.line(format!("the workspace as it is: {}", baseline.phrase()));
    let mut report = SolveReport {
        targets,
        tests: verifier.checks().tests.clone(),
        baseline: baseline.phrase(),
        ..SolveReport::default()
    };
    let mut used = ModelUse::default();
    let (mut sets, mut verdicts, mut joined): (Vec<Vec<String>>, Vec<Verdict>, Vec<String>) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut numbers = Vec::new();
    let samples = cx.config.samples.clamp(1, MAX_SAMPLES);
    let sampling = Instant::now();
    for i in 0..samples {
        if cx.ctx.cancel.is_cancelled() || (i > 0 && !cx.config.another(i, sampling)) {
            break;
        }
        let (written, kept) = write_set(cx, set, i, &mut used).await;
        let verdict = match kept {
            Some(_) => None,
            None => verify_set(&verifier, set, &written).await,
        };
        let changed: Vec<(String, String)> = set
            .files
            .iter()
            .zip(&written)
            .filter(|(m, new)| m.text != **new)
            .map(|(m, new)| (shown(root, &m.path), new.clone()))
            .collect();
        let phrase = match (&kept, &verdict) {
            (Some(name), _) => format!(
                "keeps the signature of `{name}` (the single rewrite's to change: no candidate)"
            ),
            (None, Some(verdict)) => verdict.phrase(),
            (None, None) => "no change".to_owned(),
        };
        let mut files = changed.into_iter();
        let first = files.next();
        report.candidates.push(CandidateReport {
            path: first.as_ref().map_or_else(String::new, |(p, _)| p.clone()),
            temperature: if i == 0 { 0.0 } else { cx.config.temperature },
            seed: (i > 0).then(|| cx.config.seed.wrapping_add(i as u64)),
            repair: false,
            fim: false,
            text: first.map(|(_, t)| t),
            also: files.collect(),
            verdict: phrase.clone(),
            builds: verdict.as_ref().is_some_and(Verdict::builds),
            passes: verdict.as_ref().is_some_and(Verdict::passes),
        });
        progress.line(format!(
            "set {}/{samples}: {phrase} — {}",
            i + 1,
            report.tally()
        ));
        let Some(verdict) = verdict else {
            continue;
        };
        let green = super::pick::turns_green(&baseline, &verdict);
        numbers.push(report.candidates.len() - 1);
        joined.push(written.concat());
        sets.push(written);
        verdicts.push(verdict);
        if green {
            break;
        }
    }
    let choice = super::pick::pick(&baseline, &verdicts, &joined);
    let mut answer = None;
    match choice {
        Some(choice) => {
            let chosen = choice.index();
            report.chosen = Some(numbers[chosen]);
            report.reason = format!(
                "set {} {} (before: {})",
                numbers[chosen] + 1,
                verdicts[chosen].phrase(),
                baseline.phrase()
            );
            let landing: Vec<(PathBuf, String, String)> = set
                .files
                .iter()
                .zip(&sets[chosen])
                .filter(|(m, new)| m.text != **new)
                .map(|(m, new)| (m.path.clone(), m.text.clone(), new.clone()))
                .collect();
            let names: Vec<String> = landing.iter().map(|(p, _, _)| shown(root, p)).collect();
            match land_files(cx.ctx, landing).await {
                Ok(summary) => {
                    report.landed = true;
                    answer = Some(format!(
                        "Changed {} together; {}; {}. {summary}",
                        names.join(", "),
                        report.tally(),
                        report.reason
                    ));
                }
                Err(e) => report.reason = format!("the chosen change did not land: {e}"),
            }
        }
        None => {
            report.reason = if super::pick::something_fails(&baseline) {
                "no set made the failing checks pass".into()
            } else {
                "no set changed the files and passed every check".into()
            };
        }
    }
    report.timings = used.spent(&verifier);
    progress.finish(&report, answer.is_some(), started);
    cx.config.tap(&report);
    Solved {
        report,
        answer,
        calls: used.calls,
        usage: used.usage,
        model_ms: used.model_ms,
    }
}

/// The verdict on one set's texts, laid over the workspace together; `None` when it
/// changes nothing. A data file that no longer reads fails it as a syntax error.
async fn verify_set(verifier: &Verifier, set: &EditSet, written: &[String]) -> Option<Verdict> {
    let laid: Vec<(&Path, &str)> = set
        .files
        .iter()
        .zip(written)
        .filter(|(m, new)| m.text != **new)
        .map(|(m, new)| (m.path.as_path(), new.as_str()))
        .collect();
    if laid.is_empty() {
        return None;
    }
    let unreadable = laid.iter().filter(|(p, t)| !data_reads(p, t)).count();
    if unreadable > 0 {
        return Some(Verdict {
            syntax_errors: unreadable,
            compiles: None,
            tests: None,
        });
    }
    Some(verifier.verify_files(&laid).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_data_files() {
        assert_eq!(
            keys("[upload]\ntimeout_seconds = 30\n# x\nname=\"a\"\n"),
            vec!["timeout_seconds", "name"]
        );
        assert_eq!(
            keys("{\n  \"thumbnail\": {\"width\": 320},\n  \"avatar\": 64\n}\n"),
            vec!["thumbnail", "avatar"]
        );
        assert_eq!(
            keys("retries: 3\nhosts:\n  - a\n"),
            vec!["retries", "hosts"]
        );
    }

    #[test]
    fn task_words_name_keys_by_their_parts() {
        let words = |t: &str| -> Vec<String> {
            t.to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| w.len() >= 4)
                .map(str::to_owned)
                .collect()
        };
        assert!(names_key(
            &words("set the upload timeout to 90 seconds"),
            "timeout_seconds"
        ));
        assert!(names_key(
            &words("make the thumbnails 480x360"),
            "thumbnail"
        ));
        assert!(!names_key(&words("make the thumbnails 480x360"), "avatar"));
        assert!(!names_key(&words("fix the bug"), "id"));
    }

    #[test]
    fn a_file_keeps_its_last_newline_and_an_empty_answer_keeps_the_file() {
        assert_eq!(as_text("a\n", "b"), "b\n");
        assert_eq!(as_text("a", "b\n\n"), "b");
        assert_eq!(as_text("a\n", "  \n"), "a\n");
    }

    /// A test file takes the new argument in its calls and nothing else: a deleted
    /// assertion, a changed expectation on a line without the call, and an added
    /// line that does not call the function are all undone.
    #[test]
    fn a_test_file_changes_only_where_it_calls_the_function() {
        let old = "def test_fmt():\n    assert fmt_time(75) == \"1:15\"\n    assert fmt_time(0) == \"0:00\"\n    x = 3\n    assert x == 3\n";
        let new = "def test_fmt():\n    assert fmt_time(75, None) == \"1:15\"\n    x = 4\n    assert x == 4\n    print(x)\n    assert fmt_time(75, 9) == \"1:15:09\"\n";
        assert_eq!(
            calls_only(old, new, "fmt_time"),
            "def test_fmt():\n    assert fmt_time(75, None) == \"1:15\"\n    assert fmt_time(0) == \"0:00\"\n    x = 3\n    assert x == 3\n    assert fmt_time(75, 9) == \"1:15:09\"\n"
        );
        // `fmt_times` is another name.
        assert_eq!(
            calls_only("a = fmt_times(1)\n", "a = fmt_times(1, 2)\n", "fmt_time"),
            "a = fmt_times(1)\n"
        );
        assert_eq!(calls_only(old, old, "fmt_time"), old);
    }
}

//! Where a failing run points: the tests it names, and the functions of the target
//! file they call. A task told by a failing test ("`cargo test` fails …", "the test in
//! test/query.test.js fails") names no function, and localisation falls back to the
//! whole file; rewriting a file costs its every token in each sample, while the bug
//! sits in one function the failing tests reach. The runner's output and the index
//! say which, without the model.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_index::{Index, Symbol, SymbolKind};
use agentls_text::{DocumentStore, ReadLimits};

use super::localise::{Scope, Target, byte_offset, is_test_file, task_words};

/// Most functions taken from the failing tests: each costs a round of samples (the
/// pipeline takes two targets at most).
pub const MOST: usize = 2;

/// The names of the tests a run's `output` reports failing, as each runner writes
/// them: a function's name for Go, Rust and Python (the last part of a path such as
/// `tests::subtracts` or `test_x.py::TestC::test_y`), a test's description for
/// `node --test` (TAP's `not ok 3 - base64 token`, or the spec reporter's `✖`).
pub fn names(output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let name = name.trim();
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    };
    let last_part = |path: &str| -> String {
        let path = path.split('[').next().unwrap_or(path);
        path.rsplit("::").next().unwrap_or(path).to_owned()
    };
    for line in output.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("--- FAIL: ") {
            // Go: `--- FAIL: TestX/sub (0.00s)`.
            let name = rest.split_whitespace().next().unwrap_or("");
            push(name.split('/').next().unwrap_or(name));
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some(path) = rest.strip_suffix(" ... FAILED")
        {
            // cargo: `test tests::subtracts ... FAILED`.
            push(&last_part(path));
        } else if let Some(rest) = line.strip_prefix("---- ")
            && let Some(path) = rest.strip_suffix(" stdout ----")
        {
            push(&last_part(path));
        } else if let Some(rest) = line.strip_prefix("FAILED ")
            && rest.contains("::")
        {
            // pytest: `FAILED test_x.py::TestC::test_y - AssertionError`.
            let path = rest.split(" - ").next().unwrap_or(rest);
            push(&last_part(path.trim()));
        } else if let Some(rest) = line
            .strip_prefix("FAIL: ")
            .or_else(|| line.strip_prefix("ERROR: "))
        {
            // unittest: `FAIL: test_y (test_x.TestC.test_y)`.
            push(rest.split_whitespace().next().unwrap_or(""));
        } else if let Some(rest) = line.strip_prefix("not ok ") {
            // TAP: `not ok 3 - base64 token`, a directive after ` # `.
            if let Some((_, name)) = rest.split_once(" - ") {
                push(name.split(" # ").next().unwrap_or(name));
            }
        } else if let Some(rest) = line.strip_prefix("✖ ") {
            // node's spec reporter: `✖ base64 token (0.61ms)`.
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n);
            push(name);
        }
    }
    out
}

/// A test's code: `(its name, the file, the file's text, the test's byte range)`.
type TestCode = (String, PathBuf, String, Range<usize>);

/// Where each of `failing` is written in the workspace: a function of that name (in a
/// test file, or Rust's test module beside the code); else, for a described test
/// (`test('base64 token', …)`) in a test file, from the quoted description to the next
/// line that opens another test.
fn tests_named(
    root: &Path,
    index: &Index,
    store: &DocumentStore,
    limits: &ReadLimits,
    failing: &[String],
) -> Vec<TestCode> {
    let mut files: Vec<PathBuf> = index.paths().map(|p| p.to_path_buf()).collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let symbols = index.file_symbols(&path);
        let test_file = is_test_file(root, &path);
        let wanted = |s: &&Symbol| {
            matches!(s.kind, SymbolKind::Function | SymbolKind::Method)
                && failing.iter().any(|n| **n == *s.name)
        };
        if !test_file && !symbols.iter().any(|s| wanted(&s)) {
            continue;
        }
        let Ok(src) = store.read(&path, limits) else {
            continue;
        };
        let text = src.rope.to_string();
        for name in failing {
            let mut found = false;
            for s in symbols.iter().filter(wanted).filter(|s| *s.name == **name) {
                if let Some(range) = span_range(&text, s)
                    && (test_file || in_test_code(s.language, &text, range.start))
                {
                    out.push((name.clone(), path.clone(), text.clone(), range));
                    found = true;
                }
            }
            if !found
                && test_file
                && let Some(range) = described(&text, name)
            {
                out.push((name.clone(), path.clone(), text.clone(), range));
            }
        }
    }
    out
}

/// The byte range of `s` in `text`.
fn span_range(text: &str, s: &Symbol) -> Option<Range<usize>> {
    Some(byte_offset(text, s.span.start)?..byte_offset(text, s.span.end)?)
}

/// Whether byte `at` of a source file lies in its tests: Rust's `#[cfg(test)]` module,
/// by convention after the code it tests.
fn in_test_code(language: agentls_index::Language, text: &str, at: usize) -> bool {
    language == agentls_index::Language::Rust
        && text.get(..at).is_some_and(|t| t.contains("#[cfg(test)]"))
}

/// The byte range of the test `text` describes as `name` (quoted), to the next line
/// that opens a test or a group; `None` when no quote of it is there.
fn described(text: &str, name: &str) -> Option<Range<usize>> {
    let start = ['\'', '"', '`']
        .iter()
        .find_map(|q| text.find(&format!("{q}{name}{q}")))?;
    let body_from = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let mut at = body_from;
    for line in text[body_from..].split_inclusive('\n') {
        let t = line.trim_start();
        if ["test(", "it(", "test.", "it.", "describe("]
            .iter()
            .any(|o| t.starts_with(o))
        {
            break;
        }
        at += line.len();
    }
    Some(start..at)
}

/// The functions of `file`'s target that the tests in `failing` call, defined once in
/// the workspace's sources, as function targets: those more failing tests call first,
/// then those called more often, then in the order of their first call; at most
/// [`MOST`]. Empty when the task names
/// one of the file's functions (localisation took the file for that) or no failing
/// test is found.
pub fn tested(
    root: &Path,
    index: &Index,
    store: &DocumentStore,
    limits: &ReadLimits,
    task: &str,
    file: &Target,
    failing: &[String],
) -> Vec<Target> {
    if !matches!(file.scope, Scope::File) {
        return Vec::new();
    }
    let words = task_words(task);
    let own: Vec<Symbol> = index
        .file_symbols(&file.path)
        .into_iter()
        .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
        .collect();
    if own.iter().any(|s| words.iter().any(|w| *w == *s.name)) {
        return Vec::new();
    }
    // (the function, the failing tests that call it, its calls there), in order of
    // first call.
    let mut called: Vec<(Symbol, Vec<String>, usize)> = Vec::new();
    let mut code = tests_named(root, index, store, limits, failing);
    // A helper of the tests (`fn check(expr, want)`) is read too, once.
    let mut helpers: Vec<Arc<str>> = Vec::new();
    let mut next = 0;
    while let Some((test, path, text, range)) = code.get(next).cloned() {
        next += 1;
        for name in calls_within(&text, &range) {
            let Some(def) = defined_once(index, &name) else {
                continue;
            };
            let Some(def_text) = (*def.path == *path).then(|| text.clone()).or_else(|| {
                store
                    .read(&def.path, limits)
                    .ok()
                    .map(|s| s.rope.to_string())
            }) else {
                continue;
            };
            let def_range = span_range(&def_text, &def);
            let in_tests = is_test_file(root, &def.path)
                || def_range
                    .as_ref()
                    .is_some_and(|r| in_test_code(def.language, &def_text, r.start));
            if in_tests {
                if let Some(r) = def_range
                    && !helpers.contains(&def.name)
                {
                    helpers.push(def.name.clone());
                    code.push((test.clone(), def.path.to_path_buf(), def_text, r));
                }
                continue;
            }
            if *def.path != *file.path {
                continue;
            }
            match called.iter_mut().find(|(s, _, _)| s.name == def.name) {
                Some((_, tests, calls)) => {
                    *calls += 1;
                    if !tests.contains(&test) {
                        tests.push(test.clone());
                    }
                }
                None => called.push((def, vec![test.clone()], 1)),
            }
        }
    }
    // More failing tests, then more calls (a cache's `Put` and `Get` before its
    // constructor); stable, so ties keep the order of first call.
    called.sort_by_key(|(_, tests, calls)| std::cmp::Reverse((tests.len(), *calls)));
    called
        .into_iter()
        .take(MOST)
        .filter_map(|(def, tests, _)| {
            let tests: Vec<String> = tests.iter().map(|t| format!("`{t}`")).collect();
            let why = format!(
                "`{}`: the failing test{} {} call{} it",
                def.name,
                if tests.len() > 1 { "s" } else { "" },
                tests.join(", "),
                if tests.len() > 1 { "" } else { "s" },
            );
            super::callees::as_target(store, limits, &def, why)
        })
        .collect()
}

/// The names `range` of `text` calls, in order, once a call: each identifier written
/// right before a `(`, read from the text rather than the index's references, which
/// miss calls inside Rust's macros (`assert_eq!(eval("3 4 -"), 1)`). A definition's
/// own name is no call; keywords (`if (`) resolve to no function and drop out later.
fn calls_within(text: &str, range: &Range<usize>) -> Vec<Arc<str>> {
    let Some(code) = text.get(range.clone()) else {
        return Vec::new();
    };
    let mut names: Vec<Arc<str>> = Vec::new();
    let mut previous = "";
    let mut start = None;
    for (i, c) in code
        .char_indices()
        .chain(std::iter::once((code.len(), ' ')))
    {
        if super::mention::is_ident_char(c) {
            start.get_or_insert(i);
            continue;
        }
        let Some(s) = start.take() else {
            continue;
        };
        let word = &code[s..i];
        let defining = ["fn", "def", "func", "function"].contains(&previous);
        if c == '(' && !defining && super::mention::is_identifier(word) {
            names.push(Arc::from(word));
        }
        previous = word;
    }
    names
}

/// The one function or method of the workspace named `name`.
fn defined_once(index: &Index, name: &Arc<str>) -> Option<Symbol> {
    let defs: Vec<Symbol> = index
        .definitions(name)
        .into_iter()
        .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
        .collect();
    match <[Symbol; 1]>::try_from(defs) {
        Ok([def]) => Some(def),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runner_names_its_failing_tests() {
        let go = "--- FAIL: TestRecentlyReadSurvives (0.00s)\n    lru_test.go:24: a was evicted\n--- FAIL: TestTable/empty (0.00s)\nFAIL\n";
        assert_eq!(names(go), ["TestRecentlyReadSurvives", "TestTable"]);
        let cargo = "running 4 tests\ntest tests::adds ... ok\ntest tests::subtracts ... FAILED\n\nfailures:\n\n---- tests::divides stdout ----\nthread panicked\n";
        assert_eq!(names(cargo), ["subtracts", "divides"]);
        let pytest = "FAILED test_schedule.py::test_contained - AssertionError: 30 != 60\nFAILED tests/test_x.py::TestC::test_y[2-3] - x\n";
        assert_eq!(names(pytest), ["test_contained", "test_y"]);
        let unittest = "FAIL: test_contained (test_schedule.TestMerge.test_contained)\nERROR: test_other (test_schedule.TestMerge.test_other)\n";
        assert_eq!(names(unittest), ["test_contained", "test_other"]);
        let tap =
            "ok 1 - simple pairs\nnot ok 3 - base64 token\n  ---\nnot ok 4 - round trip # TODO\n";
        assert_eq!(names(tap), ["base64 token", "round trip"]);
        let spec = "✔ simple pairs (0.4ms)\n✖ base64 token (0.61ms)\n";
        assert_eq!(names(spec), ["base64 token"]);
        assert!(names("ok  \texample.com/cache\t0.002s\nPASS\n").is_empty());
    }

    #[test]
    fn a_described_test_runs_to_the_next_test() {
        let text = "const test = require('node:test');\n\ntest('simple', () => {\n  parse('a');\n});\n\ntest('base64 token', () => {\n  parse('t=YQ==');\n});\n";
        let range = described(text, "simple").unwrap();
        assert_eq!(&text[range], "'simple', () => {\n  parse('a');\n});\n\n");
        let range = described(text, "base64 token").unwrap();
        assert!(text[range].ends_with("});\n"));
        assert!(described(text, "missing").is_none());
    }

    use crate::solve::fixtures::workspace;

    const QUERY: &str = "function decode(s) {\n  return s;\n}\n\nfunction parseQuery(q) {\n  return decode(q);\n}\n\nfunction stringifyQuery(p) {\n  return '';\n}\n\nmodule.exports = { parseQuery, stringifyQuery };\n";
    const QUERY_TEST: &str = "const test = require('node:test');\nconst { parseQuery, stringifyQuery } = require('../query.js');\n\ntest('simple', () => {\n  stringifyQuery({});\n});\n\ntest('base64 token', () => {\n  parseQuery('t=YQ==');\n});\n";

    fn function_names(targets: &[Target]) -> Vec<String> {
        targets
            .iter()
            .filter_map(|t| match &t.scope {
                Scope::Function { name, .. } => Some(name.clone()),
                Scope::File => None,
            })
            .collect()
    }

    #[test]
    fn a_failing_described_test_points_to_the_function_it_calls() {
        let (_dir, root, index, store) =
            workspace(&[("query.js", QUERY), ("test/query.test.js", QUERY_TEST)]);
        let file = Target {
            path: root.join("query.js"),
            language: agentls_index::Language::JavaScript,
            text: QUERY.to_owned(),
            scope: Scope::File,
            why: String::new(),
        };
        let limits = ReadLimits::default();
        let failing = ["base64 token".to_owned()];
        let task = "The test in test/query.test.js fails: a token comes back cut short.";
        let found = tested(&root, &index, &store, &limits, task, &file, &failing);
        // Only the failing test's call: not `stringifyQuery`, which the passing one calls.
        assert_eq!(function_names(&found), ["parseQuery"]);
        assert!(
            found[0]
                .why
                .contains("the failing test `base64 token` calls it")
        );
        let Scope::Function { range, .. } = &found[0].scope else {
            unreachable!()
        };
        assert!(found[0].text[range.clone()].starts_with("function parseQuery("));
        // A task that names one of the file's functions keeps the file.
        let named = "parseQuery and decode both need changing: the test fails.";
        assert!(tested(&root, &index, &store, &limits, named, &file, &failing).is_empty());
        // A function target is never narrowed further.
        let function = Target {
            scope: found[0].scope.clone(),
            ..file.clone()
        };
        assert!(tested(&root, &index, &store, &limits, task, &function, &failing).is_empty());
    }

    #[test]
    fn functions_more_failing_tests_call_come_first() {
        let lib = "pub fn apply(a: i64) -> i64 {\n    a\n}\n\npub fn eval(s: &str) -> i64 {\n    apply(s.len() as i64)\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn subtracts() {\n        assert_eq!(apply(1), eval(\"x\"));\n    }\n    #[test]\n    fn divides() {\n        assert_eq!(eval(\"y\"), 2);\n    }\n}\n";
        let (_dir, root, index, store) = workspace(&[("src/lib.rs", lib)]);
        let file = Target {
            path: root.join("src/lib.rs"),
            language: agentls_index::Language::Rust,
            text: lib.to_owned(),
            scope: Scope::File,
            why: String::new(),
        };
        let failing = names("test tests::subtracts ... FAILED\ntest tests::divides ... FAILED\n");
        let found = tested(
            &root,
            &index,
            &store,
            &ReadLimits::default(),
            "cargo test fails in this crate",
            &file,
            &failing,
        );
        assert_eq!(function_names(&found), ["eval", "apply"], "{found:?}");
        assert!(
            found[0]
                .why
                .contains("the failing tests `subtracts`, `divides` call it")
        );
    }
}

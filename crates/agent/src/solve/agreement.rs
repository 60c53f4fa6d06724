//! Choosing among candidates when no test tells them apart (CodeT's dual execution
//! agreement): the model writes a few assertions about the function from the task
//! and its docstring alone, every candidate runs them in the sandbox's overlay, and
//! the candidates that pass the same assertions form a group. Only assertions the
//! code as it was fails count (those it passes say nothing about the change; a stub
//! passes none). A group scores its size times the assertions it passes; the best
//! group's first candidate wins. Wrong
//! assertions cost little: a wrong one is passed by few candidates, and agreement
//! among candidates outweighs it. Python and JavaScript, whose single assertions run
//! without a build; other languages keep the plain majority vote.

use agentls_index::Language;
use agentls_model::{ChatRequest, Message};

use super::generate::fence;
use super::localise::Target;

/// Assertions asked for, and the most kept.
const ASSERTIONS: usize = 8;

/// Longest one assertion may run before it counts as failed (an endless loop).
const ASSERTION_SECS: u32 = 2;

/// The line the script prints its outcomes on.
const MARK: &str = "AGENTLS-AGREEMENT ";

/// Whether candidates in `lang` can be told apart by assertions here.
pub fn supported(lang: Language) -> bool {
    matches!(lang, Language::Python | Language::JavaScript)
}

/// The request for assertions about `name`: the task and the file as it was (the
/// spec, not a candidate), asking for one assertion a line.
pub fn request(task: &str, target: &Target, shown: &str, name: &str) -> ChatRequest {
    let lang = fence(target.language);
    let example = match target.language {
        Language::JavaScript => format!("assert.deepStrictEqual({name}(...), ...);"),
        _ => format!("assert {name}(...) == ..."),
    };
    let user = format!(
        "Task: {task}\n\nFile `{shown}`:\n```{lang}\n{}\n```\n\nWrite {ASSERTIONS} different assertions that check `{name}` once the task is done, each on one line, on small inputs whose right result you are sure of, like `{example}`. Answer with the assertions only, in one ```{lang} code block.",
        target.text.trim_end()
    );
    ChatRequest {
        system: Some(format!(
            "You are an expert {lang} programmer who writes precise unit tests. You answer with code only, in one fenced code block."
        )),
        messages: vec![Message::user(user)],
        max_tokens: Some(600),
        code_block: Some(lang.to_owned()),
        ..ChatRequest::default()
    }
}

/// The assertions of an answer (its code block): lines that start as an assertion
/// and mention `name`, each once, at most [`ASSERTIONS`].
pub fn assertions(lang: Language, code: &str, name: &str) -> Vec<String> {
    let start = match lang {
        Language::JavaScript => "assert",
        _ => "assert ",
    };
    let mut out: Vec<String> = Vec::new();
    for line in code.lines().map(str::trim) {
        if line.starts_with(start) && line.contains(name) && !out.iter().any(|l| l == line) {
            out.push(line.to_owned());
        }
        if out.len() == ASSERTIONS {
            break;
        }
    }
    out
}

/// The shell command that loads the target file `rel` (below the root) and runs each
/// assertion on its own, printing which passed as one line after [`MARK`]; `None` for
/// a language without one.
pub fn command(lang: Language, rel: &str, assertions: &[String]) -> Option<String> {
    let list = serde_json::to_string(assertions).ok()?;
    let script = match lang {
        Language::Python => {
            let module = super::verify::python_module(rel)?;
            format!(
                r#"import importlib, json, signal, sys
sys.path.insert(0, ".")
def _late(*_):
    raise TimeoutError()
signal.signal(signal.SIGALRM, _late)
signal.alarm({ASSERTION_SECS})
try:
    scope = dict(vars(importlib.import_module({module})))
except BaseException:
    scope = None
signal.alarm(0)
out = []
for a in json.loads({list}):
    ok = False
    if scope is not None:
        signal.alarm({ASSERTION_SECS})
        try:
            exec(a, dict(scope))
            ok = True
        except BaseException:
            pass
        signal.alarm(0)
    out.append(ok)
print("{MARK}" + json.dumps(out))
"#,
                module = serde_json::to_string(&module).ok()?,
                list = serde_json::to_string(&list).ok()?,
            )
        }
        Language::JavaScript => {
            let path =
                serde_json::to_string(&format!("./{}", rel.trim_start_matches("./"))).ok()?;
            format!(
                r#"const vm = require("node:vm");
const assert = require("node:assert");
const path = require("node:path");
(async () => {{
  let scope = null;
  try {{
    const m = await import(require("node:url").pathToFileURL(path.resolve({path})).href);
    scope = {{ ...(m.default && typeof m.default === "object" ? m.default : {{}}), ...m, assert }};
  }} catch (e) {{}}
  const out = [];
  for (const a of {list}) {{
    let ok = false;
    if (scope) {{
      try {{ vm.runInNewContext(a, {{ ...scope }}, {{ timeout: {ms} }}); ok = true; }} catch (e) {{}}
    }}
    out.push(ok);
  }}
  console.log("{MARK}" + JSON.stringify(out));
}})();
"#,
                ms = ASSERTION_SECS * 1000,
            )
        }
        _ => return None,
    };
    let program = match lang {
        Language::JavaScript => "node -e",
        _ => "python3 -B -c",
    };
    Some(format!("{program} '{}'", script.replace('\'', "'\\''")))
}

/// Which assertions passed, from the command's output.
pub fn outcomes(output: &str) -> Option<Vec<bool>> {
    let line = output
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(MARK))?;
    serde_json::from_str(line).ok()
}

/// The assertions a candidate passes that the code as it was (`before`) fails: only
/// those say something about the change. A stub fails them all, so for a stub it is
/// every assertion passed.
pub fn beyond(outcome: &[bool], before: &[bool]) -> Vec<bool> {
    outcome
        .iter()
        .enumerate()
        .map(|(k, ok)| *ok && !before.get(k).copied().unwrap_or(false))
        .collect()
}

/// The chosen candidate among `(index, outcomes)`: candidates that pass the same
/// assertions form a group scored by its size times the assertions passed; the best
/// group (ties to the earliest) gives its first candidate, with the group's size and
/// the assertions it passed. `None` when no candidate passes any assertion.
pub fn choose(results: &[(usize, Vec<bool>)]) -> Option<(usize, usize, usize)> {
    let mut best: Option<(usize, usize, usize, usize)> = None; // (score, index, size, passed)
    for (i, (index, passes)) in results.iter().enumerate() {
        let passed = passes.iter().filter(|p| **p).count();
        if passed == 0 {
            continue;
        }
        // Only the group's first member scores it.
        if results[..i].iter().any(|(_, p)| p == passes) {
            continue;
        }
        let size = results.iter().filter(|(_, p)| p == passes).count();
        let score = size * passed;
        if best.is_none_or(|(s, ..)| score > s) {
            best = Some((score, *index, size, passed));
        }
    }
    best.map(|(_, index, size, passed)| (index, size, passed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_are_the_lines_that_assert_the_function() {
        let code = "import x\nassert f(1) == 2\nassert f(1) == 2\nprint(f(2))\nassert g(1) == 1\n  assert f(3) == 4\n";
        assert_eq!(
            assertions(Language::Python, code, "f"),
            vec!["assert f(1) == 2", "assert f(3) == 4"]
        );
        let js = "assert.strictEqual(sum([1, 2]), 3);\nconsole.log(sum([]));\n";
        assert_eq!(
            assertions(Language::JavaScript, js, "sum"),
            vec!["assert.strictEqual(sum([1, 2]), 3);"]
        );
    }

    #[test]
    fn the_largest_agreeing_group_times_what_it_passes_wins() {
        let (t, f) = (true, false);
        // Two candidates agree on passing three; one passes four alone.
        let results = vec![
            (0, vec![t, t, t, t]),
            (1, vec![t, t, t, f]),
            (2, vec![t, t, t, f]),
            (3, vec![f, f, f, f]),
        ];
        assert_eq!(choose(&results), Some((1, 2, 3)));
        assert_eq!(choose(&[(0, vec![f, f])]), None);
        // Ties go to the earliest.
        assert_eq!(choose(&[(4, vec![t, f]), (5, vec![f, t])]), Some((4, 1, 1)));
    }

    #[test]
    fn assertions_the_old_code_passes_do_not_count() {
        let (t, f) = (true, false);
        assert_eq!(beyond(&[t, t, f], &[t, f, f]), vec![f, t, f]);
        // The old code did not load: every assertion passed counts.
        assert_eq!(beyond(&[t, t], &[]), vec![t, t]);
        // A candidate that behaves as the old code did passes nothing new.
        assert_eq!(choose(&[(0, beyond(&[t, f], &[t, f]))]), None);
    }

    #[test]
    fn outcomes_come_from_the_marked_line() {
        assert_eq!(
            outcomes("noise\nAGENTLS-AGREEMENT [true, false]\n"),
            Some(vec![true, false])
        );
        assert_eq!(outcomes("Traceback ..."), None);
    }

    /// The scripts run for real: a right and a wrong candidate told apart, an
    /// endless loop cut off, a module that fails to load passing nothing.
    #[test]
    fn the_scripts_run_each_assertion_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let run = |cmd: &str| -> Option<Vec<bool>> {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .current_dir(dir.path())
                .output()
                .ok()?;
            outcomes(&String::from_utf8_lossy(&out.stdout))
        };
        let asserts = vec![
            "assert double(2) == 4".to_owned(),
            "assert double(0) == 0".to_owned(),
            "assert double(-1) == -2 and spin()".to_owned(),
        ];
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/__init__.py"), "").unwrap();
        std::fs::write(
            dir.path().join("pkg/m.py"),
            "def double(x):\n    return x + 2\n\ndef spin():\n    while True:\n        pass\n",
        )
        .unwrap();
        let cmd = command(Language::Python, "pkg/m.py", &asserts).unwrap();
        if std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok()
        {
            assert_eq!(run(&cmd), Some(vec![true, false, false]));
            std::fs::write(dir.path().join("pkg/m.py"), "def double(x) return\n").unwrap();
            assert_eq!(run(&cmd), Some(vec![false, false, false]));
        } else {
            assert!(
                std::env::var_os("CI").is_none(),
                "python3 is missing under CI"
            );
        }
        if std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok()
        {
            std::fs::write(
                dir.path().join("m.js"),
                "function twice(x) { return x * 2; }\nfunction spin() { for (;;) {} }\nmodule.exports = { twice, spin };\n",
            )
            .unwrap();
            let js = vec![
                "assert.strictEqual(twice(2), 4);".to_owned(),
                "assert.strictEqual(twice(3), 7);".to_owned(),
                "spin(); twice(1);".to_owned(),
            ];
            let cmd = command(Language::JavaScript, "m.js", &js).unwrap();
            assert_eq!(run(&cmd), Some(vec![true, false, false]));
        } else {
            assert!(std::env::var_os("CI").is_none(), "node is missing under CI");
        }
    }
}

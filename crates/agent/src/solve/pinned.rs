//! Tests that pin down what code does today, per language: a probe runs each call
//! against the code as it is and prints what it returned (or raised), and the test
//! file asserts exactly that. Python and JavaScript compare literals; Go and Rust
//! compare each result's rendering (`%#v`, `{:?}`), which needs no literal syntax for
//! every type.

use agentls_index::Language;

/// The line a probe prints each call's outcome on: `MARK index outcome`.
pub const MARK: &str = "AGENTLS-PROBE ";

/// Longest one Python call may run in the probe before it counts as hanging.
const CALL_SECS: u32 = 2;

/// What one call did when the code as it is ran it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Returned this: a literal of the language (Python, JavaScript) or the value's
    /// rendering (Go `%#v`, Rust `{:?}`).
    Returned(String),
    /// Raised this error type (Python, JavaScript: its name), or panicked (Go, Rust:
    /// `panic`). `import`: the Python type must be imported from the module.
    Raised {
        /// The type's name.
        name: String,
        /// Not a builtin: the test imports it from the code's module.
        import: bool,
    },
}

/// One call with what the code did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    /// The function called.
    pub function: String,
    /// The call, as source text (`slugify("Hello World")`).
    pub call: String,
    /// What it did.
    pub outcome: Outcome,
}

/// Where the tests go and what they exercise.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The language of both files.
    pub lang: Language,
    /// The test file to write, below the root.
    pub test_rel: String,
    /// The code under test, below the root.
    pub source_rel: String,
    /// Its functions the tests call.
    pub functions: Vec<String>,
    /// Rust: the library crate's name; Go: the package's name.
    pub unit: String,
    /// JavaScript: the code is an ES module (`export`), so the tests import it.
    pub esm: bool,
}

/// How to probe calls: a command, and for Go and Rust a file laid at the test's path
/// (the calls need the package or crate around them), whose call `k` is on line
/// `first_line + k`.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The shell command, run at the root.
    pub command: String,
    /// The file laid at the test's path, if any.
    pub file: Option<String>,
    /// Line (1-based) of the first call in `file`.
    pub first_line: usize,
}

/// A JSON string, which is also a valid string literal in Python, JavaScript, Go and
/// Rust for the characters it escapes.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The directory part of a path below the root (`""` at the root).
fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// `to` (below the root) as seen from the directory `from_dir`: `../duration.js`.
fn relative(from_dir: &str, to: &str) -> String {
    let from: Vec<&str> = from_dir.split('/').filter(|c| !c.is_empty()).collect();
    let target: Vec<&str> = to.split('/').filter(|c| !c.is_empty()).collect();
    let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&target[common..]);
    let joined = parts.join("/");
    if joined.starts_with("..") {
        joined
    } else {
        format!("./{joined}")
    }
}

/// The probe for `calls` (function, call) under `layout`; `None` for a language
/// without one.
pub fn probe(layout: &Layout, calls: &[(String, String)]) -> Option<Probe> {
    let texts: Vec<&str> = calls.iter().map(|(_, c)| c.as_str()).collect();
    let list = serde_json::to_string(&texts).ok()?;
    match layout.lang {
        Language::Python => {
            let module = super::verify::python_module(&layout.source_rel)?;
            let script = format!(
                r#"import builtins, importlib, json, signal, sys
sys.path.insert(0, ".")
def _late(*_):
    raise TimeoutError("agentls: the call did not return")
signal.signal(signal.SIGALRM, _late)
scope = dict(vars(importlib.import_module({module})))
for i, call in enumerate(json.loads({list})):
    signal.alarm({CALL_SECS})
    try:
        value = eval(call, dict(scope))
        signal.alarm(0)
        text = repr(value)
        try:
            back = eval(text, {{}})
            same = type(back) is type(value) and back == value
        except BaseException:
            same = False
        out = {{"ok": text}} if same else {{"skip": "no literal"}}
    except TimeoutError:
        out = {{"skip": "hangs"}}
    except BaseException as e:
        signal.alarm(0)
        name = type(e).__name__
        out = {{"raised": name, "builtin": getattr(builtins, name, None) is type(e)}}
    print("{MARK}" + str(i) + " " + json.dumps(out), flush=True)
"#,
                module = quoted(&module),
                list = quoted(&list),
            );
            Some(Probe {
                command: format!("python3 -B -c {}", shell_quote(&script)),
                file: None,
                first_line: 0,
            })
        }
        Language::JavaScript => {
            let path = quoted(&format!("./{}", layout.source_rel));
            let script = format!(
                r#"const path = require("node:path");
const util = require("node:util");
(async () => {{
  const file = path.resolve({path});
  let m;
  try {{ m = require(file); }} catch (e) {{ m = await import(require("node:url").pathToFileURL(file).href); }}
  const names = Object.keys(m);
  const values = names.map((k) => m[k]);
  {list}.forEach((call, i) => {{
    let out;
    try {{
      const v = new Function(...names, "return (" + call + ");")(...values);
      let lit = null;
      if (v === undefined) lit = "undefined";
      else if (typeof v === "number" && !Number.isFinite(v)) lit = String(v);
      else {{
        const s = JSON.stringify(v);
        if (s !== undefined && util.isDeepStrictEqual(JSON.parse(s), v)) lit = s;
      }}
      out = lit === null ? {{ skip: "no literal" }} : {{ ok: lit }};
    }} catch (e) {{
      out = {{ raised: (e && e.name) || "Error", builtin: true }};
    }}
    console.log("{MARK}" + i + " " + JSON.stringify(out));
  }});
}})();
"#
            );
            Some(Probe {
                command: format!("node -e {}", shell_quote(&script)),
                file: None,
                first_line: 0,
            })
        }
        Language::Go => {
            let mut file = go_head(layout, "probes");
            file.push_str("func TestAgentlsProbe(t *testing.T) {\n");
            let first_line = file.lines().count() + 1;
            for (k, (_, call)) in calls.iter().enumerate() {
                file.push_str(&format!(
                    "\tfmt.Println(\"{MARK}{k}\", catchResult(func() string {{ return showResult({call}) }}))\n"
                ));
            }
            file.push_str("}\n");
            let dir = match dir_of(&layout.test_rel) {
                "" => ".".to_owned(),
                d => format!("./{d}"),
            };
            Some(Probe {
                command: format!("go test -count=1 -v -run '^TestAgentlsProbe$' {dir}"),
                file: Some(file),
                first_line,
            })
        }
        Language::Rust => {
            let mut file = rust_head(layout, "probes");
            file.push_str("#[test]\nfn agentls_probe() {\n");
            let first_line = file.lines().count() + 1;
            for (k, (_, call)) in calls.iter().enumerate() {
                file.push_str(&format!(
                    "    println!(\"{MARK}{k} {{}}\", outcome(|| {call}));\n"
                ));
            }
            file.push_str("}\n");
            let stem = layout
                .test_rel
                .rsplit('/')
                .next()
                .and_then(|n| n.strip_suffix(".rs"))?;
            Some(Probe {
                command: format!(
                    "cargo test --offline --quiet --test {stem} -- --nocapture --test-threads 1"
                ),
                file: Some(file),
                first_line,
            })
        }
        _ => None,
    }
}

/// Each call's outcome from the probe's output, by index (`None`: not printed, or
/// nothing a test can pin).
pub fn outcomes(lang: Language, output: &str, n: usize) -> Vec<Option<Outcome>> {
    let mut out = vec![None; n];
    for line in output.lines() {
        let Some(rest) = line.trim_end().strip_prefix(MARK) else {
            continue;
        };
        let Some((k, value)) = rest.split_once(' ') else {
            continue;
        };
        let Some(slot) = k.parse::<usize>().ok().and_then(|k| out.get_mut(k)) else {
            continue;
        };
        *slot = match lang {
            Language::Go | Language::Rust => Some(if value == "panic" {
                Outcome::Raised {
                    name: "panic".to_owned(),
                    import: false,
                }
            } else {
                Outcome::Returned(value.to_owned())
            }),
            _ => {
                let Ok(json) = serde_json::from_str::<serde_json::Value>(value) else {
                    continue;
                };
                if let Some(lit) = json["ok"].as_str() {
                    Some(Outcome::Returned(lit.to_owned()))
                } else {
                    json["raised"].as_str().map(|name| Outcome::Raised {
                        name: name.to_owned(),
                        import: json["builtin"] == false,
                    })
                }
            }
        };
    }
    out
}

/// The lines of the probe file `test_rel` that the compiler rejected (Go's
/// `./luhn_test.go:12:5:`, rustc's `--> tests/calendar.rs:12:5`).
pub fn rejected_lines(output: &str, test_rel: &str) -> Vec<usize> {
    let name = test_rel.rsplit('/').next().unwrap_or(test_rel);
    let mut lines = Vec::new();
    for line in output.lines() {
        let Some(at) = line.find(name) else {
            continue;
        };
        let before = &line[..at];
        if !(before.ends_with('/') || before.ends_with(' ') || before.is_empty()) {
            continue;
        }
        let rest = &line[at + name.len()..];
        let Some(n) = rest
            .strip_prefix(':')
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !lines.contains(&n) {
            lines.push(n);
        }
    }
    lines
}

/// The test command that runs the new file: what the task's language runs tests with.
pub fn test_command(layout: &Layout) -> String {
    let dir = dir_of(&layout.test_rel);
    match layout.lang {
        Language::Python => match dir {
            "" => "python3 -B -m unittest discover -q".to_owned(),
            d => format!("python3 -B -m unittest discover -s {} -q", shell_quote(d)),
        },
        Language::JavaScript => format!("node --test {}", shell_quote(&layout.test_rel)),
        Language::Go => match dir {
            "" => "go test -count=1 .".to_owned(),
            d => format!("go test -count=1 ./{d}"),
        },
        _ => "cargo test --offline --quiet".to_owned(),
    }
}

/// Whether the code raises `name` itself (a probe's other errors, a `NameError` of a
/// made-up variable or a `TypeError` of a wrong call, say nothing it promises).
pub fn raises(lang: Language, source: &str, name: &str) -> bool {
    match lang {
        Language::Python => source.contains(&format!("raise {name}")),
        Language::JavaScript => source.contains(&format!("new {name}(")),
        // A panic is what an out-of-range index or a failed `expect` does: pinned only
        // where the code panics on purpose.
        Language::Rust => source.contains("panic!(") || source.contains("assert!("),
        Language::Go => source.contains("panic("),
        _ => false,
    }
}

/// The test file: every pinned call of each function, in one test per function.
pub fn test_file(layout: &Layout, pinned: &[Pinned]) -> String {
    let by_function: Vec<(&str, Vec<&Pinned>)> = layout
        .functions
        .iter()
        .map(|f| {
            let calls: Vec<&Pinned> = pinned.iter().filter(|p| &p.function == f).collect();
            (f.as_str(), calls)
        })
        .filter(|(_, calls)| !calls.is_empty())
        .collect();
    match layout.lang {
        Language::Python => python_tests(layout, &by_function),
        Language::JavaScript => javascript_tests(layout, &by_function),
        Language::Go => go_tests(layout, &by_function),
        _ => rust_tests(layout, &by_function),
    }
}

fn names_of(by_function: &[(&str, Vec<&Pinned>)]) -> String {
    let names: Vec<String> = by_function.iter().map(|(f, _)| format!("`{f}`")).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn python_tests(layout: &Layout, by_function: &[(&str, Vec<&Pinned>)]) -> String {
    let module = super::verify::python_module(&layout.source_rel).unwrap_or_default();
    let up = relative(dir_of(&layout.test_rel), "");
    let up = up.trim_end_matches('/');
    let mut imports: Vec<String> = by_function.iter().map(|(f, _)| (*f).to_owned()).collect();
    for (_, calls) in by_function {
        for p in calls {
            if let Outcome::Raised { name, import: true } = &p.outcome
                && !imports.contains(name)
            {
                imports.push(name.clone());
            }
        }
    }
    let stem = module.rsplit('.').next().unwrap_or("code");
    let class: String = stem
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    let mut out = format!(
        "\"\"\"Tests of {} ({}): each check pins what the code returns today.\"\"\"\n\nimport os\nimport sys\nimport unittest\n\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), {}))\n\nfrom {module} import {}  # noqa: E402\n\n\nclass {class}Test(unittest.TestCase):\n",
        names_of(by_function),
        layout.source_rel,
        quoted(if up.is_empty() { "." } else { up }),
        imports.join(", "),
    );
    for (i, (f, calls)) in by_function.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("    def test_{f}(self):\n"));
        for p in calls {
            match &p.outcome {
                Outcome::Returned(lit) => {
                    out.push_str(&format!("        self.assertEqual({}, {lit})\n", p.call));
                }
                Outcome::Raised { name, .. } => out.push_str(&format!(
                    "        with self.assertRaises({name}):\n            {}\n",
                    p.call
                )),
            }
        }
    }
    out.push_str("\n\nif __name__ == \"__main__\":\n    unittest.main()\n");
    out
}

fn javascript_tests(layout: &Layout, by_function: &[(&str, Vec<&Pinned>)]) -> String {
    let names: Vec<&str> = by_function.iter().map(|(f, _)| *f).collect();
    let from = quoted(&relative(dir_of(&layout.test_rel), &layout.source_rel));
    let head = if layout.esm {
        format!(
            "import test from 'node:test';\nimport assert from 'node:assert';\nimport {{ {} }} from {from};\n",
            names.join(", ")
        )
    } else {
        format!(
            "'use strict';\n\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst {{ {} }} = require({from});\n",
            names.join(", ")
        )
    };
    let mut out = format!(
        "// Tests of {} ({}): each check pins what the code returns today.\n{head}",
        names_of(by_function),
        layout.source_rel
    );
    for (f, calls) in by_function {
        out.push_str(&format!("\ntest({}, () => {{\n", quoted(f)));
        for p in calls {
            match &p.outcome {
                Outcome::Returned(lit) => {
                    out.push_str(&format!("  assert.deepStrictEqual({}, {lit});\n", p.call))
                }
                Outcome::Raised { name, .. } => out.push_str(&format!(
                    "  assert.throws(() => {}, {{ name: {} }});\n",
                    p.call,
                    quoted(name)
                )),
            }
        }
        out.push_str("});\n");
    }
    out
}

/// The package line, the imports and the two helpers of a Go test or probe file.
fn go_head(layout: &Layout, what: &str) -> String {
    format!(
        "package {}\n\n// Agentls {what} {} ({}): each check pins what the code returns today, rendered with %#v.\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\n// showResult renders what a call returned: each value with %#v, an error by its message.\nfunc showResult(values ...interface{{}}) string {{\n\ts := \"\"\n\tfor i, v := range values {{\n\t\tif i > 0 {{\n\t\t\ts += \", \"\n\t\t}}\n\t\tif e, ok := v.(error); ok && e != nil {{\n\t\t\ts += fmt.Sprintf(\"error(%q)\", e.Error())\n\t\t\tcontinue\n\t\t}}\n\t\ts += fmt.Sprintf(\"%#v\", v)\n\t}}\n\treturn s\n}}\n\n// catchResult is f's rendering, or \"panic\" when it panics.\nfunc catchResult(f func() string) (s string) {{\n\tdefer func() {{\n\t\tif r := recover(); r != nil {{\n\t\t\ts = \"panic\"\n\t\t}}\n\t}}()\n\treturn f()\n}}\n\n",
        layout.unit,
        layout.functions.join(", "),
        layout.source_rel,
    )
}

fn go_tests(layout: &Layout, by_function: &[(&str, Vec<&Pinned>)]) -> String {
    let mut out = go_head(layout, "tests of");
    out.push_str(
        "func expectResult(t *testing.T, call string, f func() string, want string) {\n\tt.Helper()\n\tif got := catchResult(f); got != want {\n\t\tt.Errorf(\"%s = %s, want %s\", call, got, want)\n\t}\n}\n",
    );
    for (f, calls) in by_function {
        let mut name = (*f).to_owned();
        if let Some(c) = name.get_mut(..1) {
            c.make_ascii_uppercase();
        }
        out.push_str(&format!("\nfunc Test{name}(t *testing.T) {{\n"));
        for p in calls {
            let want = match &p.outcome {
                Outcome::Returned(r) => r.as_str(),
                Outcome::Raised { .. } => "panic",
            };
            out.push_str(&format!(
                "\texpectResult(t, {}, func() string {{ return showResult({}) }}, {})\n",
                quoted(&p.call),
                p.call,
                quoted(want)
            ));
        }
        out.push_str("}\n");
    }
    out
}

/// The head of a Rust integration test or probe: the crate's items and the helper.
fn rust_head(layout: &Layout, what: &str) -> String {
    format!(
        "//! Agentls {what} {} ({}): each check pins what the code returns today,\n//! rendered with `{{:?}}`.\n\n#![allow(unused_imports, clippy::all)]\n\nuse {}::*;\n\n/// What `f` returns, rendered with `{{:?}}`; \"panic\" when it panics.\nfn outcome<T: std::fmt::Debug>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> String {{\n    std::panic::catch_unwind(f).map_or_else(|_| \"panic\".to_owned(), |v| format!(\"{{v:?}}\"))\n}}\n\n",
        layout.functions.join(", "),
        layout.source_rel,
        layout.unit,
    )
}

fn rust_tests(layout: &Layout, by_function: &[(&str, Vec<&Pinned>)]) -> String {
    let mut out = rust_head(layout, "tests of");
    for (i, (f, calls)) in by_function.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("#[test]\nfn {f}_as_it_is() {{\n"));
        for p in calls {
            let want = match &p.outcome {
                Outcome::Returned(r) => r.as_str(),
                Outcome::Raised { .. } => "panic",
            };
            out.push_str(&format!(
                "    assert_eq!(outcome(|| {}), {}, {});\n",
                p.call,
                quoted(want),
                quoted(&p.call)
            ));
        }
        out.push_str("}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(lang: Language, test_rel: &str, source_rel: &str, unit: &str) -> Layout {
        Layout {
            lang,
            test_rel: test_rel.into(),
            source_rel: source_rel.into(),
            functions: vec!["f".into()],
            unit: unit.into(),
            esm: false,
        }
    }

    #[test]
    fn paths_are_relative_to_the_test_directory() {
        assert_eq!(relative("test", "duration.js"), "../duration.js");
        assert_eq!(relative("", "src/a.js"), "./src/a.js");
        assert_eq!(relative("a/b", "a/c.js"), "../c.js");
        assert_eq!(relative("tests", ""), "..");
    }

    #[test]
    fn compiler_errors_name_the_probe_lines() {
        let go = "# example.com/luhn [example.com/luhn.test]\n./luhn_test.go:31:60: cannot use 7 (untyped int constant) as string value\n./luhn_test.go:33:12: undefined: x\nFAIL\n";
        assert_eq!(rejected_lines(go, "luhn_test.go"), vec![31, 33]);
        let rust = "error[E0308]: mismatched types\n  --> tests/calendar.rs:20:47\n   |\n20 |     println!(...)\n";
        assert_eq!(rejected_lines(rust, "tests/calendar.rs"), vec![20]);
        assert!(rejected_lines("src/other_calendar.rs:3:1", "tests/calendar.rs").is_empty());
    }

    #[test]
    fn outcomes_are_read_by_index() {
        let out = "noise\nAGENTLS-PROBE 1 {\"ok\": \"'a-b'\"}\nAGENTLS-PROBE 0 {\"raised\": \"ValueError\", \"builtin\": true}\nAGENTLS-PROBE 2 {\"skip\": \"no literal\"}\n";
        assert_eq!(
            outcomes(Language::Python, out, 3),
            vec![
                Some(Outcome::Raised {
                    name: "ValueError".into(),
                    import: false
                }),
                Some(Outcome::Returned("'a-b'".into())),
                None
            ]
        );
        let go = "AGENTLS-PROBE 0 7, <nil>\nAGENTLS-PROBE 1 panic\n";
        assert_eq!(
            outcomes(Language::Go, go, 2),
            vec![
                Some(Outcome::Returned("7, <nil>".into())),
                Some(Outcome::Raised {
                    name: "panic".into(),
                    import: false
                })
            ]
        );
    }

    #[test]
    fn a_python_test_file_imports_what_it_raises() {
        let l = layout(Language::Python, "tests/test_slug.py", "slug.py", "");
        let pinned = vec![
            Pinned {
                function: "f".into(),
                call: "f(1)".into(),
                outcome: Outcome::Returned("2".into()),
            },
            Pinned {
                function: "f".into(),
                call: "f(-1)".into(),
                outcome: Outcome::Raised {
                    name: "SlugError".into(),
                    import: true,
                },
            },
        ];
        let text = test_file(&l, &pinned);
        assert!(text.contains("from slug import f, SlugError"), "{text}");
        assert!(text.contains("self.assertEqual(f(1), 2)"), "{text}");
        assert!(text.contains("with self.assertRaises(SlugError):\n            f(-1)"));
        assert!(text.contains("\"..\""), "{text}");
        assert_eq!(
            agentls_index::syntax_errors(Language::Python, &text).len(),
            0,
            "{text}"
        );
    }

    #[test]
    fn go_and_rust_files_parse() {
        let pinned = vec![Pinned {
            function: "f".into(),
            call: "f(\"x\")".into(),
            outcome: Outcome::Returned("7, <nil>".into()),
        }];
        let go = test_file(
            &layout(Language::Go, "luhn_test.go", "luhn.go", "luhn"),
            &pinned,
        );
        assert_eq!(
            agentls_index::syntax_errors(Language::Go, &go).len(),
            0,
            "{go}"
        );
        assert!(go.contains("func TestF(t *testing.T)"), "{go}");
        let rs = test_file(
            &layout(Language::Rust, "tests/cal.rs", "src/cal.rs", "cal"),
            &pinned,
        );
        assert_eq!(
            agentls_index::syntax_errors(Language::Rust, &rs).len(),
            0,
            "{rs}"
        );
        assert!(
            rs.contains("assert_eq!(outcome(|| f(\"x\")), \"7, <nil>\""),
            "{rs}"
        );
        let l = layout(Language::Rust, "tests/cal.rs", "src/cal.rs", "cal");
        let calls = vec![("f".to_owned(), "f(1)".to_owned())];
        let p = probe(&l, &calls).unwrap();
        let file = p.file.unwrap();
        assert_eq!(
            file.lines().nth(p.first_line - 1).map(str::trim),
            Some("println!(\"AGENTLS-PROBE 0 {}\", outcome(|| f(1)));")
        );
    }
}

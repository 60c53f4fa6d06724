//! Asking the model in its own format: a plain chat turn with no tools, the file and
//! the tests that judge it shown, and the answer one fenced code block (the whole new
//! function, or the whole file when that is the scope), spliced back by the target's
//! range. Code inside JSON arguments is what small models write worst.

use std::path::Path;

use agentls_index::Language;
use agentls_model::{ChatRequest, Message, Sampling};

use super::localise::{Scope, Target};

/// Most characters of test files shown with the task.
const TESTS_CHARS: usize = 4_000;

/// Most tokens a candidate may take.
pub const MAX_TOKENS: u32 = 1_024;

/// The fence name of a language, as models write it.
pub fn fence(lang: Language) -> &'static str {
    match lang {
        Language::Rust => "rust",
        Language::Python => "python",
        Language::JavaScript => "javascript",
        Language::TypeScript | Language::Tsx => "typescript",
        Language::Go => "go",
        Language::C => "c",
        Language::Cpp => "cpp",
        Language::Java => "java",
    }
}

/// The request for one candidate of `target`: the task, the file, the tests, and what
/// to write. `tests` are `(shown path, text)` of the workspace's test files.
pub fn request(
    root: &Path,
    task: &str,
    target: &Target,
    tests: &[(String, String)],
) -> ChatRequest {
    let lang = fence(target.language);
    let shown = target.shown(root);
    let mut user = format!(
        "Task: {task}\n\nFile `{shown}`:\n```{lang}\n{}\n```\n",
        target.text.trim_end()
    );
    let mut room = TESTS_CHARS;
    for (path, text) in tests {
        if text.len() > room {
            continue;
        }
        room -= text.len();
        user.push_str(&format!(
            "\nTests in `{path}`:\n```{}\n{}\n```\n",
            fence_of(path),
            text.trim_end()
        ));
    }
    let ask = match &target.scope {
        Scope::Function { name, stub, .. } => format!(
            "\nWrite the complete new version of the function `{name}` from `{shown}` so that the task is done{}. Keep its signature. Answer with that one function only, in one ```{lang} code block.",
            if *stub {
                " (it is a stub: implement it)"
            } else {
                ""
            }
        ),
        Scope::File => format!(
            "\nWrite the complete new content of `{shown}` so that the task is done and the tests pass. Answer with the whole file only, in one ```{lang} code block."
        ),
    };
    user.push_str(&ask);
    ChatRequest {
        system: Some(format!(
            "You are an expert {lang} programmer. You answer with code only, in one fenced code block, with no explanation."
        )),
        messages: vec![Message::user(user)],
        max_tokens: Some(MAX_TOKENS),
        code_block: Some(lang.to_owned()),
        ..ChatRequest::default()
    }
}

/// `req` for the sample with `seed`: greedy for the first, at `temperature` after.
pub fn sampled(req: &ChatRequest, i: usize, temperature: f32, seed: u64) -> ChatRequest {
    let mut req = req.clone();
    req.sampling = Sampling {
        temperature: Some(if i == 0 { 0.0 } else { temperature }),
        top_p: Some(if i == 0 { 1.0 } else { 0.95 }),
        seed: Some(seed.wrapping_add(i as u64)),
    };
    req
}

/// `req` followed by the answer and what failed: the one repair round.
pub fn repair(req: &ChatRequest, answer: &str, failure: &str, target: &Target) -> ChatRequest {
    let mut req = req.clone();
    let what = match &target.scope {
        Scope::Function { name, .. } => format!("the function `{name}`"),
        Scope::File => "the whole file".to_owned(),
    };
    req.messages.push(Message::assistant(answer.to_owned()));
    req.messages.push(Message::user(format!(
        "With that code the tests fail:\n```\n{failure}\n```\nFix it. Answer with {what} only, in one ```{} code block.",
        fence(target.language)
    )));
    req
}

fn fence_of(path: &str) -> &'static str {
    Language::from_path(Path::new(path)).map_or("", fence)
}

/// The code of the first fenced block of `answer` (an unclosed one runs to the end);
/// the whole answer when it has no fence.
pub fn code_of(answer: &str) -> String {
    let Some(open) = answer.find("```") else {
        return answer.trim().to_owned();
    };
    let after = &answer[open + 3..];
    // The info string (`rust`) runs to the end of the line.
    let body = match after.find('\n') {
        Some(nl) => &after[nl + 1..],
        None => "",
    };
    let code = match body.find("```") {
        Some(close) => &body[..close],
        None => body,
    };
    code.trim_matches('\n').trim_end().to_owned()
}

/// The file's new text with `code` in the target's place; `None` when the code is
/// empty or leaves the file as it was.
pub fn splice(target: &Target, code: &str) -> Option<String> {
    let code = code.trim_matches('\n').trim_end();
    if code.trim().is_empty() {
        return None;
    }
    let new = match &target.scope {
        Scope::File => format!("{code}\n"),
        Scope::Function { range, .. } => {
            let text = &target.text;
            let code = function_only(target.language, code, &text[..range.start]);
            let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
            let indent = &text[line_start..range.start];
            let code = reindent(&code, indent);
            format!(
                "{}{}{}",
                &text[..range.start],
                code.trim_start(),
                &text[range.end..]
            )
        }
    };
    (new != target.text).then_some(new)
}

/// The function of a candidate without what small models put around it: a Go
/// `package` clause and imports, and doc comment lines the file already has just above
/// the definition.
fn function_only(lang: Language, code: &str, before: &str) -> String {
    let mut lines: Vec<&str> = code.lines().collect();
    if lang == Language::Go
        && let Some(first) = lines.iter().position(|l| l.starts_with("func "))
        && lines[..first]
            .iter()
            .any(|l| l.starts_with("package ") || l.starts_with("import"))
    {
        lines.drain(..first);
    }
    // Comment lines repeated from just above the definition.
    let above: Vec<&str> = before
        .lines()
        .rev()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    while let Some(first) = lines.first() {
        let t = first.trim();
        let comment =
            t.starts_with("//") || t.starts_with('#') || t.starts_with("/*") || t.starts_with('*');
        if comment && above.contains(&t) {
            lines.remove(0);
        } else {
            break;
        }
    }
    lines.join("\n")
}

/// `code` indented by `indent` where its own first line has less (a method written at
/// column 0 for a class body).
fn reindent(code: &str, indent: &str) -> String {
    let own = code.len() - code.trim_start_matches([' ', '\t']).len();
    if indent.trim().is_empty() && indent.len() > own {
        let add = &indent[own..];
        code.lines()
            .enumerate()
            .map(|(i, l)| {
                if i == 0 || l.trim().is_empty() {
                    l.to_owned()
                } else {
                    format!("{add}{l}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        code.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str, name: &str) -> Target {
        let start = text
            .find(&format!("def {name}"))
            .or_else(|| text.find(&format!("fn {name}")))
            .unwrap();
        let end = text[start..].find("\n\n").map_or(text.len(), |e| start + e);
        Target {
            path: "/w/a.py".into(),
            language: if text.contains("fn ") {
                Language::Rust
            } else {
                Language::Python
            },
            text: text.to_owned(),
            scope: Scope::Function {
                name: name.into(),
                range: start..end,
                stub: false,
            },
            why: String::new(),
        }
    }

    #[test]
    fn the_first_block_is_the_code() {
        assert_eq!(
            code_of("Here:\n```python\ndef f():\n    return 1\n```\nmore ```x```"),
            "def f():\n    return 1"
        );
        assert_eq!(code_of("```rust\nfn f() {}"), "fn f() {}");
        assert_eq!(code_of("  x = 1 \n"), "x = 1");
    }

    #[test]
    fn a_function_is_spliced_by_its_range() {
        let text = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
        let t = target(text, "add");
        let new = splice(&t, "def add(a, b):\n    return a + b").unwrap();
        assert_eq!(
            new,
            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
        );
        assert_eq!(
            splice(&t, "def add(a, b):\n    return a - b"),
            None,
            "no change"
        );
        assert_eq!(splice(&t, "  \n"), None, "empty");
    }

    #[test]
    fn a_method_written_at_column_0_is_indented() {
        let text = "class A:\n    def f(self):\n        pass\n\n\nx = 1\n";
        let t = target(text, "f");
        let new = splice(&t, "def f(self):\n    return 2").unwrap();
        assert_eq!(
            new,
            "class A:\n    def f(self):\n        return 2\n\n\nx = 1\n"
        );
    }

    #[test]
    fn repeated_doc_comments_and_go_package_lines_are_dropped() {
        let before = "package v\n\n// Index finds v.\n";
        assert_eq!(
            function_only(
                Language::Go,
                "package v\n\nimport \"x\"\n\n// Index finds v.\nfunc Index() {}",
                before
            ),
            "func Index() {}"
        );
    }
}

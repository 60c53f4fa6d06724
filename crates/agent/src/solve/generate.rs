//! Asking the model in its own format: a plain chat turn with no tools, the file and
//! the tests that judge it shown, and the answer one fenced code block (the whole new
//! function, or the whole file when that is the scope), spliced back by the target's
//! range. Code inside JSON arguments is what small models write worst.

use std::path::Path;

use agentls_index::{Language, SymbolKind};
use agentls_model::{ChatRequest, FimRequest, Message, Sampling, StopRules};

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
        answer_start: header_start(target),
        ..ChatRequest::default()
    }
}

/// How the answer to a function target starts: its first line as the file has it
/// (indentation kept) to the end of the function's name, so the model still writes
/// the parameters and all after them (a task may change the signature). Asked for
/// one function, the small models often write the whole file, every token of it
/// decoded, before and after the function; begun at the function's header, the
/// answer is the function.
fn header_start(target: &Target) -> Option<String> {
    let Scope::Function { range, name, .. } = &target.scope else {
        return None;
    };
    let text = &target.text;
    let line_start = text.get(..range.start)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = range.start + text.get(range.start..)?.find('\n')?;
    let line = text.get(line_start..line_end)?;
    // The name as a whole word, in the header's first line.
    let at = line.match_indices(name.as_str()).find_map(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(super::mention::is_ident_char);
        (!word(before) && !word(after)).then_some(i + name.len())
    })?;
    Some(line[..at].to_owned())
}

/// A stub's body as a fill-in-the-middle request: the file before the body (with the
/// body's indentation) as the prefix, the rest of the file from the body's end as the
/// suffix; the middle written is the new body. `None` for a target that is not one
/// function, or whose body the header rules below cannot find.
pub fn fim_request(target: &Target, shown: &str) -> Option<(FimRequest, StopRules)> {
    let (prefix, suffix) = fim_split(target)?;
    let rules = StopRules::new(&prefix, &suffix, FIM_MAX_LINES);
    let req = FimRequest {
        path: shown.to_owned(),
        language: Some(fence(target.language).to_owned()),
        prefix,
        suffix,
        context: Vec::new(),
        max_tokens: MAX_TOKENS,
    };
    Some((req, rules))
}

/// Most lines of a body written as the middle.
const FIM_MAX_LINES: usize = 60;

/// The file's text split around the body of the target function: `(prefix, suffix)`,
/// the prefix ending with the body's indentation.
pub fn fim_split(target: &Target) -> Option<(String, String)> {
    let Scope::Function { range, .. } = &target.scope else {
        return None;
    };
    let text = &target.text;
    let def = text.get(range.clone())?;
    let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let base: String = text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    if target.language == Language::Python {
        // The header ends at the first line ending with `:`; a docstring stays.
        let mut at = 0;
        for line in def.split_inclusive('\n') {
            at += line.len();
            if line.trim_end().ends_with(':') {
                break;
            }
        }
        let rest = &def[at..];
        let first = rest.lines().find(|l| !l.trim().is_empty())?;
        let indent: String = first
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let t = first.trim_start();
        if let Some(q) = ["\"\"\"", "'''"].into_iter().find(|q| t.starts_with(q)) {
            // Past the docstring's closing line.
            let open = at + rest.find(q)?;
            let close = open + 3 + def[open + 3..].find(q)? + 3;
            at = close + def[close..].find('\n').map_or(def.len() - close, |i| i + 1);
        }
        let prefix = format!("{}{indent}", &text[..range.start + at]);
        return Some((prefix, text[range.end..].to_owned()));
    }
    // Brace languages: the body opens at the first `{` that ends its line (a header's
    // own braces, `function f({a}) {`, do not) and closes at the definition's last `}`.
    let open = def.match_indices('{').map(|(i, _)| i).find(|&i| {
        def[i + 1..]
            .split('\n')
            .next()
            .is_some_and(|r| r.trim().is_empty())
    })?;
    let close = def.rfind('}').filter(|&c| c > open)?;
    let step = if target.language == Language::Go {
        "\t"
    } else {
        "    "
    };
    let prefix = format!("{}\n{base}{step}", &text[..range.start + open + 1]);
    let suffix = format!("\n{base}{}", &text[range.start + close..]);
    Some((prefix, suffix))
}

/// The file's text with `middle` written between `prefix` and `suffix`, as
/// [`fim_split`] cut it; `None` when the middle is empty or changes nothing.
pub fn fim_splice(target: &Target, prefix: &str, middle: &str, suffix: &str) -> Option<String> {
    let middle = middle.trim_matches('\n').trim_end();
    if middle.trim().is_empty() {
        return None;
    }
    let new = format!("{prefix}{}{suffix}", middle.trim_start_matches([' ', '\t']));
    (!same_code(target.language, &new, &target.text)).then_some(new)
}

/// Whether `a` and `b` differ only where no behaviour does: in Python, blank lines,
/// trailing spaces and the annotations of `def` headers (a small model asked to fix
/// a function may only add them: three such answers agreed and were landed as
/// py-paginate's fix). Other languages' texts must be equal.
pub fn same_code(lang: Language, a: &str, b: &str) -> bool {
    a == b || (lang == Language::Python && python_shape(a) == python_shape(b))
}

/// Python `text`'s lines, indentation kept, blank lines and trailing spaces dropped,
/// each `def` header on one line cut to its name and parameters' names, stars and
/// defaults ([`python_parameters`]).
fn python_shape(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut header: Option<(String, String)> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let t = line.trim();
        match header.as_mut() {
            Some((_, h)) => {
                h.push(' ');
                h.push_str(t);
            }
            None if t.starts_with("def ") || t.starts_with("async def ") => {
                let indent = &line[..line.len() - line.trim_start().len()];
                header = Some((indent.to_owned(), t.to_owned()));
            }
            None => {
                out.push(line.trim_end().to_owned());
                continue;
            }
        }
        if t.ends_with(':')
            && let Some((indent, h)) = header.take()
        {
            let h = h.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push(format!("{indent}{}", python_parameters(&h).unwrap_or(h)));
        }
    }
    out.extend(header.map(|(indent, h)| format!("{indent}{h}")));
    out
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
/// empty or leaves the file as it was ([`same_code`]).
pub fn splice(target: &Target, code: &str) -> Option<String> {
    let code = code.trim_matches('\n').trim_end();
    if code.trim().is_empty() {
        return None;
    }
    let new = match &target.scope {
        Scope::File => format!("{code}\n"),
        Scope::Function { range, name, .. } => {
            let text = &target.text;
            let code = the_function(target.language, code, name);
            let code = function_only(target.language, &code, &text[..range.start]);
            let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
            let before = &text[line_start..range.start];
            // A function a declaration holds (`const line = (row) => …`) starts at
            // its name, after `const `: an answer that writes the declaration whole
            // replaces it from the line's start, or `const` would be there twice.
            let lead = before.trim_start();
            let whole = !lead.is_empty() && code.trim_start().starts_with(lead);
            let indent = &before[..before.len() - lead.len()];
            let (head, indent) = if whole {
                (&text[..range.start - lead.len()], indent)
            } else {
                (&text[..range.start], before)
            };
            let code = reindent(&code, indent);
            format!("{head}{}{}", code.trim_start(), &text[range.end..])
        }
    };
    (!same_code(target.language, &new, &target.text)).then_some(new)
}

/// The definition of `name` in `code` when `code` holds more than it (small models
/// asked for one function often answer with the whole file: spliced into the
/// function's range as it is, the file's head would be there twice), with the
/// attribute and comment lines just above it, dedented; `code` itself when it defines
/// nothing else, or does not define `name` (the checks judge it then).
pub fn the_function(lang: Language, code: &str, name: &str) -> String {
    let symbols = symbols_of(lang, code);
    let defs: Vec<&agentls_index::Symbol> = symbols
        .iter()
        .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
        .filter(|s| &*s.name == name)
        .collect();
    // The last definition: a model that repeats the file repeats the stub first.
    let Some(def) = defs.last() else {
        return code.to_owned();
    };
    let (Some(start), Some(end)) = (
        super::localise::byte_offset(code, def.span.start),
        super::localise::byte_offset(code, def.span.end),
    ) else {
        return code.to_owned();
    };
    let mut line_start = code[..start].rfind('\n').map_or(0, |i| i + 1);
    let only_it = code[..line_start].trim().is_empty() && code[end..].trim().is_empty();
    if only_it && defs.len() == 1 {
        return code.to_owned();
    }
    // Attributes, decorators and comments just above the definition go with it.
    while line_start > 0 {
        let prev_start = code[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
        let t = code[prev_start..line_start - 1].trim();
        let above = t.starts_with("#[")
            || t.starts_with('@')
            || t.starts_with("//")
            || t.starts_with("/*")
            || t.starts_with('*')
            || (lang == Language::Python && t.starts_with('#'));
        if !above || t.is_empty() {
            break;
        }
        line_start = prev_start;
    }
    dedent(&code[line_start..end])
}

/// The symbols the index finds in `code`, parsed as a file of `lang`.
fn symbols_of(lang: Language, code: &str) -> Vec<agentls_index::Symbol> {
    let mut index = agentls_index::Index::default();
    let path = Path::new(match lang {
        Language::Rust => "/candidate.rs",
        Language::Python => "/candidate.py",
        Language::JavaScript => "/candidate.js",
        Language::TypeScript => "/candidate.ts",
        Language::Tsx => "/candidate.tsx",
        Language::Go => "/candidate.go",
        Language::C => "/candidate.c",
        Language::Cpp => "/candidate.cpp",
        Language::Java => "/candidate.java",
    });
    index.update_file(path, code);
    index.file_symbols(path)
}

/// Whether an answer's `code`, still being written, already holds the whole new
/// function `name` (unlike `original`, its text before): the definition is followed
/// by more code (the next top-level line, a second function, a usage example). Small
/// models asked for one function often go on writing examples and tests until their
/// budget runs out; what follows the function is never used ([`the_function`] takes
/// the function alone), so its answer can end there.
pub fn function_done(lang: Language, code: &str, name: &str, original: &str) -> bool {
    // Where a function's end is less plain, the answer runs to its own end.
    if !matches!(
        lang,
        Language::Rust
            | Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Go
    ) {
        return false;
    }
    let symbols = symbols_of(lang, code);
    let Some(def) = symbols
        .iter()
        .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
        .rfind(|s| &*s.name == name)
    else {
        return false;
    };
    let (Some(start), Some(end)) = (
        super::localise::byte_offset(code, def.span.start),
        super::localise::byte_offset(code, def.span.end),
    ) else {
        return false;
    };
    // A body begun is not a declaration without one (Go's grammar allows those, and
    // the parse of `func f() int {` and a line of body, its brace unclosed, is one):
    // where bodies are braced, the definition must end with its closing brace.
    if lang != Language::Python && !code[start..end].trim_end().ends_with('}') {
        return false;
    }
    // A whole line after it: the definition cannot grow any more.
    let after = &code[end..];
    let followed = after
        .split_inclusive('\n')
        .any(|l| l.ends_with('\n') && !l.trim().is_empty());
    let squeeze = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    followed && squeeze(&code[start..end]) != squeeze(original)
}

/// The signature of the function `name` in the file `text`: its name through its
/// parameters and result, whitespace collapsed (in Python, the parameters' names,
/// stars and defaults only: annotations change nothing a caller passes, and a small
/// model adds them to a function it fixes); `None` when `text` does not define it.
/// Two texts whose signatures differ change what callers must pass.
pub fn signature(lang: Language, text: &str, name: &str) -> Option<String> {
    let def = the_function(lang, text, name);
    let at = def.match_indices(name).map(|(i, _)| i).find(|&i| {
        let before = def[..i].chars().next_back();
        let after = def[i + name.len()..].chars().next();
        before.is_some_and(|c| c.is_whitespace() || c == '*')
            && matches!(after, Some('(' | '<' | '['))
    })?;
    let rest = &def[at..];
    let end = if lang == Language::Python {
        rest.lines()
            .scan(0, |seen, l| {
                *seen += l.len() + 1;
                Some((*seen, l))
            })
            .find(|(_, l)| l.trim_end().ends_with(':'))
            .map(|(seen, _)| seen.min(rest.len()))?
    } else {
        rest.find('{')?
    };
    let sig = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
    Some(if lang == Language::Python {
        python_parameters(&sig).unwrap_or(sig)
    } else {
        sig
    })
}

/// `f(a: int, b: list[int] = [], *rest) -> int:` as `f(a, b=[], *rest)`; `None` when
/// the parentheses do not close.
fn python_parameters(sig: &str) -> Option<String> {
    let open = sig.find('(')?;
    let inner = &sig[open + 1..];
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c, _) in outside_quotes(inner).filter(|t| t.2 == 0) {
        match c {
            ')' => {
                parts.push(&inner[start..i]);
                let params: Vec<String> = parts
                    .iter()
                    .map(|p| python_parameter(p))
                    .filter(|p| !p.is_empty())
                    .collect();
                return Some(format!("{}({})", &sig[..open], params.join(", ")));
            }
            ',' => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// One parameter, `b: list[int] = []`, as `b=[]`.
fn python_parameter(p: &str) -> String {
    // A default begins at the first `=` outside brackets and quotes.
    let eq = outside_quotes(p).find(|&(_, c, depth)| c == '=' && depth == 0);
    let (head, default) = match eq {
        Some((at, _, _)) => (&p[..at], Some(p[at + 1..].trim())),
        None => (p, None),
    };
    let name = head.split(':').next().unwrap_or(head).trim();
    match default {
        Some(d) => format!("{name}={d}"),
        None => name.to_owned(),
    }
}

/// The chars of `text` outside its quoted strings, each with its byte offset and the
/// depth of brackets open before it (a closing bracket's own still counts).
fn outside_quotes(text: &str) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    let (mut depth, mut quote) = (0usize, None::<char>);
    text.char_indices()
        .filter_map(move |(i, c)| match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                None
            }
            (Some(_), _) => None,
            (None, '\'' | '"') => {
                quote = Some(c);
                None
            }
            (None, _) => {
                let at = depth;
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                Some((i, c, at))
            }
        })
}

/// `code` with the indentation of its first line taken off every line that has it.
fn dedent(code: &str) -> String {
    let own = &code[..code.len() - code.trim_start_matches([' ', '\t']).len()];
    if own.is_empty() {
        return code.to_owned();
    }
    code.lines()
        .map(|l| l.strip_prefix(own).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
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
    fn a_function_a_declaration_holds_is_spliced_once() {
        let text = "function table(rows) {\n  const line = (row) => row.join(' ');\n  return rows.map(line);\n}\n";
        let start = text.find("line =").unwrap();
        let end = text.find(";\n  return").unwrap();
        let t = Target {
            path: "/w/a.js".into(),
            language: Language::JavaScript,
            text: text.to_owned(),
            scope: Scope::Function {
                name: "line".into(),
                range: start..end,
                stub: false,
            },
            why: String::new(),
        };
        let want = text.replace("join(' ')", "join(' | ')");
        // The declaration whole, as the answer begun at the line's start writes it.
        assert_eq!(
            splice(&t, "const line = (row) => row.join(' | ')").as_deref(),
            Some(want.as_str())
        );
        // The function alone, from its name.
        assert_eq!(
            splice(&t, "line = (row) => row.join(' | ')").as_deref(),
            Some(want.as_str())
        );
    }

    #[test]
    fn the_answer_to_a_function_target_starts_at_its_name() {
        let text = "class C:\n    def get(self, k):\n        return k\n\n    def put(self):\n        pass\n";
        let t = target(text, "get");
        let req = request(Path::new("/w"), "fix get", &t, &[]);
        assert_eq!(req.answer_start.as_deref(), Some("    def get"));
        // A Go method: the receiver before the name, the name as a whole word.
        let go = "func (g *Getter) Get(key string) int {\n\treturn 0\n}\n";
        let t = Target {
            text: go.to_owned(),
            scope: Scope::Function {
                name: "Get".into(),
                range: 0..go.len(),
                stub: false,
            },
            ..t
        };
        let req = request(Path::new("/w"), "fix Get", &t, &[]);
        assert_eq!(req.answer_start.as_deref(), Some("func (g *Getter) Get"));
        let whole = Target {
            scope: Scope::File,
            ..t
        };
        assert_eq!(
            request(Path::new("/w"), "fix", &whole, &[]).answer_start,
            None
        );
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
    fn a_stub_body_is_the_middle_of_its_file() {
        let text = "use crate::Shape;\n\n/// The perimeter.\npub fn perimeter(s: &Shape) -> f64 {\n    todo!()\n}\n\npub fn z() {}\n";
        let t = target(text, "perimeter");
        let (prefix, suffix) = fim_split(&t).unwrap();
        assert!(prefix.ends_with("-> f64 {\n    "), "{prefix:?}");
        assert_eq!(suffix, "\n}\n\npub fn z() {}\n");
        let new = fim_splice(&t, &prefix, "4.0 * 1.0\n", &suffix).unwrap();
        assert_eq!(
            new,
            "use crate::Shape;\n\n/// The perimeter.\npub fn perimeter(s: &Shape) -> f64 {\n    4.0 * 1.0\n}\n\npub fn z() {}\n"
        );
        assert_eq!(fim_splice(&t, &prefix, "  \n", &suffix), None);
        let (req, _) = fim_request(&t, "src/util.rs").unwrap();
        assert_eq!((req.prefix, req.suffix), (prefix, suffix));
    }

    #[test]
    fn a_python_stub_keeps_its_docstring_out_of_the_middle() {
        let text = "def add(a, b):\n    \"\"\"Adds.\n    More.\n    \"\"\"\n    pass\n\n\ndef sub(a, b):\n    return a - b\n";
        let t = target(text, "add");
        let (prefix, suffix) = fim_split(&t).unwrap();
        assert!(prefix.ends_with("    \"\"\"\n    "), "{prefix:?}");
        assert!(suffix.starts_with("\n\n\ndef sub"), "{suffix:?}");
        let new = fim_splice(&t, &prefix, "return a + b", &suffix).unwrap();
        assert!(
            new.contains("    \"\"\"\n    return a + b\n\n\ndef sub"),
            "{new}"
        );
    }

    #[test]
    fn a_whole_file_answered_for_one_function_splices_only_that_function() {
        let text = "use crate::Shape;\n\npub fn square(x: f64) -> f64 {\n    x * x\n}\n\n/// The perimeter.\npub fn perimeter(s: &Shape) -> f64 {\n    todo!()\n}\n";
        let t = target(text, "perimeter");
        // The model's answer repeats the file's head around the function.
        let answer = "use crate::Shape;\n\npub fn square(x: f64) -> f64 {\n    x * x\n}\n\n/// The perimeter.\npub fn perimeter(s: &Shape) -> f64 {\n    match s {\n        Shape::Square(a) => 4.0 * a,\n    }\n}";
        let new = splice(&t, answer).unwrap();
        assert_eq!(new.matches("use crate::Shape;").count(), 1, "{new}");
        assert_eq!(new.matches("pub fn square").count(), 1, "{new}");
        assert_eq!(new.matches("/// The perimeter.").count(), 1, "{new}");
        assert!(new.contains("4.0 * a") && !new.contains("todo!()"), "{new}");
    }

    #[test]
    fn a_method_inside_a_repeated_class_is_taken_out_and_dedented() {
        let code = "class A:\n    @staticmethod\n    def f(x):\n        return 2\n\n    def g(self):\n        pass\n";
        assert_eq!(
            the_function(Language::Python, code, "f"),
            "@staticmethod\ndef f(x):\n    return 2"
        );
        // The function alone, or no such function: as it is.
        assert_eq!(
            the_function(Language::Python, "def f():\n    return 1", "f"),
            "def f():\n    return 1"
        );
        assert_eq!(the_function(Language::Python, "x = 1\n", "f"), "x = 1\n");
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

    #[test]
    fn an_answer_is_done_once_the_new_function_is_followed_by_more() {
        let stub = "def fizz(n):\n    \"\"\"Fizz.\"\"\"\n    raise NotImplementedError\n";
        let body =
            "def fizz(n):\n    \"\"\"Fizz.\"\"\"\n    return 'Fizz' if n % 3 == 0 else str(n)\n";
        let py = |code: &str| function_done(Language::Python, code, "fizz", stub);
        // Still being written: the body may grow.
        assert!(!py(body));
        assert!(!py(&format!("{body}\n")));
        assert!(!py(&format!("{body}\nprint(fi")));
        // The next top-level line is written whole: done.
        assert!(py(&format!("{body}\n\nprint(fizz(3))\n")));
        // The stub repeated first is not the answer: wait for the new one.
        assert!(!py(&format!("{stub}\n\nprint(fizz(3))\n")));
        let rs_old = "fn perimeter(s: &Shape) -> f64 {\n    todo!()\n}";
        let rs = |code: &str| function_done(Language::Rust, code, "perimeter", rs_old);
        let new = "fn perimeter(s: &Shape) -> f64 {\n    match s {\n        Shape::Square(x) => 4.0 * x,\n    }\n";
        assert!(!rs(new), "the closing brace is not written yet");
        assert!(!rs(&format!("{new}}}")));
        assert!(rs(&format!("{new}}}\n\nfn main() {{\n")));
        let js_old = "function sum(xs) {\n  return 0;\n}";
        let js = |code: &str| function_done(Language::JavaScript, code, "sum", js_old);
        let new = "function sum(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\n";
        assert!(!js(new));
        assert!(js(&format!("{new}\nconsole.log(sum([1, 2]));\n")));
        // Go: a body begun is not a declaration without one (which Go's grammar
        // allows), however many lines of it are written.
        let go_old = "func Index(sorted []string, v string) int {\n\treturn -1\n}";
        let go = |code: &str| function_done(Language::Go, code, "Index", go_old);
        let begun = "package versions\n\nfunc Index(sorted []string, v string) int {\n\tlo, hi := 0, len(sorted)\n\tfor lo < hi {\n";
        assert!(!go(begun));
        assert!(!go(&format!("{begun}\t\tmid := lo + (hi-lo)/2\n")));
        let whole = format!("{begun}\t\tlo++\n\t}}\n\treturn lo\n}}\n");
        assert!(!go(&whole));
        assert!(go(&format!("{whole}\nfunc Latest() {{\n")));
    }

    #[test]
    fn signatures_change_with_parameters_not_bodies() {
        let py = "def fmt_time(t):\n    return str(t)\n\n\ndef other():\n    pass\n";
        let py2 = "def fmt_time(t, seconds=False):\n    return str(t)\n";
        let py3 = "def fmt_time(t):\n    return repr(t)\n";
        let sig = |t: &str| signature(Language::Python, t, "fmt_time");
        assert_eq!(sig(py).as_deref(), Some("fmt_time(t)"));
        assert_ne!(sig(py), sig(py2));
        assert_eq!(sig(py), sig(py3));
        // Annotations change nothing a caller passes; names, defaults and stars do.
        let typed = "def fmt_time(t: float) -> str:\n    return str(t)\n";
        assert_eq!(sig(py), sig(typed));
        let many = |params: &str| {
            signature(
                Language::Python,
                &format!("def f({params}):\n    pass\n"),
                "f",
            )
        };
        assert_eq!(
            many("a, b: dict[str, int] = {\"x\": 1}, *rest, sep=', ', **kw").as_deref(),
            Some("f(a, b={\"x\": 1}, *rest, sep=', ', **kw)")
        );
        assert_eq!(many("a: int, b=2"), many("a, b: int = 2"));
        assert_ne!(many("a, b=2"), many("a, b=3"));
        assert_ne!(many("a, b"), many("a, c"));
        assert_ne!(many("a, b"), many("a, *, b"));
    }

    #[test]
    fn code_that_only_gains_annotations_or_blank_lines_is_the_same() {
        let py = "def page_count(total, per_page):\n    return max(1, total // per_page)\n\n\nasync def f(\n    a,\n    b=1,\n):\n    pass\n";
        let typed = "def page_count(total: int, per_page: int) -> int:\n    return max(1, total // per_page)\n\n\nasync def f(\n    a: str,\n    b: int = 1,\n) -> None:\n    pass\n";
        assert!(same_code(Language::Python, py, typed));
        // Indentation is code in Python.
        let loop_ = "def f(xs):\n    for x in xs:\n        return x\n";
        let out = "def f(xs):\n    for x in xs:\n        pass\n    return x\n";
        assert!(!same_code(Language::Python, loop_, out));
        let moved = "def f(xs):\n    for x in xs:\n        pass\n        return x\n";
        assert!(!same_code(Language::Python, out, moved));
        let fixed = typed.replace("total // per_page", "-(-total // per_page)");
        assert!(!same_code(Language::Python, py, &fixed));
        let renamed = py.replace("(total, per_page)", "(total, size)");
        assert!(!same_code(Language::Python, py, &renamed));
        // A candidate that only adds them is no change.
        let file = "def page_count(total, per_page):\n    return max(1, total // per_page)\n\n\ndef page(n):\n    return n\n";
        let t = target(file, "page_count");
        let typed = "def page_count(total: int, per_page: int) -> int:\n    return max(1, total // per_page)";
        assert_eq!(splice(&t, typed), None);
        let fixed = "def page_count(total, per_page):\n    return max(1, -(-total // per_page))";
        assert!(splice(&t, fixed).is_some());
        // Elsewhere the texts must be equal.
        let go = "func f() int {\n\treturn 1\n}\n";
        assert!(!same_code(
            Language::Go,
            go,
            "func f() int {\n    return 1\n}\n"
        ));
        assert!(same_code(Language::Go, go, go));
    }
}

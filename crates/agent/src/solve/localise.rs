//! Localising a task without the model: the functions (or the one short file) a
//! change most likely belongs in, each with why. From the task's words (file and
//! symbol names, `quoted` names first), the stub detector and the symbol index; a
//! repository with a single short source file is taken whole.

use std::path::{Path, PathBuf};

use agentls_index::{Language, Symbol, SymbolKind};
use agentls_text::ReadLimits;

/// A file the pipeline may write beyond this size is changed function by function,
/// never whole.
pub const WHOLE_FILE_CHARS: usize = 6_000;

/// What a candidate replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// One function: its whole definition, by byte range in the file's text.
    Function {
        /// Its name.
        name: String,
        /// Byte range of the definition.
        range: std::ops::Range<usize>,
        /// Whether the stub detector calls it a stub.
        stub: bool,
    },
    /// The whole file (short, and several functions in it to change).
    File,
}

/// Where the change goes, and why there.
#[derive(Clone, Debug)]
pub struct Target {
    /// The file, absolute.
    pub path: PathBuf,
    /// Its language.
    pub language: Language,
    /// Its text as the editor shows it (buffer, else disk).
    pub text: String,
    /// The part a candidate replaces.
    pub scope: Scope,
    /// Why here, for people.
    pub why: String,
}

impl Target {
    /// The path below `root`, for prompts and reports.
    pub fn shown(&self, root: &Path) -> String {
        self.path
            .strip_prefix(root)
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }
}

/// Whether `path` holds tests (never a target: the task's tests are the judge).
pub fn is_test_file(root: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let in_test_dir = rel.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("tests" | "test" | "__tests__" | "spec")
        )
    });
    in_test_dir
        || name.starts_with("test_")
        || name.ends_with("_test.go")
        || name.ends_with("_test.py")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// The words of `task` that may name files or symbols: identifiers, split at dots
/// and slashes (`calc.add` → `calc`, `add`), lower-cased for files, kept for symbols.
pub fn task_words(task: &str) -> Vec<String> {
    let mut words = Vec::new();
    for raw in task.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if raw.len() >= 2
            && !raw.chars().all(|c| c.is_ascii_digit())
            && !words.iter().any(|w| w == raw)
        {
            words.push(raw.to_owned());
        }
    }
    words
}

/// The names `task` writes only inside a call's arguments (`srv.NewServer(addr
/// string, …)`): parameters and types of a signature it shows, not functions it
/// points to, though a function elsewhere may bear the name (`addr`).
pub fn only_in_args(task: &str) -> Vec<String> {
    let (mut inside, mut outside) = (Vec::<&str>::new(), Vec::<&str>::new());
    // Depth in a call's parentheses: a `(` right after a name opens one; prose
    // parentheses "(a square: 4 * side)" are no call's.
    let (mut depth, mut word_start, mut prev) = (0usize, None::<usize>, ' ');
    for (i, c) in task
        .char_indices()
        .chain(std::iter::once((task.len(), ' ')))
    {
        if super::mention::is_ident_char(c) {
            word_start.get_or_insert(i);
        } else if let Some(start) = word_start.take() {
            let word = &task[start..i];
            if super::mention::is_identifier(word) {
                if depth > 0 { &mut inside } else { &mut outside }.push(word);
            }
        }
        match c {
            '(' if depth > 0 || super::mention::is_ident_char(prev) => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        prev = c;
    }
    let mut out: Vec<String> = Vec::new();
    for name in inside {
        if !outside.contains(&name) && !out.iter().any(|o| o == name) {
            out.push(name.to_owned());
        }
    }
    out
}

/// The identifiers of the parameter list that follows byte `after` of `text` (a
/// function's name): parameters and their types. Rust's generics between the name
/// and the list are skipped; `None` when no list follows.
fn parameter_words(text: &str, after: usize) -> Option<Vec<String>> {
    let rest = text.get(after..)?;
    let (mut angle, mut open) = (0i32, None);
    for (i, c) in rest.char_indices() {
        match c {
            '<' => angle += 1,
            '>' => angle -= 1,
            '(' if angle <= 0 => {
                open = Some(i);
                break;
            }
            '{' | ';' | ':' | '=' if angle <= 0 => return None,
            _ => {}
        }
    }
    let open = open?;
    let mut depth = 0i32;
    let mut end = None;
    for (i, c) in rest[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let list = &rest[open + 1..end?];
    Some(
        list.split(|c: char| !super::mention::is_ident_char(c))
            .filter(|w| super::mention::is_identifier(w))
            .map(str::to_owned)
            .collect(),
    )
}

/// The parameters (and their types) of the functions `words` names, each with its
/// function: a name the task writes that is a parameter of a function it names
/// ("instead of (addr string, …)") is that parameter, not a function elsewhere that
/// bears its name (`addr` in another package).
fn parameters_of_named(
    sources: &[PathBuf],
    index: &agentls_index::Index,
    store: &agentls_text::DocumentStore,
    limits: &ReadLimits,
    words: &[String],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in sources {
        let named: Vec<Symbol> = index
            .file_symbols(path)
            .into_iter()
            .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
            .filter(|s| words.iter().any(|w| w.as_str() == &*s.name))
            .collect();
        if named.is_empty() {
            continue;
        }
        let Ok(src) = store.read(path, limits) else {
            continue;
        };
        let text = src.rope.to_string();
        for sym in named {
            let Some(after) = byte_offset(&text, sym.name_span.end) else {
                continue;
            };
            for p in parameter_words(&text, after).unwrap_or_default() {
                if p != *sym.name && !out.iter().any(|(q, o)| *q == p && *o == *sym.name) {
                    out.push((p, sym.name.to_string()));
                }
            }
        }
    }
    out
}

/// The files and folders the task forbids changing ("Do not change slug.py", "without
/// changing src/", "do not change anything under src/"): paths as written, a folder
/// ending in `/`. Never targets.
pub fn protected(task: &str) -> Vec<String> {
    const FORBID: &[&str] = &[
        "not change",
        "without changing",
        "not modify",
        "without modifying",
        "not touch",
        "not edit",
    ];
    let lower = task.to_ascii_lowercase();
    let mut out = Vec::new();
    for phrase in FORBID {
        for (at, _) in lower.match_indices(phrase) {
            let rest = &task[at + phrase.len()..];
            let path = rest.split_whitespace().take(4).find_map(|w| {
                let w = w.trim_matches(|c: char| "`'\"(),;:!?".contains(c));
                let w = w.strip_suffix('.').unwrap_or(w);
                let file = w.rsplit('/').next().unwrap_or(w);
                let looks = w.ends_with('/')
                    || file.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty() && (1..=4).contains(&ext.len())
                    });
                looks.then(|| w.trim_start_matches("./").to_owned())
            });
            out.extend(path);
        }
    }
    out
}

/// Whether `rel` (below the root) is one of the `protected` paths or under one.
pub fn is_protected(rel: &Path, protected: &[String]) -> bool {
    protected.iter().any(|p| match p.strip_suffix('/') {
        Some(dir) => rel.starts_with(dir),
        None => rel == Path::new(p),
    })
}

/// Whether `task` asks a question rather than for a change ("What does `add`
/// return?", "Explain parse"): the pipeline only changes code, and a function a
/// question names is not one to rewrite, so questions go to the loop.
pub fn is_question(task: &str) -> bool {
    // Not "when" or "do": "When a setting is absent, …" and "Do not change …" open
    // tasks too.
    const OPENERS: &[&str] = &[
        "what",
        "why",
        "how",
        "where",
        "which",
        "who",
        "explain",
        "describe",
        "summarize",
        "summarise",
    ];
    // A polite request is put as a question ("Can you switch the method and its
    // uses over?"); asking to look rather than change ("Could you look at add?",
    // "Can you explain parse?") is still a question.
    const LOOKING: &[&str] = &["look", "check", "tell", "show", "review", "see"];
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let task = task.trim();
    let first = words(task).into_iter().next().unwrap_or_default();
    // The last sentence: after the last stop followed by a space (not `cleanup.py`).
    let body = task.trim_end_matches('?');
    let last = [". ", "! ", "? ", "\n"]
        .iter()
        .filter_map(|stop| body.rfind(stop).map(|at| at + stop.len()))
        .max()
        .map_or(body, |at| &body[at..]);
    let last = words(last);
    let polite_change = match last.as_slice() {
        [modal, who, verb, ..]
            if ["can", "could", "would", "will"].contains(&modal.as_str())
                && ["you", "we"].contains(&who.as_str()) =>
        {
            let verb = if verb == "please" {
                last.get(3).map_or("", String::as_str)
            } else {
                verb.as_str()
            };
            !OPENERS.contains(&verb) && !LOOKING.contains(&verb)
        }
        _ => false,
    };
    (task.ends_with('?') && !polite_change) || OPENERS.contains(&first.as_str())
}

/// The targets for `task` in the indexed workspace at `root`, best first; empty when
/// nothing in the task points anywhere (the tool loop takes over).
pub fn localise(
    root: &Path,
    index: &agentls_index::Index,
    store: &agentls_text::DocumentStore,
    limits: &ReadLimits,
    task: &str,
) -> Vec<Target> {
    let words = task_words(task);
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let protected = protected(task);
    let in_args = only_in_args(task);
    let mut sources: Vec<PathBuf> = index
        .paths()
        .filter(|p| !is_test_file(root, p) && Language::from_path(p).is_some())
        .filter(|p| !is_protected(p.strip_prefix(root).unwrap_or(p), &protected))
        .map(|p| p.to_path_buf())
        .collect();
    sources.sort();
    let parameters = parameters_of_named(&sources, index, store, limits, &words);
    // Each function: (score, why), then grouped by file.
    let mut scored: Vec<(i32, Symbol, bool, String)> = Vec::new();
    for path in &sources {
        let Ok(src) = store.read(path, limits) else {
            continue;
        };
        let text = src.rope.to_string();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let file_named = lower.contains(&stem);
        for sym in index.file_symbols(path) {
            if !matches!(sym.kind, SymbolKind::Function | SymbolKind::Method) {
                continue;
            }
            let stub = agentls_index::stub::is_stub(sym.language, &text, sym.name_span.start);
            let named = words.iter().any(|w| w.as_str() == &*sym.name)
                && !in_args.iter().any(|a| a.as_str() == &*sym.name)
                && !parameters.iter().any(|(p, _)| *p == *sym.name);
            let mut score = 0;
            let mut why = Vec::new();
            if named {
                score += 3;
                why.push("the task names it");
            }
            if stub {
                score += 2;
                why.push("it is a stub");
            }
            if file_named && score > 0 {
                score += 1;
                why.push("the task names its file");
            }
            if score > 0 {
                scored.push((score, sym, stub, why.join(", ")));
            }
        }
    }
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    let Some((_, best, _, _)) = scored.first().cloned() else {
        // No function named: the one source file the task names, else the only one.
        let named = named_files(&sources, &lower);
        let why = if named.len() == 1 {
            "the task names it"
        } else {
            "it is the workspace's only source file"
        };
        let pool = if named.len() == 1 { &named } else { &sources };
        return single_file(pool, store, limits, why);
    };
    let path = best.path.to_path_buf();
    let Ok(src) = store.read(&path, limits) else {
        return Vec::new();
    };
    let text = src.rope.to_string();
    let same_file: Vec<&(i32, Symbol, bool, String)> = scored
        .iter()
        .filter(|(_, s, _, _)| *s.path == *path)
        .collect();
    // Several functions of one short file to change: the file, whole.
    if same_file.len() > 1 && text.len() <= WHOLE_FILE_CHARS {
        let names: Vec<&str> = same_file.iter().map(|(_, s, _, _)| &*s.name).collect();
        return vec![Target {
            path,
            language: best.language,
            text,
            scope: Scope::File,
            why: format!("{} to change in one short file", names.join(", ")),
        }];
    }
    scored
        .iter()
        .take(3)
        .filter_map(|(_, sym, stub, why)| {
            let src = store.read(&sym.path, limits).ok()?;
            let text = src.rope.to_string();
            let range = byte_offset(&text, sym.span.start)?..byte_offset(&text, sym.span.end)?;
            Some(Target {
                path: sym.path.to_path_buf(),
                language: sym.language,
                text,
                scope: Scope::Function {
                    name: sym.name.to_string(),
                    range,
                    stub: *stub,
                },
                why: format!("`{}`: {why}", sym.name),
            })
        })
        .collect()
}

/// The files of `sources` whose stem is one of the task's `lower`-cased words
/// (`slug.py` for "… slug.py has no tests").
pub fn named_files(sources: &[PathBuf], lower: &[String]) -> Vec<PathBuf> {
    sources
        .iter()
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| lower.contains(&s.to_string_lossy().to_ascii_lowercase()))
        })
        .cloned()
        .collect()
}

/// The one short source file of `sources`, when there is only one, whole.
fn single_file(
    sources: &[PathBuf],
    store: &agentls_text::DocumentStore,
    limits: &ReadLimits,
    why: &str,
) -> Vec<Target> {
    let [path] = sources else {
        return Vec::new();
    };
    let Some(language) = Language::from_path(path) else {
        return Vec::new();
    };
    let Ok(src) = store.read(path, limits) else {
        return Vec::new();
    };
    let text = src.rope.to_string();
    if text.len() > WHOLE_FILE_CHARS {
        return Vec::new();
    }
    vec![Target {
        path: path.clone(),
        language,
        text,
        scope: Scope::File,
        why: why.to_owned(),
    }]
}

/// The byte offset of a point (line, byte column) in `text`.
pub fn byte_offset(text: &str, p: agentls_index::Point) -> Option<usize> {
    let mut start = 0usize;
    for _ in 0..p.line {
        start += text[start..].find('\n')? + 1;
    }
    let at = start + p.column as usize;
    (at <= text.len() && text.is_char_boundary(at)).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_tasks() {
        for q in [
            "What does the function add in calc.py return? Answer in one sentence.",
            "explain parse_args",
            "Why is `total` off by one",
            "Could you look at add?",
            "Can you explain why parse drops the last field?",
            "Is add right? Could you please tell me what it returns?",
        ] {
            assert!(is_question(q), "{q}");
        }
        // Requests put politely as questions change code.
        for t in [
            "I think `Resolve` is a better name for Registry.Lookup since it chases aliases now. Can you switch the method and its uses over?",
            "Could you please make fmt_time take an optional seconds argument?",
            "Would you add a --dry-run flag to cleanup.py?",
        ] {
            assert!(!is_question(t), "{t}");
        }
        for t in [
            "Fix add in calc.py.",
            "When the list is empty, total must return 0.",
            "Do not change slug.py; write tests for it.",
        ] {
            assert!(!is_question(t), "{t}");
        }
        for (name, prompt) in super::super::fixtures::prompts() {
            assert!(!is_question(&prompt), "{name}: {prompt}");
        }
    }

    #[test]
    fn task_words_split_dotted_names() {
        let w = task_words("calc.add returns the wrong result. Fix `versions.Index`!");
        for want in ["calc", "add", "versions", "Index", "returns"] {
            assert!(w.iter().any(|x| x == want), "{want} in {w:?}");
        }
    }

    #[test]
    fn parameter_lists_are_read_after_the_name() {
        let go = "func NewServer(addr string, timeout time.Duration) *Server {";
        assert_eq!(
            parameter_words(go, "func NewServer".len()).unwrap(),
            ["addr", "string", "timeout", "time", "Duration"]
        );
        let rust = "fn sums<T: Into<u64>>(xs: &[T], width: usize) -> Vec<u64> {";
        assert_eq!(
            parameter_words(rust, "fn sums".len()).unwrap(),
            ["xs", "T", "width", "usize"]
        );
        assert_eq!(
            parameter_words("class Shape:\n    def area(self):", 11),
            None
        );
    }

    /// The task shows the old parameter list in prose parentheses, which the call scan
    /// does not read as arguments: `addr`, a function in another package, is still
    /// not a target, because it is a parameter of `NewServer`, which the task names;
    /// so too in three other phrasings that write `addr` outside any parentheses.
    #[test]
    fn a_parameter_of_a_function_the_task_names_is_no_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/tasks/go-signature/repo")
            .canonicalize()
            .unwrap();
        let mut index = agentls_index::Index::default();
        for (path, text) in super::super::fixtures::repo_files("go-signature") {
            index.update_file(&path.canonicalize().unwrap(), &text);
        }
        let store = agentls_text::DocumentStore::default();
        let task = "NewServer takes too many arguments. Instead of (addr string, timeoutSeconds int, verbose bool) it should take a Config struct with Addr, Timeout and Verbose; update the callers.";
        assert!(
            only_in_args(task).is_empty(),
            "prose parentheses: {:?}",
            only_in_args(task)
        );
        // The same request put three other ways, `addr` outside any parentheses.
        for task in [
            task,
            "Change NewServer so it accepts a Config struct rather than addr, timeoutSeconds and verbose; fix every caller.",
            "Please replace the addr/timeoutSeconds/verbose parameters of NewServer with one Config value (Addr, Timeout, Verbose) and update its callers.",
            "The three arguments addr, timeoutSeconds and verbose of srv.NewServer should become fields of a new Config struct.",
        ] {
            let targets = localise(&root, &index, &store, &ReadLimits::default(), task);
            let names: Vec<String> = targets
                .iter()
                .map(|t| match &t.scope {
                    Scope::Function { name, .. } => name.clone(),
                    Scope::File => t.path.display().to_string(),
                })
                .collect();
            assert_eq!(
                names.first().map(String::as_str),
                Some("NewServer"),
                "{task}: {names:?}"
            );
            assert!(!names.iter().any(|n| n == "addr"), "{task}: {names:?}");
        }
    }

    #[test]
    fn names_written_only_as_arguments_name_no_function() {
        let task = "srv.NewServer(addr string, timeoutSeconds int, verbose bool) is getting unwieldy. Replace it with NewServer(cfg Config).";
        assert_eq!(
            only_in_args(task),
            vec![
                "addr",
                "string",
                "timeoutSeconds",
                "int",
                "verbose",
                "bool",
                "cfg",
                "Config"
            ]
        );
        // Named outside the arguments too, it names a function.
        let task =
            "rolling_sums(&[1, 2], width) is wrong; width should be checked in rolling_sums.";
        assert!(only_in_args(task).is_empty(), "{:?}", only_in_args(task));
        let task = "Fix `render(rows, header)`; header() prints the first line twice.";
        assert_eq!(only_in_args(task), vec!["rows"]);
    }

    #[test]
    fn test_files_are_never_targets() {
        let root = Path::new("/w");
        for p in [
            "/w/tests/basic.rs",
            "/w/a/b_test.go",
            "/w/test_x.py",
            "/w/x.test.js",
        ] {
            assert!(is_test_file(root, Path::new(p)), "{p}");
        }
        for p in ["/w/src/lib.rs", "/w/calc.py", "/w/versions/versions.go"] {
            assert!(!is_test_file(root, Path::new(p)), "{p}");
        }
    }

    #[test]
    fn files_the_task_forbids_changing_are_never_targets() {
        let p = protected(
            "slug.py has no tests. Write tests in tests/test_slug.py. Do not change slug.py.",
        );
        assert_eq!(p, vec!["slug.py"]);
        let p = protected("Do not change anything under src/ (tests there would not count).");
        assert_eq!(p, vec!["src/"]);
        assert!(is_protected(Path::new("src/calendar.rs"), &p));
        assert!(!is_protected(Path::new("tests/calendar.rs"), &p));
        assert!(protected("Fix the cause in query.js without changing the test.").is_empty());
        assert!(protected("calc.add is wrong. Fix it.").is_empty());
    }

    #[test]
    fn points_become_byte_offsets() {
        let text = "ab\ncdé\nf";
        assert_eq!(byte_offset(text, agentls_index::Point::new(1, 2)), Some(5));
        assert_eq!(byte_offset(text, agentls_index::Point::new(2, 1)), Some(9));
        assert_eq!(byte_offset(text, agentls_index::Point::new(5, 0)), None);
    }
}

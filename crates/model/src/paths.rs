//! The workspace's paths as a limit on what a model may write into a tool's path
//! arguments.
//!
//! Small models fill a `path` with the tool description's placeholder (`"<path>"`), an
//! empty string, or a name they made up, and then repeat the failing call. A provider
//! that constrains its output (the embedded models) can rule that out while the call is
//! written: a path argument is then a file or directory that exists, or, for the tools
//! that create files, a new name under the workspace made of plain characters. The
//! session walks the workspace before each request to such a provider and sends the
//! result as [`ChatRequest::paths`](crate::ChatRequest::paths); other providers ignore
//! it.

/// What a tool's path argument may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// An existing file.
    File,
    /// An existing directory (`.` is the root).
    Dir,
    /// An existing file or directory.
    Entry,
    /// An existing file, or a new one: plain characters (letters, digits, `._+@-`)
    /// separated by `/`, no `.` or `..` segment.
    NewFile,
}

/// A tool's edit arguments: `old` must be copied from the file `path` names, and `new`
/// must differ from `old`. Small models wrote `old_string`s that are not in the file
/// (made-up code, line-number prefixes) and `new_string`s equal to them, and repeated
/// the refused call until their time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EditArgs {
    /// The argument naming the file.
    pub path: &'static str,
    /// The argument that must be copied from that file's text.
    pub old: &'static str,
    /// The argument that must differ from `old`.
    pub new: &'static str,
}

/// The workspace's files and directories (relative, `/`-separated) and which tool
/// arguments name them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathConstraint {
    files: Vec<String>,
    dirs: Vec<String>,
    args: Vec<(String, String, PathKind)>,
    /// Tools with [`EditArgs`].
    edits: Vec<(String, EditArgs)>,
    /// Files the model has seen (relative path → text, CRLF as LF, as the edit engine
    /// matches a model's LF text in a CRLF file): an edit's `old`
    /// argument for one of them is held to its text. Others are not held: the harness
    /// shows an unseen file before editing it.
    texts: std::collections::HashMap<String, String>,
    /// The workspace root as an absolute path with its trailing `/` (kept so, since
    /// `check` runs for every candidate token), which may open any path: models given
    /// the root in their prompt write `/ws/src/a.rs`.
    root: Option<String>,
}

impl PathConstraint {
    /// A constraint over `files` and `dirs` (relative to the root, `/`-separated; the
    /// root itself is always a directory, `.`) for the `(tool, argument, kind)` triples
    /// of `args`.
    pub fn new(
        mut files: Vec<String>,
        mut dirs: Vec<String>,
        args: Vec<(String, String, PathKind)>,
    ) -> Self {
        files.sort();
        files.dedup();
        dirs.push(".".to_owned());
        dirs.sort();
        dirs.dedup();
        Self {
            files,
            dirs,
            args,
            edits: Vec::new(),
            texts: Default::default(),
            root: None,
        }
    }

    /// Also holds the edit arguments of `edits` (per tool) to the `texts` of the files
    /// the model has seen (relative path, text as the edit tools match it).
    pub fn with_texts(
        mut self,
        edits: Vec<(String, EditArgs)>,
        texts: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        self.edits = edits;
        self.texts = texts
            .into_iter()
            .map(|(path, text)| (path, text.replace("\r\n", "\n")))
            .collect();
        self
    }

    /// The edit arguments of `tool`, when it has them.
    pub fn edit_args(&self, tool: &str) -> Option<EditArgs> {
        self.edits.iter().find(|(t, _)| t == tool).map(|(_, e)| *e)
    }

    /// The text an edit's `old` argument is held to, for the file a path argument names
    /// as `written` (relative, or opening with `./` or the root): `None` when the model
    /// has not seen that file.
    pub fn text_of(&self, written: &str) -> Option<&str> {
        let rel = self
            .prefixes()
            .find_map(|p| written.strip_prefix(p))
            .unwrap_or(written);
        self.texts.get(rel).map(String::as_str)
    }

    /// Also accepts each path written absolutely, under `root`. A root that a JSON
    /// string could only hold escaped (quotes, backslashes, control characters) is left
    /// out: the grammar allows no escapes in a path.
    pub fn with_root(mut self, root: &str) -> Self {
        let root = root.trim_end_matches('/');
        let plain = root.starts_with('/')
            && root.len() > 1
            && !root
                .chars()
                .any(|c| c == '"' || c == '\\' || c.is_control());
        self.root = plain.then(|| format!("{root}/"));
        self
    }

    /// The prefixes a path may be written with: `./`, and the root's when known.
    fn prefixes(&self) -> impl Iterator<Item = &str> {
        std::iter::once("./").chain(self.root.as_deref())
    }

    /// The kind of `tool`'s argument `arg`, when it names a path.
    pub fn kind(&self, tool: &str, arg: &str) -> Option<PathKind> {
        self.args
            .iter()
            .find(|(t, a, _)| t == tool && a == arg)
            .map(|(_, _, k)| *k)
    }

    /// The files, sorted.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// What `text`, a path argument's value written so far (the string's content,
    /// unescaped), can still become as a path of `kind`.
    pub fn check(&self, kind: PathKind, text: &str) -> PathCheck {
        let mut best = self.check_relative(kind, text);
        // Models write `./src/a.rs`, or the absolute path under the root their prompt
        // names: allowed to, the 0.5B model's calls named `/tmp/demo-ws/Cargo.toml`
        // and a `cwd` of `/tmp/demo-ws`. Either way it is the same file.
        for prefix in self.prefixes() {
            if best == PathCheck::Complete {
                break;
            }
            let seen = match text.strip_prefix(prefix) {
                Some(rest) => self.check_relative(kind, rest),
                None if prefix.starts_with(text) => {
                    let root = matches!(kind, PathKind::Dir | PathKind::Entry)
                        && self.root.as_deref().and_then(|r| r.strip_suffix('/')) == Some(text);
                    if root {
                        PathCheck::Complete
                    } else {
                        PathCheck::Partial
                    }
                }
                None => PathCheck::Invalid,
            };
            best = best.max(seen);
        }
        best
    }

    /// [`check`](Self::check) of a path relative to the root, as the list holds it.
    fn check_relative(&self, kind: PathKind, text: &str) -> PathCheck {
        let complete = match kind {
            PathKind::File => self.is_file(text),
            PathKind::Dir => self.is_dir(text),
            PathKind::Entry => self.is_file(text) || self.is_dir(text),
            PathKind::NewFile => self.is_file(text) || self.new_file(text, false),
        };
        let partial = complete
            || match kind {
                PathKind::File => prefix_in(&self.files, text),
                PathKind::Dir => prefix_in(&self.dirs, text),
                PathKind::Entry => prefix_in(&self.files, text) || prefix_in(&self.dirs, text),
                PathKind::NewFile => {
                    prefix_in(&self.files, text)
                        || prefix_in(&self.dirs, text)
                        || self.new_file(text, true)
                }
            };
        match (complete, partial) {
            (true, _) => PathCheck::Complete,
            (false, true) => PathCheck::Partial,
            (false, false) => PathCheck::Invalid,
        }
    }

    /// The shortest text that makes `text` a path of `kind`: `None` when nothing can.
    pub fn completion(&self, kind: PathKind, text: &str) -> Option<String> {
        if self.check(kind, text) == PathCheck::Complete {
            return Some(String::new());
        }
        self.completion_relative(kind, text).or_else(|| {
            self.prefixes()
                .find_map(|prefix| match text.strip_prefix(prefix) {
                    Some(rest) => self.completion_relative(kind, rest),
                    None if prefix.starts_with(text) => self
                        .completion_relative(kind, "")
                        .map(|rest| format!("{}{rest}", &prefix[text.len()..])),
                    None => None,
                })
        })
    }

    fn completion_relative(&self, kind: PathKind, text: &str) -> Option<String> {
        if self.check_relative(kind, text) == PathCheck::Complete {
            return Some(String::new());
        }
        let rest =
            |list: &[String]| first_with_prefix(list, text).map(|p| p[text.len()..].to_owned());
        match kind {
            PathKind::File => rest(&self.files),
            PathKind::Dir => rest(&self.dirs),
            PathKind::Entry => rest(&self.files).or_else(|| rest(&self.dirs)),
            PathKind::NewFile => rest(&self.files)
                .or_else(|| {
                    // A partial new name ends in `/` or is empty: name a file there.
                    self.new_file(text, true).then(|| "new".to_owned())
                })
                .or_else(|| rest(&self.dirs).map(|d| format!("{d}/new"))),
        }
    }

    fn is_file(&self, p: &str) -> bool {
        self.files.binary_search_by(|f| f.as_str().cmp(p)).is_ok()
    }

    fn is_dir(&self, p: &str) -> bool {
        let p = match p.strip_suffix('/') {
            Some(d) if !d.is_empty() => d,
            _ => p,
        };
        self.dirs.binary_search_by(|d| d.as_str().cmp(p)).is_ok()
    }

    /// Whether `p` is (or, when `partial`, can become) a new file's path: plain
    /// segments under the root or under an existing directory.
    fn new_file(&self, p: &str, partial: bool) -> bool {
        if plain_segments(p, partial) {
            return true;
        }
        // Under an existing directory whose own name has other characters.
        p.match_indices('/').any(|(k, _)| {
            self.is_dir(&p[..k]) && &p[..k] != "." && plain_segments(&p[k + 1..], partial)
        })
    }
}

/// What a path written so far can still become, from worst to best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathCheck {
    /// Nothing it can become is a valid path.
    Invalid,
    /// The beginning of a valid path.
    Partial,
    /// A valid path (which may also go on to a longer one).
    Complete,
}

/// Whether a sorted `list` holds an item starting with `p`.
fn prefix_in(list: &[String], p: &str) -> bool {
    first_with_prefix(list, p).is_some()
}

fn first_with_prefix<'a>(list: &'a [String], p: &str) -> Option<&'a String> {
    let at = list.partition_point(|x| x.as_str() < p);
    list.get(at).filter(|x| x.starts_with(p))
}

/// `a/b.rs`: segments of letters, digits and `._+@-`, none `.` or `..`, none empty
/// but (when `partial`) the last, which is still being written.
fn plain_segments(p: &str, partial: bool) -> bool {
    let segments: Vec<&str> = p.split('/').collect();
    let last = segments.len() - 1;
    segments.iter().enumerate().all(|(i, s)| {
        let plain = s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '@' | '-'));
        let whole = !s.is_empty() && *s != "." && *s != "..";
        // A segment being written may be empty or `.`/`..` on its way to `.github`.
        plain && (whole || (partial && i == last && (s.is_empty() || s.chars().all(|c| c == '.'))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> PathConstraint {
        PathConstraint::new(
            vec![
                "src/lib.rs".into(),
                "README.md".into(),
                "my dir/a.txt".into(),
            ],
            vec!["src".into(), "my dir".into()],
            vec![
                ("read_file".into(), "path".into(), PathKind::File),
                ("write_file".into(), "path".into(), PathKind::NewFile),
            ],
        )
    }

    #[test]
    fn a_path_may_open_with_dot_slash_or_the_root() {
        let p = paths().with_root("/tmp/ws/");
        for text in ["./src/lib.rs", "/tmp/ws/src/lib.rs", "/tmp/ws/README.md"] {
            assert_eq!(p.check(PathKind::File, text), PathCheck::Complete, "{text}");
        }
        for text in ["/", "/tmp/w", "/tmp/ws/", "./", "/tmp/ws/src/l", "."] {
            assert_eq!(p.check(PathKind::File, text), PathCheck::Partial, "{text}");
        }
        for text in [
            "/tmp/wsx",
            "/tmp/ws/src/main.rs",
            "/etc/passwd",
            "././x",
            "/tmp/ws/../a",
        ] {
            assert_eq!(p.check(PathKind::File, text), PathCheck::Invalid, "{text}");
        }
        assert_eq!(p.check(PathKind::Dir, "/tmp/ws"), PathCheck::Complete);
        assert_eq!(p.check(PathKind::Dir, "/tmp/ws/src"), PathCheck::Complete);
        assert_eq!(
            p.check(PathKind::NewFile, "/tmp/ws/src/new.rs"),
            PathCheck::Complete
        );
        assert_eq!(p.check(PathKind::NewFile, "/tmp/x.rs"), PathCheck::Invalid);
        assert_eq!(
            p.completion(PathKind::File, "/tmp/w").as_deref(),
            Some("s/README.md")
        );
        assert_eq!(
            p.completion(PathKind::File, "./s").as_deref(),
            Some("rc/lib.rs")
        );
        // Without a root, or with one a JSON string cannot hold plainly, only `./`.
        assert_eq!(
            paths().check(PathKind::File, "/tmp/ws/src/lib.rs"),
            PathCheck::Invalid
        );
        let quoted = paths().with_root("/tmp/a\"b");
        assert_eq!(
            quoted.check(PathKind::File, "/tmp/a\"b/src/lib.rs"),
            PathCheck::Invalid
        );
        assert_eq!(
            quoted.check(PathKind::File, "./README.md"),
            PathCheck::Complete
        );
    }

    #[test]
    fn an_existing_file_is_the_only_file() {
        let p = paths();
        assert_eq!(p.check(PathKind::File, "src/lib.rs"), PathCheck::Complete);
        assert_eq!(p.check(PathKind::File, "src/l"), PathCheck::Partial);
        assert_eq!(p.check(PathKind::File, ""), PathCheck::Partial);
        assert_eq!(p.check(PathKind::File, "<path>"), PathCheck::Invalid);
        assert_eq!(p.check(PathKind::File, "src/main.rs"), PathCheck::Invalid);
        assert_eq!(p.check(PathKind::File, "src"), PathCheck::Partial);
        assert_eq!(p.completion(PathKind::File, ""), Some("README.md".into()));
        assert_eq!(p.completion(PathKind::File, "src/"), Some("lib.rs".into()));
        assert_eq!(p.completion(PathKind::File, "x"), None);
    }

    #[test]
    fn directories_include_the_root_and_a_trailing_slash() {
        let p = paths();
        for ok in [".", "src", "src/", "my dir"] {
            assert_eq!(p.check(PathKind::Dir, ok), PathCheck::Complete, "{ok}");
        }
        assert_eq!(p.check(PathKind::Dir, ""), PathCheck::Partial);
        assert_eq!(p.check(PathKind::Dir, "/"), PathCheck::Invalid);
        assert_eq!(p.check(PathKind::Dir, "src/lib.rs"), PathCheck::Invalid);
        assert_eq!(p.check(PathKind::Entry, "src/lib.rs"), PathCheck::Complete);
        assert_eq!(p.check(PathKind::Entry, "src"), PathCheck::Complete);
    }

    #[test]
    fn new_files_are_plain_names_under_the_workspace() {
        let p = paths();
        for ok in [
            "new.py",
            "src/new.rs",
            "tests/test_x.py",
            ".github/ci.yml",
            "my dir/b.txt",
        ] {
            assert_eq!(p.check(PathKind::NewFile, ok), PathCheck::Complete, "{ok}");
        }
        for partial in ["", "src/", "tests/", ".", "my dir/"] {
            assert_eq!(
                p.check(PathKind::NewFile, partial),
                PathCheck::Partial,
                "{partial}"
            );
        }
        for bad in ["<path>", "/etc/passwd", "../x", "src/../x", "a//b", "a b/c"] {
            assert_eq!(p.check(PathKind::NewFile, bad), PathCheck::Invalid, "{bad}");
        }
        assert_eq!(
            p.completion(PathKind::NewFile, "tests/"),
            Some("new".into())
        );
    }

    #[test]
    fn arguments_are_looked_up_by_tool_and_name() {
        let p = paths();
        assert_eq!(p.kind("read_file", "path"), Some(PathKind::File));
        assert_eq!(p.kind("write_file", "path"), Some(PathKind::NewFile));
        assert_eq!(p.kind("grep", "path"), None);
        assert_eq!(p.kind("read_file", "offset"), None);
    }
}

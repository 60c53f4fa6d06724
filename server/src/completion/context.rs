//! One fill-in-the-middle request, built from the live buffer around the cursor, the
//! ring of recently edited places and the definitions the cursor's code uses (on the
//! blocking pool: it reads the index and files).

use std::path::Path;

use agentls_host::config::CompletionSettings;
use agentls_model::{ContextChunk, FimRequest, StopRules};
use agentls_text::{DocUri, Snapshot};
use ropey::Rope;

use crate::state::State;

/// Lines around an edited place given as its chunk (each side).
const RING_LINES: usize = super::RING_LINES;
/// Most definitions given as context.
const MAX_DEFINITIONS: usize = 4;
/// Most lines of one definition.
const DEFINITION_LINES: usize = 24;
/// Lines before the cursor (and after it) whose names are looked up.
const NAME_LINES_BEFORE: usize = 24;
const NAME_LINES_AFTER: usize = 4;
/// Most names looked up in the index per request.
const MAX_NAMES: usize = 32;

/// A request ready for the backend, and where its answer goes.
#[derive(Debug)]
pub struct Prepared {
    /// The request.
    pub request: FimRequest,
    /// Where the answer ends.
    pub rules: StopRules,
    /// The cursor as a char index of the snapshot.
    pub cursor: usize,
    /// The snapshot it was built from.
    pub snapshot: Snapshot,
}

/// Builds the request for the cursor at `cursor` (a char index of `snapshot`).
pub fn prepare(
    state: &State,
    snapshot: Snapshot,
    cursor: usize,
    settings: &CompletionSettings,
) -> Prepared {
    let rope = &snapshot.rope;
    let cursor = cursor.min(rope.len_chars());
    let (start, end) = window(
        rope,
        cursor,
        settings.prefix_bytes as usize,
        settings.suffix_bytes as usize,
    );
    let prefix = rope.slice(start..cursor).to_string();
    let suffix = rope.slice(cursor..end).to_string();
    let root = state.root();
    let path = snapshot.uri.to_file_path();
    let relative = |p: &Path| relative_to(root.as_deref(), p);
    let (first_line, last_line) = (rope.char_to_line(start), rope.char_to_line(end));
    let mut context = ring_chunks(state, &snapshot.uri, (first_line, last_line), &relative);
    for chunk in definitions(
        state,
        &snapshot,
        cursor,
        path.as_deref(),
        (first_line, last_line),
        &relative,
    ) {
        // A definition inside a recently edited place is there already.
        if !context
            .iter()
            .any(|c| c.path == chunk.path && c.text.contains(&chunk.text))
        {
            context.push(chunk);
        }
    }
    let request = FimRequest {
        path: path_of(state, &snapshot),
        language: Some(snapshot.language_id.to_string()).filter(|l| !l.is_empty()),
        prefix,
        suffix,
        context,
        max_tokens: settings.max_tokens,
    };
    let rules = StopRules::new(
        &request.prefix,
        &request.suffix,
        settings.max_lines.max(1) as usize,
    );
    Prepared {
        request,
        rules,
        cursor,
        snapshot,
    }
}

/// `path` relative to the workspace `root` (as it is outside it).
fn relative_to(root: Option<&Path>, path: &Path) -> String {
    root.and_then(|r| path.strip_prefix(r).ok())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The document's path as prompts name it: relative to the workspace root, its URI
/// when it is no file.
pub fn path_of(state: &State, snapshot: &Snapshot) -> String {
    let root = state.root();
    snapshot.uri.to_file_path().map_or_else(
        || snapshot.uri.to_string(),
        |p| relative_to(root.as_deref(), Path::new(&p)),
    )
}

/// The char range of the prefix and suffix windows around `cursor`: about
/// `before` bytes before it, starting at a line start, and `after` bytes after it,
/// ending at a line end (never short of the cursor's own line).
fn window(rope: &Rope, cursor: usize, before: usize, after: usize) -> (usize, usize) {
    let cursor_byte = rope.char_to_byte(cursor);
    let cursor_line = rope.char_to_line(cursor);
    let start = if cursor_byte <= before {
        0
    } else {
        let from = cursor_byte - before;
        let line = rope.byte_to_line(from);
        let line = if rope.line_to_byte(line) == from {
            line
        } else {
            line + 1
        };
        rope.line_to_char(line.min(cursor_line))
    };
    let end_byte = cursor_byte.saturating_add(after);
    let end = if end_byte >= rope.len_bytes() {
        rope.len_chars()
    } else {
        let line = rope.byte_to_line(end_byte).max(cursor_line + 1);
        rope.line_to_char(line.min(rope.len_lines()))
    };
    (start.min(cursor), end.max(cursor))
}

/// The ring's places as chunks, oldest first, leaving out the cursor's own window.
fn ring_chunks(
    state: &State,
    uri: &DocUri,
    (first, last): (usize, usize),
    relative: &dyn Fn(&Path) -> String,
) -> Vec<ContextChunk> {
    let mut out = Vec::new();
    for (place, line) in state.completions.ring() {
        if &place == uri && line + RING_LINES >= first && line <= last + RING_LINES {
            continue;
        }
        let Some(snap) = state.store.snapshot(&place) else {
            continue;
        };
        let Some(path) = place.to_file_path() else {
            continue;
        };
        let text = lines(
            &snap.rope,
            line.saturating_sub(RING_LINES),
            line + RING_LINES,
        );
        if !text.trim().is_empty() {
            out.push(ContextChunk {
                path: relative(&path),
                text,
            });
        }
    }
    out
}

/// Lines `from..=to` of `rope` (clamped), without the last line's terminator.
fn lines(rope: &Rope, from: usize, to: usize) -> String {
    let n = rope.len_lines();
    if from >= n {
        return String::new();
    }
    let end = if to + 1 >= n {
        rope.len_chars()
    } else {
        rope.line_to_char(to + 1)
    };
    let text = rope.slice(rope.line_to_char(from)..end).to_string();
    text.trim_end_matches(['\n', '\r']).to_owned()
}

/// The definitions of the names used near the cursor, nearest name last.
fn definitions(
    state: &State,
    snapshot: &Snapshot,
    cursor: usize,
    path: Option<&Path>,
    (first, last): (usize, usize),
    relative: &dyn Fn(&Path) -> String,
) -> Vec<ContextChunk> {
    let rope = &snapshot.rope;
    let line = rope.char_to_line(cursor);
    let from = rope.line_to_char(line.saturating_sub(NAME_LINES_BEFORE));
    let to_line = (line + NAME_LINES_AFTER + 1).min(rope.len_lines());
    let to = rope.line_to_char(to_line).max(cursor);
    let before = rope.slice(from..cursor).to_string();
    let after = rope.slice(cursor..to).to_string();
    // Nearest first: the names before the cursor backwards, then those after it.
    let mut names: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if name.len() >= 3
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && !names.iter().any(|n| n == name)
            && names.len() < MAX_NAMES
        {
            names.push(name.to_owned());
        }
    };
    for name in identifiers(&before).rev() {
        push(name);
    }
    for name in identifiers(&after) {
        push(name);
    }
    let limits = state.config().config.read_limits();
    let found: Vec<agentls_index::Symbol> = {
        // Every buffer's newest text: a definition typed just before the request counts.
        let index = crate::indexing::caught_up(state, crate::indexing::Reads::All);
        names
            .iter()
            .filter_map(|name| {
                index.definitions(name).into_iter().find(|d| {
                    // A definition inside the window is in the prompt already.
                    let here = path.is_some_and(|p| *d.path == *p);
                    let (s, e) = (d.span.start.line as usize, d.span.end.line as usize);
                    !(here && e >= first && s <= last)
                })
            })
            .take(MAX_DEFINITIONS)
            .collect()
    };
    let mut out: Vec<ContextChunk> = found
        .iter()
        .filter_map(|d| {
            let text = state.store.read(&d.path, &limits).ok()?;
            let start = d.span.start.line as usize;
            let end = (d.span.end.line as usize).min(start + DEFINITION_LINES - 1);
            let text = lines(&text.rope, start, end);
            (!text.trim().is_empty()).then(|| ContextChunk {
                path: relative(&d.path),
                text,
            })
        })
        .collect();
    out.reverse();
    out
}

/// The identifiers in `text`, in order.
fn identifiers(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_cut_at_line_boundaries() {
        let rope = Rope::from_str("aaaa\nbbbb\ncccc\ndddd\neeee\n");
        // Cursor in the middle of "cccc" (char 12); 6 bytes before reach into "bbbb".
        let (s, e) = window(&rope, 12, 6, 6);
        assert_eq!(rope.slice(s..12).to_string(), "cc");
        assert_eq!(rope.slice(12..e).to_string(), "cc\n");
        let (s, e) = window(&rope, 12, 100, 100);
        assert_eq!((s, e), (0, rope.len_chars()));
        // A window of nothing still has the cursor's own line.
        let (s, e) = window(&rope, 12, 0, 0);
        assert_eq!(rope.slice(s..e).to_string(), "cccc\n");
    }

    #[test]
    fn identifiers_split_on_punctuation() {
        let names: Vec<&str> = identifiers("let total = sum_of(items, 2);").collect();
        assert_eq!(names, ["let", "total", "sum_of", "items", "2"]);
    }

    /// The request for a cursor: the windows, the definition of a name used near the
    /// cursor (from the index, the live text of its file), a recently edited place,
    /// and no chunk for what the windows already hold.
    #[test]
    fn a_request_holds_the_windows_the_definitions_and_the_recent_places() {
        let state = State::default();
        state.set_root(Some("/ws".into()));
        let util = "pub fn twice(x: i32) -> i32 {\n    2 * x\n}\n";
        let notes = (0..40)
            .map(|i| format!("// note {i}\n"))
            .collect::<String>();
        let lib = "fn here() {}\n\nfn add(a: i32) -> i32 {\n    let b = twice(a);\n    \n}\n";
        let open = |path: &str, text: &str| {
            let uri = DocUri::new(format!("file://{path}"));
            state.store.open(uri.clone(), "rust", 1, text);
            state.index_mut().update_file(Path::new(path), text);
            uri
        };
        open("/ws/src/util.rs", util);
        let notes_uri = open("/ws/src/notes.rs", &notes);
        let lib_uri = open("/ws/src/lib.rs", lib);
        state.completions.note_edit(&notes_uri, 30);
        // An edit in the cursor's own window is no chunk: the window holds it.
        state.completions.note_edit(&lib_uri, 3);
        let Some(snapshot) = state.store.snapshot(&lib_uri) else {
            panic!("lib.rs is open")
        };
        let cursor = lib.find("    \n}").unwrap_or(0) + 4;
        let settings = CompletionSettings::default();
        let p = prepare(&state, snapshot, cursor, &settings);
        let r = &p.request;
        assert_eq!(r.path, "src/lib.rs");
        assert_eq!(r.language.as_deref(), Some("rust"));
        assert_eq!(r.prefix, &lib[..cursor]);
        assert_eq!(r.suffix, "\n}\n");
        assert_eq!(r.max_tokens, settings.max_tokens);
        let chunks: Vec<(&str, &str)> = r
            .context
            .iter()
            .map(|c| (c.path.as_str(), c.text.as_str()))
            .collect();
        // The edited place (lines 22..=38 of notes.rs) first, the definition last;
        // `here` and `add` are in the window, not repeated.
        let place: String = (22..=38).map(|i| format!("// note {i}\n")).collect();
        assert_eq!(
            chunks,
            [
                ("src/notes.rs", place.trim_end()),
                ("src/util.rs", util.trim_end()),
            ]
        );
    }
}

//! Nothing the user typed is lost, and an agent edit lands exactly once where it was
//! meant, or is reported as not landed, whatever the client does with versions and
//! however long it holds its `didChange`s back.
//!
//! A property test against the real binary: a simulated editor with Neovim's change
//! tracking (each change restarts a debounce timer; after the first send, changes go out
//! at most `debounce` after the previous send; a request from the editor flushes first)
//! types keystrokes at random moments while `agentls.applyEdit` lands edits. Three
//! editors: Neovim's defaults (no versioned edits, 150 ms debounce), the plugin's
//! settings (versioned edits that Neovim skips silently when stale, no debounce), and
//! Helix's (versioned edits refused when stale). The invariant is checked on the
//! editor's own buffer, and the server's view must equal it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agentls_testkit::lsp::LspClient;
use agentls_text::position::{to_char_idx, to_position};
use agentls_text::{Position, PositionEncoding};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use ropey::Rope;
use serde_json::{Value, json};

use crate::support::start;

const ENC: PositionEncoding = PositionEncoding::Utf16;
const LINES: usize = 8;

/// How the simulated editor treats a `WorkspaceEdit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Neovim 0.11 as the README set it up: no `documentChanges`, edits applied at their
    /// positions to whatever the buffer holds.
    Unversioned,
    /// Neovim with `documentChanges`: a stale edit is skipped, answered `applied: true`.
    VersionedSkip,
    /// Helix: a stale edit is refused.
    VersionedRefuse,
}

struct Sim {
    uri: String,
    rope: Rope,
    /// Neovim's `changedtick`: the version of every change, sent or not.
    tick: i32,
    pending: Vec<Value>,
    debounce: Duration,
    last_flush: Option<Instant>,
    timer: Option<Instant>,
    kind: Kind,
    applied_edits: usize,
    /// Ids of the keys typed so far.
    typed: Vec<u32>,
}

impl Sim {
    /// Replaces chars `start..end` and records the change as Neovim does.
    fn change(&mut self, start: usize, end: usize, text: &str, out: &mut Vec<Value>) {
        let s = to_position(&self.rope, start, ENC);
        let e = to_position(&self.rope, end, ENC);
        self.rope.remove(start..end);
        self.rope.insert(start, text);
        self.tick += 1;
        self.pending.push(json!({
            "range": { "start": { "line": s.line, "character": s.character },
                       "end": { "line": e.line, "character": e.character } },
            "text": text,
        }));
        let now = Instant::now();
        let wait = match self.last_flush {
            _ if self.debounce.is_zero() => Duration::ZERO,
            None => self.debounce,
            Some(at) => self.debounce.saturating_sub(now - at),
        };
        if wait.is_zero() {
            self.flush(out);
        } else {
            self.timer = Some(now + wait);
        }
    }

    fn flush(&mut self, out: &mut Vec<Value>) {
        self.timer = None;
        if self.pending.is_empty() {
            return;
        }
        self.last_flush = Some(Instant::now());
        out.push(
            json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": { "uri": self.uri, "version": self.tick },
                "contentChanges": std::mem::take(&mut self.pending),
            }}),
        );
    }

    /// Applies LSP text edits, last first, each one a change of its own.
    fn apply_text_edits(&mut self, edits: &[Value], out: &mut Vec<Value>) {
        let mut resolved: Vec<(usize, usize, String)> = edits
            .iter()
            .map(|e| {
                let pos = |p: &Value| {
                    let p = Position::new(
                        p["line"].as_u64().unwrap_or(0) as u32,
                        p["character"].as_u64().unwrap_or(0) as u32,
                    );
                    to_char_idx(&self.rope, p, ENC).char_idx
                };
                let start = pos(&e["range"]["start"]);
                let end = pos(&e["range"]["end"]).max(start);
                (start, end, e["newText"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        resolved.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (start, end, text) in resolved {
            self.change(start, end, &text, out);
        }
        self.applied_edits += 1;
    }

    fn apply_workspace_edit(&mut self, edit: &Value, out: &mut Vec<Value>) -> Value {
        if let Some(changes) = edit["changes"].as_object() {
            let edits = changes
                .get(&self.uri)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            self.apply_text_edits(&edits, out);
            return json!({ "applied": true });
        }
        for op in edit["documentChanges"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let version = op["textDocument"]["version"].as_i64().unwrap_or(0) as i32;
            let stale = version > 0 && self.tick != version;
            match self.kind {
                Kind::VersionedSkip if stale && self.tick > version => continue,
                Kind::VersionedRefuse if stale => {
                    return json!({ "applied": false, "failureReason": "stale version" });
                }
                _ => {}
            }
            let edits = op["edits"].as_array().cloned().unwrap_or_default();
            self.apply_text_edits(&edits, out);
        }
        json!({ "applied": true })
    }

    /// Types key `k` at the start of line `lNN`, wherever that line is now: a letter,
    /// or a whole new line above it.
    fn type_key(&mut self, k: &Key, out: &mut Vec<Value>) {
        let text = self.rope.to_string();
        // An unversioned edit that landed at stale positions may have cut the line's
        // space away until its repair arrives; the user types into that line all the
        // same, and the repair must keep the key. Only a line cut past recognition is
        // left alone (the key is then not typed, and not expected).
        let Some(at) = text
            .find(&format!("l{:02} ", k.line))
            .or_else(|| text.find(&format!("l{:02}", k.line)))
        else {
            return;
        };
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let char_idx = self.rope.byte_to_char(line_start);
        self.change(char_idx, char_idx, &k.text(), out);
        self.typed.push(k.id);
    }
}

fn lock(sim: &Arc<Mutex<Sim>>) -> MutexGuard<'_, Sim> {
    sim.lock().unwrap_or_else(|p| p.into_inner())
}

/// A keystroke: a letter at the start of line `lNN`, or a new line above it.
#[derive(Debug, Clone)]
struct Key {
    id: u32,
    line: usize,
    newline: bool,
}

impl Key {
    fn ch(&self) -> char {
        char::from_u32(0x3b1 + self.id).unwrap_or('?')
    }

    fn text(&self) -> String {
        if self.newline {
            format!("{}\n", self.ch())
        } else {
            self.ch().to_string()
        }
    }
}

/// One scenario: which lines the agent edits, the user's keystrokes (milliseconds after
/// the first edit is sent), and keystrokes made while an edit is on its way to the editor
/// (typed just before the editor applies the n-th edit it receives).
#[derive(Debug, Clone)]
struct Scenario {
    agent_lines: Vec<usize>,
    keys: Vec<(u64, Key)>,
    in_flight: Vec<Key>,
}

impl Scenario {
    fn all_keys(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter().map(|(_, k)| k).chain(&self.in_flight)
    }
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        proptest::sample::subsequence((0..LINES).collect::<Vec<_>>(), 1..=3),
        proptest::collection::vec((0u64..700, 0..LINES, proptest::bool::weighted(0.3)), 0..12),
        proptest::collection::vec((0..LINES, proptest::bool::weighted(0.4)), 0..4),
    )
        .prop_map(|(agent_lines, mut keys, in_flight)| {
            keys.sort_by_key(|k| k.0);
            let n = keys.len() as u32;
            Scenario {
                agent_lines,
                keys: keys
                    .into_iter()
                    .enumerate()
                    .map(|(i, (at, line, newline))| {
                        (
                            at,
                            Key {
                                id: i as u32,
                                line,
                                newline,
                            },
                        )
                    })
                    .collect(),
                in_flight: in_flight
                    .into_iter()
                    .enumerate()
                    .map(|(i, (line, newline))| Key {
                        id: n + i as u32,
                        line,
                        newline,
                    })
                    .collect(),
            }
        })
}

fn base_text() -> String {
    (0..LINES)
        .map(|l| format!("l{l:02} foo{l:02} bar\n"))
        .collect()
}

/// Runs a scenario; returns the editor's final text, the outcome of every edit, and
/// the server's view of the buffer.
fn run(kind: Kind, debounce: Duration, s: &Scenario, latencies: &mut Vec<Duration>) -> Outcome {
    let (_dir, mut client, sim, uri) = open(kind, debounce, s);
    let results = drive(&mut client, &sim, s, latencies);
    if kind == Kind::Unversioned {
        // The server said why this client's edits take the slower path, and what lifts it.
        let said = client.notifications.iter().any(|n| {
            n["method"] == "window/logMessage"
                && n["params"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("workspaceEdit.documentChanges"))
        });
        assert!(
            said,
            "no advice about documentChanges: {:?}",
            client.notifications
        );
    }
    let server_view = client
        .request_ok(
            "agentls/viewFileText",
            json!({ "textDocument": { "uri": uri } }),
        )
        .unwrap();
    let text = lock(&sim).rope.to_string();
    let applied = lock(&sim).applied_edits;
    let typed = lock(&sim).typed.clone();
    Outcome {
        text,
        results,
        server_view,
        applied,
        typed,
    }
}

/// A server with `a.txt` open in a simulated editor that applies the server's edits
/// (typing the scenario's in-flight keys while each edit is on its way).
fn open(
    kind: Kind,
    debounce: Duration,
    s: &Scenario,
) -> (tempfile::TempDir, LspClient, Arc<Mutex<Sim>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let path = root.join("a.txt");
    let text = base_text();
    std::fs::write(&path, &text).unwrap();
    let mut client: LspClient = start(&[]);
    let caps = match kind {
        Kind::Unversioned => json!({ "general": { "positionEncodings": ["utf-16"] } }),
        _ => json!({
            "general": { "positionEncodings": ["utf-16"] },
            "workspace": { "workspaceEdit": { "documentChanges": true } }
        }),
    };
    let root_uri = format!("file://{}", root.display());
    client
        .initialize(
            caps,
            json!({ "workspaceFolders": [{ "uri": root_uri, "name": "ws" }] }),
        )
        .unwrap();
    let uri = format!("file://{}", path.display());
    let sim = Arc::new(Mutex::new(Sim {
        uri: uri.clone(),
        rope: Rope::from_str(&text),
        tick: 1,
        pending: Vec::new(),
        debounce,
        last_flush: None,
        timer: None,
        kind,
        applied_edits: 0,
        typed: Vec::new(),
    }));
    client
        .send(
            &json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": { "uri": uri, "languageId": "text", "version": 1, "text": text }
            }}),
        )
        .unwrap();
    let handler_sim = sim.clone();
    let mut in_flight_keys = s.in_flight.clone().into_iter();
    client.on_request(move |method, params, outbox| {
        if method != "workspace/applyEdit" {
            return Ok(Value::Null);
        }
        let mut sim = lock(&handler_sim);
        // The user typed while the edit was on its way.
        if let Some(k) = in_flight_keys.next() {
            sim.type_key(&k, outbox);
        }
        Ok(sim.apply_workspace_edit(&params["edit"], outbox))
    });
    (dir, client, sim, uri)
}

/// Types the scenario's keys on their schedule while the agent's edits go out one at a
/// time, until every edit is answered and the editor has been quiet for 400 ms; the
/// answers, each with the line its edit named.
fn drive(
    client: &mut LspClient,
    sim: &Arc<Mutex<Sim>>,
    s: &Scenario,
    latencies: &mut Vec<Duration>,
) -> Vec<(usize, Result<Value, Value>)> {
    let start_at = Instant::now();
    let mut keys = s.keys.iter().peekable();
    let mut agent = s.agent_lines.iter().copied();
    let mut in_flight: Option<(i64, usize, Instant)> = None;
    let mut results: Vec<(usize, Result<Value, Value>)> = Vec::new();
    let mut next_agent = agent.next();
    let mut settled_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        // The agent's next edit goes out as soon as the previous one answered. Sending
        // a request flushes the editor's pending changes first, as Neovim's client does.
        if in_flight.is_none()
            && let Some(line) = next_agent.take()
        {
            let mut out = Vec::new();
            lock(sim).flush(&mut out);
            for m in &out {
                client.send(m).unwrap();
            }
            let edit = json!({ "path": "a.txt", "old_string": format!("foo{line:02}"),
                               "new_string": format!("AGENT{line:02}") });
            let id = client
                .send_request(
                    "workspace/executeCommand",
                    json!({ "command": "agentls.applyEdit",
                            "arguments": [{ "format": "str_replace", "edit": edit.to_string() }] }),
                )
                .unwrap();
            in_flight = Some((id, line, now));
        }
        // Keystrokes whose time has come.
        let mut out = Vec::new();
        while let Some((at, key)) = keys.peek() {
            if start_at + Duration::from_millis(*at) > now {
                break;
            }
            lock(sim).type_key(key, &mut out);
            keys.next();
        }
        {
            let mut g = lock(sim);
            if g.timer.is_some_and(|t| t <= now) {
                g.flush(&mut out);
            }
        }
        for m in &out {
            client.send(m).unwrap();
        }
        let next_key = keys
            .peek()
            .map(|(at, _)| start_at + Duration::from_millis(*at));
        let timer = lock(sim).timer;
        let wake = [next_key, timer, Some(now + Duration::from_millis(20))]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now);
        if let Some(msg) = client.pump(wake).unwrap()
            && let Some((id, line, sent)) = in_flight
            && msg["id"] == json!(id)
        {
            latencies.push(sent.elapsed());
            let result = match msg.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(msg["result"].clone()),
            };
            results.push((line, result));
            in_flight = None;
            next_agent = agent.next();
        }
        let done = in_flight.is_none() && next_agent.is_none() && keys.peek().is_none();
        if done && lock(sim).timer.is_none() {
            let since = *settled_since.get_or_insert(Instant::now());
            // Quiet for a while: whatever the server does after an answer is done.
            if since.elapsed() > Duration::from_millis(400) {
                break;
            }
        } else {
            settled_since = None;
        }
        assert!(
            start_at.elapsed() < Duration::from_secs(40),
            "scenario did not settle: {s:?}"
        );
    }
    results
}

struct Outcome {
    text: String,
    results: Vec<(usize, Result<Value, Value>)>,
    server_view: Value,
    applied: usize,
    typed: Vec<u32>,
}

/// The invariant: every line holds its keystrokes, newest first, then its own text, with
/// the agent's word exactly where it was meant when the edit was reported landed, and
/// the original word when it was reported not landed; the server sees the same text.
fn check(s: &Scenario, o: &Outcome) -> Result<(), TestCaseError> {
    // Keys were typed in id order within each kind; a key typed while an edit was in
    // flight may have been typed before or after the timed ones, so the expectation is
    // built from the order the keys actually reached the buffer: their order in the
    // editor's text, checked to be a permutation-free reading per line below.
    let mut want = String::new();
    let typed: Vec<&Key> = s.all_keys().filter(|k| o.typed.contains(&k.id)).collect();
    for l in 0..LINES {
        let mut lines_above: Vec<&Key> = typed
            .iter()
            .copied()
            .filter(|k| k.line == l && k.newline)
            .collect();
        let mut letters: Vec<&Key> = typed
            .iter()
            .copied()
            .filter(|k| k.line == l && !k.newline)
            .collect();
        // A key's place depends on when it was typed relative to the others of its line.
        let pos = |k: &Key| o.text.find(k.ch()).unwrap_or(usize::MAX);
        lines_above.sort_by_key(|k| pos(k));
        letters.sort_by_key(|k| pos(k));
        for k in &lines_above {
            want.push_str(&format!("{}\n", k.ch()));
        }
        for k in &letters {
            want.push(k.ch());
        }
        let landed = o
            .results
            .iter()
            .find(|(al, _)| *al == l)
            .map(|(_, r)| r.is_ok());
        let word = match landed {
            Some(true) => format!("AGENT{l:02}"),
            _ => format!("foo{l:02}"),
        };
        want.push_str(&format!("l{l:02} {word} bar\n"));
    }
    prop_assert_eq!(
        o.text.as_str(),
        want.as_str(),
        "edits: {:?}; scenario {:?}",
        o.results,
        s
    );
    // Typing order within a line is newest first for letters, oldest first for lines.
    for l in 0..LINES {
        let timed: Vec<&Key> = s
            .keys
            .iter()
            .map(|(_, k)| k)
            .filter(|k| k.line == l && o.typed.contains(&k.id))
            .collect();
        for pair in timed.windows(2) {
            let (a, b) = (o.text.find(pair[0].ch()), o.text.find(pair[1].ch()));
            if pair[0].newline == pair[1].newline {
                let later_first = !pair[0].newline;
                prop_assert_eq!(
                    later_first,
                    b < a,
                    "keys {:?} out of order in {:?}",
                    pair,
                    o.text
                );
            }
        }
    }
    let server_text = o.server_view["text"].as_str().unwrap_or_default();
    prop_assert_eq!(server_text, o.text.as_str(), "the server's view differs");
    let _ = o.applied;
    Ok(())
}

fn property(kind: Kind, debounce: Duration, cases: u32) {
    // `PROPTEST_CASES` asks for a longer hunt than CI's few cases.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(cases);
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 0,
        failure_persistence: None,
        ..Config::default()
    });
    let latencies = std::cell::RefCell::new(Vec::new());
    let not_landed = std::cell::Cell::new(0);
    let repaired = std::cell::Cell::new(0);
    let result = runner.run(&scenario(), |s| {
        let o = run(kind, debounce, &s, &mut latencies.borrow_mut());
        not_landed.set(not_landed.get() + o.results.iter().filter(|(_, r)| r.is_err()).count());
        repaired.set(
            repaired.get()
                + o.results
                    .iter()
                    .filter(|(_, r)| {
                        r.as_ref()
                            .is_ok_and(|v| v["repaired"].as_array().is_some_and(|a| !a.is_empty()))
                    })
                    .count(),
        );
        check(&s, &o)
    });
    let (not_landed, repaired) = (not_landed.get(), repaired.get());
    let mut latencies = latencies.into_inner();
    latencies.sort();
    let median = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default();
    let p90 = latencies
        .get(latencies.len() * 9 / 10)
        .copied()
        .unwrap_or_default();
    eprintln!(
        "{kind:?} (debounce {debounce:?}): {} edits, median {median:?}, p90 {p90:?} per edit (typing included); {not_landed} reported not landed, {repaired} repaired",
        latencies.len()
    );
    if let Err(e) = result {
        panic!("{kind:?}: {e}");
    }
}

#[test]
fn neovim_defaults_lose_no_keystroke_and_misplace_no_edit() {
    property(Kind::Unversioned, Duration::from_millis(150), 10);
}

#[test]
fn neovim_with_versioned_edits_and_no_debounce_loses_nothing() {
    property(Kind::VersionedSkip, Duration::ZERO, 10);
}

#[test]
fn neovim_with_versioned_edits_and_its_debounce_loses_nothing() {
    property(Kind::VersionedSkip, Duration::from_millis(150), 8);
}

#[test]
fn helix_refusing_stale_edits_loses_nothing() {
    property(Kind::VersionedRefuse, Duration::ZERO, 8);
}

#[test]
fn unversioned_without_debounce_loses_nothing() {
    property(Kind::Unversioned, Duration::ZERO, 8);
}

/// The user types in the instant between the editor getting an edit and applying it,
/// three times in a row: the edit and its first two repairs each land at stale
/// positions. Each is seen and moved on; the edit ends where it was meant and no
/// keystroke or line of the user's is touched (CI once saw a repair that landed at
/// stale positions left half-applied in the user's lines).
#[test]
fn repairs_that_land_at_stale_positions_are_repaired_too() {
    let key = |id, line, newline| Key { id, line, newline };
    let s = Scenario {
        agent_lines: vec![7],
        keys: vec![],
        in_flight: vec![key(0, 0, true), key(1, 4, true), key(2, 4, true)],
    };
    let o = run(Kind::Unversioned, Duration::ZERO, &s, &mut Vec::new());
    assert!(
        o.results.iter().all(|(_, r)| r.is_ok()),
        "{:?}; text {:?}",
        o.results,
        o.text
    );
    if let Err(e) = check(&s, &o) {
        panic!("{e}");
    }
}

/// CI's failing case: a key typed on the line of an edit in flight makes the edit land
/// at stale positions in Neovim's default setup, cutting `l06 foo06` to `l06AGENT066`,
/// and the user types into that line before the repair arrives. The repair keeps the
/// key, and every key stays in typing order.
#[test]
fn a_key_typed_into_a_line_cut_by_a_stale_edit_is_kept() {
    let key = |id, line| Key {
        id,
        line,
        newline: false,
    };
    let s = Scenario {
        agent_lines: vec![6, 7],
        keys: vec![
            (55, key(0, 6)),
            (103, key(1, 7)),
            (368, key(2, 3)),
            (585, key(3, 6)),
            (641, key(4, 3)),
        ],
        in_flight: vec![key(5, 6), key(6, 3)],
    };
    let o = run(
        Kind::Unversioned,
        Duration::from_millis(150),
        &s,
        &mut Vec::new(),
    );
    assert_eq!(o.typed.len(), 7, "a key found no line: {:?}", o.text);
    if let Err(e) = check(&s, &o) {
        panic!("{e}");
    }
}

/// What waiting for a quiet buffer costs a client that cannot check versions: an edit
/// to a buffer left alone goes out at once; one right after a keystroke waits for the
/// quiet spell (160 ms, at most 190 ms). Printed; bounds are generous (shared machine).
#[test]
fn unversioned_edit_latency_figures() {
    let idle = Scenario {
        agent_lines: vec![1, 2, 3],
        keys: vec![],
        in_flight: vec![],
    };
    let mut idle_lat = Vec::new();
    let o = run(Kind::Unversioned, Duration::ZERO, &idle, &mut idle_lat);
    assert!(o.results.iter().all(|(_, r)| r.is_ok()), "{:?}", o.results);
    // A keystroke lands while the first edit is in flight, so the second is asked for
    // right after it.
    let typing = Scenario {
        agent_lines: vec![1, 2],
        keys: vec![(
            0,
            Key {
                id: 0,
                line: 6,
                newline: false,
            },
        )],
        in_flight: vec![],
    };
    let mut typing_lat = Vec::new();
    let o = run(Kind::Unversioned, Duration::ZERO, &typing, &mut typing_lat);
    assert!(o.results.iter().all(|(_, r)| r.is_ok()), "{:?}", o.results);
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "unversioned edit latency: idle buffer {:?} ms; first edit, then one right after a keystroke {:?} ms",
        idle_lat
            .iter()
            .map(ms)
            .map(|m| m.round())
            .collect::<Vec<_>>(),
        typing_lat
            .iter()
            .map(ms)
            .map(|m| m.round())
            .collect::<Vec<_>>(),
    );
    assert!(idle_lat.iter().all(|d| *d < Duration::from_secs(2)));
    assert!(typing_lat.iter().all(|d| *d < Duration::from_secs(2)));
}

//! Renames without the model: "rename the type `Tokenizer` to `Lexer`" is read from
//! the task's words ([`asked`]) and carried out over every indexed source file by
//! identifier boundaries ([`apply`]), then verified like any candidate. A small model
//! cannot find every use across files; the words and the index can, and the tests say
//! whether the result still holds together.

use std::path::PathBuf;
use std::time::Instant;

use agentls_index::SymbolKind;
use agentls_tools::ToolContext;
use serde_json::json;

use super::ask::ModelUse;
use super::config::SolveConfig;
use super::land::{FileChange, Made, settle};
use super::progress::Progress;
use super::report::Solved;
use super::strategy::{Cx, Plan, Scene, Strategy, Work};
use super::verify::Verifier;
use crate::event::EventSender;

/// One name to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    /// The name as the code has it now.
    pub from: String,
    /// The name it gets.
    pub to: String,
}

/// A rename the workspace makes possible, before the model confirms it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The names.
    pub rename: Rename,
    /// The new name is set off as code in the task or shaped as only code names are
    /// (`loadUser`, `fetch_all`): enough alone where no model can confirm.
    pub strong: bool,
    /// The two names stand within [`NEAR`] words with no other defined name between
    /// them. A pair that does not ("Now that Registry.Lookup chases aliases … let's
    /// call it `Resolve`") is taken only when the model confirms it.
    pub near: bool,
    /// Words between the two names, and whether the new one comes first: nearer
    /// pairs, then a new name after the old one, are taken first.
    pub order: (usize, bool),
}

/// Most words between the two names of a rename in the task.
const NEAR: usize = 4;

/// Most words between a member and the holder written beside it ("Lookup on
/// Registry", "Registry's Lookup").
const QUALIFIER: usize = 2;

/// The renames the task may ask for, read from what the workspace holds: a name the
/// task mentions that the index defines (`defined`), paired with the nearest name the
/// task mentions that the workspace does not know at all (`known`), no other defined
/// name between them, both starting in the same case (a type stays a type). However
/// the task is phrased ("rename X to Y", "let's call X `Y` instead", "X should be
/// named Y"), the pair is the same; which candidates the task really asks for, the
/// model confirms ([`Renaming`]). A new name set off as code (or shaped as only code
/// names are) also pairs with a defined name further away, or past other defined
/// names (the task says "it" in between), when that name is not a path's head
/// (`Registry` of `Registry.Lookup`): such a pair is not [`Candidate::near`].
///
/// A defined name written beside a member it holds (`owns`: "the method Lookup on
/// Registry", "Registry's Lookup") says whose member is meant: it is not renamed
/// there, and the pair's words are counted from whichever of the two stands nearer
/// the new name ("Lookup on Registry should be called Resolve" renames `Lookup`).
pub fn candidates(
    task: &str,
    defined: impl Fn(&str) -> bool,
    known: impl Fn(&str) -> bool,
    owns: impl Fn(&str, &str) -> bool,
) -> Vec<Candidate> {
    let mentions = super::mention::mentions(task);
    let is_defined: Vec<bool> = mentions.iter().map(|m| defined(&m.name)).collect();
    // For each mention, the member mention beside it that it holds, if any.
    let qualifies: Vec<Option<usize>> = mentions
        .iter()
        .enumerate()
        .map(|(q, holder)| {
            if !is_defined[q] {
                return None;
            }
            (0..mentions.len()).find(|&m| {
                m != q
                    && is_defined[m]
                    && mentions[m].name != holder.name
                    && mentions[m].word.abs_diff(holder.word) <= QUALIFIER
                    && owns(&holder.name, &mentions[m].name)
            })
        })
        .collect();
    let mut out: Vec<Candidate> = Vec::new();
    for (f, from) in mentions.iter().enumerate() {
        if !is_defined[f] || qualifies[f].is_some() {
            continue;
        }
        let upper = |s: &str| s.starts_with(|c: char| c.is_ascii_uppercase());
        // `from` and the holders written beside it: one reference.
        let unit: Vec<usize> = std::iter::once(f)
            .chain((0..mentions.len()).filter(|&q| qualifies[q] == Some(f)))
            .collect();
        for (t, to) in mentions.iter().enumerate() {
            let Some(&nearest) = unit
                .iter()
                .min_by_key(|&&u| mentions[u].word.abs_diff(to.word))
            else {
                continue;
            };
            let distance = to.word.abs_diff(mentions[nearest].word);
            let (lo, hi) = (nearest.min(t), nearest.max(t));
            let near = distance <= NEAR
                && !(lo + 1..hi)
                    .any(|i| is_defined[i] && mentions[i].name != from.name && !unit.contains(&i));
            if is_defined[t]
                || distance == 0
                || !(near || (from.last && (to.marked || super::mention::code_shaped(&to.name))))
                || upper(&from.name) != upper(&to.name)
                || (to.initial && !to.marked)
                // Written inside a call's arguments anywhere in the task
                // (`NewServer(cfg Config)`): a new parameter's type, not a new name.
                || mentions.iter().any(|m| m.in_args && m.name == to.name)
                || to.name == from.name
                || known(&to.name)
            {
                continue;
            }
            let candidate = Candidate {
                rename: Rename {
                    from: from.name.clone(),
                    to: to.name.clone(),
                },
                strong: to.marked
                    || super::mention::code_shaped(&to.name)
                    || (upper(&to.name) && !to.initial),
                near,
                order: (distance, to.word < from.word),
            };
            match out.iter().position(|c| c.rename == candidate.rename) {
                // A name mentioned twice: its nearest pairing stands.
                Some(at) if candidate.order < out[at].order => out[at] = candidate,
                Some(_) => {}
                None => out.push(candidate),
            }
        }
    }
    // Nearest first, a name after the old one before one as near before it.
    out.sort_by(|a, b| (&a.rename.from, a.order).cmp(&(&b.rename.from, b.order)));
    out
}

/// Whether the match of `from` at `start..end` of `text` stands on identifier
/// boundaries. A name starting with a capital (a type) also matches as a part of a
/// camel-case name (`NewTokenizer`, `TokenizerError`), whose other parts stay; any
/// other name matches whole only, so `fetchUser` leaves `fetchUsers` alone.
fn on_boundaries(text: &str, start: usize, end: usize, from: &str) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let capital = from.starts_with(|c: char| c.is_ascii_uppercase());
    let left = match before {
        None => true,
        Some(c) if !super::mention::is_ident_char(c) => true,
        Some(c) => capital && (c.is_ascii_lowercase() || c.is_ascii_digit()),
    };
    let right = match after {
        None => true,
        Some(c) if !super::mention::is_ident_char(c) => true,
        Some(c) => capital && c.is_ascii_uppercase(),
    };
    left && right
}

/// `text` with every rename applied in one pass (so `A → B, B → C` never chains;
/// longer names are tried first), with the count of names changed; `None` when
/// nothing changed.
pub fn apply(text: &str, renames: &[Rename]) -> Option<(String, usize)> {
    let mut order: Vec<&Rename> = renames.iter().filter(|r| !r.from.is_empty()).collect();
    order.sort_by_key(|r| std::cmp::Reverse(r.from.len()));
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < text.len() {
        let hit = order.iter().find(|r| {
            text[i..].starts_with(r.from.as_str())
                && on_boundaries(text, i, i + r.from.len(), &r.from)
        });
        match hit {
            Some(r) => {
                out.push_str(&text[copied..i]);
                out.push_str(&r.to);
                i += r.from.len();
                copied = i;
                count += 1;
            }
            None => {
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out.push_str(&text[copied..]);
    (count > 0).then_some((out, count))
}

/// The model-free rename: a name the index defines, changed to one the workspace
/// does not know, on identifier boundaries in every indexed file (tests and comments
/// included), verified in the overlay and landed as one edit.
pub(super) struct Renaming;

#[async_trait::async_trait]
impl Strategy for Renaming {
    fn name(&self) -> &'static str {
        "rename"
    }

    fn plan(&self, scene: &Scene<'_>) -> Option<Plan> {
        let index = scene.index;
        let defined = |n: &str| !index.definitions(n).is_empty();
        let owns = |holder: &str, member: &str| {
            index.definitions(member).iter().any(|d| {
                d.container.as_deref() == Some(holder)
                    || (d.kind == SymbolKind::Method
                        && scene.read(&d.path).is_some_and(|text| {
                            text.lines()
                                .nth(d.span.start.line as usize)
                                .and_then(go_receiver)
                                == Some(holder)
                        }))
            })
        };
        let found = candidates(
            scene.task,
            defined,
            |n| defined(n) || !index.references(n).is_empty(),
            owns,
        );
        // A new name already written in a file the rename rewrites would merge two
        // names into one: not a rename.
        let found: Vec<Candidate> = found
            .into_iter()
            .filter(|c| !occurs_where_used(scene, &c.rename))
            .collect();
        if found.is_empty() {
            return None;
        }
        let why = found
            .iter()
            .map(|c| {
                format!(
                    "`{}` is defined here, `{}` nowhere",
                    c.rename.from, c.rename.to
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        Some(Plan {
            why,
            work: Box::new(found),
        })
    }

    async fn run(&self, cx: &Cx<'_>, work: Work) -> Option<Solved> {
        let Ok(found) = work.downcast::<Vec<Candidate>>().map(|f| *f) else {
            return None;
        };
        let mut used = ModelUse::default();
        let renames = confirmed(cx, &mut used, found).await;
        if renames.is_empty() {
            tracing::info!("solve: no rename confirmed");
            return None;
        }
        let mut solved = carry_out(cx.ctx, cx.task, cx.config, cx.events, renames).await?;
        solved.calls += used.calls;
        solved.model_ms += used.model_ms;
        Some(solved)
    }
}

/// The type a Go method's first line names as its receiver: `Registry` of `func (r
/// *Registry) Lookup(…` or of `func (r Registry[T]) …`. A Go method is not nested in
/// its type, so the index gives it no container.
fn go_receiver(line: &str) -> Option<&str> {
    let inside = line.strip_prefix("func")?.trim_start().strip_prefix('(')?;
    let receiver = inside[..inside.find(')')?].split_whitespace().last()?;
    let name = receiver.trim_start_matches('*');
    let name = name.split('[').next().unwrap_or(name);
    super::mention::is_identifier(name).then_some(name)
}

/// Whether `rename.to` is already written in a file where `rename.from` is defined
/// or used.
fn occurs_where_used(scene: &Scene<'_>, rename: &Rename) -> bool {
    let mut paths: Vec<std::sync::Arc<std::path::Path>> = scene
        .index
        .definitions(&rename.from)
        .into_iter()
        .map(|d| d.path)
        .chain(
            scene
                .index
                .references(&rename.from)
                .into_iter()
                .map(|r| r.path),
        )
        .collect();
    paths.sort();
    paths.dedup();
    paths.iter().any(|p| {
        scene.read(p).is_some_and(|text| {
            apply(
                &text,
                &[Rename {
                    from: rename.to.clone(),
                    to: rename.from.clone(),
                }],
            )
            .is_some()
        })
    })
}

/// The candidates the task really asks for, one old name per new name and one new
/// name per old name. The strong pairs that stand near (see [`Candidate`]) are taken
/// by the workspace and the task's layout alone, nearest first and a new name after
/// the old one before one before it ("rename Tokenizer to Lexer and NewTokenizer to
/// NewLexer" pairs `NewTokenizer` with `NewLexer`, not with the `Lexer` just before
/// it). A far pair is taken only where neither of its names is taken yet and the
/// model, where it can score, finds it more likely asked than not.
async fn confirmed(cx: &Cx<'_>, used: &mut ModelUse, found: Vec<Candidate>) -> Vec<Rename> {
    let (mut taken, far) = nearest(found);
    for r in &taken {
        tracing::info!("solve: rename {} → {}: the nearest pair", r.from, r.to);
    }
    // The model's margins between the two readings are small (-0.04 to 0.10 nats
    // on the suite's renames, right and wrong alike): near pairs do not ask it.
    let mut best: Vec<(Rename, f64)> = Vec::new();
    for c in far {
        // Two readings to choose from, not a yes/no question: the 0.5B model says no
        // to every rename asked that way.
        let (from, to) = (&c.rename.from, &c.rename.to);
        let renamed = format!("rename `{from}` so that it is called `{to}` from now on");
        let kept = format!("keep the name `{from}` as it is");
        let Some(margin) = used
            .choose(cx.provider, cx.task, &renamed, &kept, &cx.ctx.cancel)
            .await
        else {
            continue;
        };
        tracing::info!("solve: rename {from} → {to}: over keeping it by {margin:.2}");
        if margin < 0.0
            || best
                .iter()
                .any(|(r, m)| (r.from == c.rename.from || r.to == c.rename.to) && *m >= margin)
        {
            continue;
        }
        best.retain(|(r, _)| r.from != c.rename.from && r.to != c.rename.to);
        best.push((c.rename, margin));
    }
    taken.extend(best.into_iter().map(|(r, _)| r));
    taken
}

/// The strong near pairs of `found`, taken nearest first, one per old name and one
/// per new name; and the strong far pairs whose names none of those took.
fn nearest(found: Vec<Candidate>) -> (Vec<Rename>, Vec<Candidate>) {
    // A new name in plain words ("rename count to total") is not taken without the
    // marks code has: a wrong rename passes the tests it renames.
    let (mut near, far): (Vec<Candidate>, Vec<Candidate>) =
        found.into_iter().filter(|c| c.strong).partition(|c| c.near);
    near.sort_by_key(|c| c.order);
    let free =
        |taken: &[Rename], r: &Rename| !taken.iter().any(|t| t.from == r.from || t.to == r.to);
    let mut taken: Vec<Rename> = Vec::new();
    for c in near {
        if free(&taken, &c.rename) {
            taken.push(c.rename);
        }
    }
    let far = far
        .into_iter()
        .filter(|c| free(&taken, &c.rename))
        .collect();
    (taken, far)
}

/// Carries out `renames` over every indexed source file (protected paths aside),
/// verifies the result in the overlay (syntax, the project's tests as they were
/// before) and lands it as one edit. `None` when no name occurs. A report with no
/// answer when the result breaks a check.
async fn carry_out(
    ctx: &ToolContext,
    task: &str,
    config: &SolveConfig,
    events: Option<&EventSender>,
    renames: Vec<Rename>,
) -> Option<Solved> {
    let started = Instant::now();
    let (index, store, limits) = (ctx.index.clone(), ctx.store.clone(), ctx.read_limits);
    let (root, protected) = (ctx.root.clone(), super::localise::protected(task));
    let (renames, changes, count) = tokio::task::spawn_blocking(move || {
        let index = index.read().unwrap_or_else(|p| p.into_inner());
        let mut paths: Vec<PathBuf> = index
            .paths()
            .filter(|p| {
                !super::localise::is_protected(p.strip_prefix(&root).unwrap_or(p), &protected)
            })
            .map(|p| p.to_path_buf())
            .collect();
        paths.sort();
        let mut changes = Vec::new();
        let mut count = 0;
        for path in paths {
            let Ok(src) = store.read(&path, &limits) else {
                continue;
            };
            let before = src.rope.to_string();
            if let Some((after, n)) = apply(&before, &renames) {
                count += n;
                changes.push(FileChange {
                    path,
                    before,
                    after,
                });
            }
        }
        (renames, changes, count)
    })
    .await
    .ok()?;
    if changes.is_empty() {
        tracing::info!("solve: no rename of a defined name to carry out");
        return None;
    }
    let root = &ctx.root;
    let shown = |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let what = renames
        .iter()
        .map(|r| format!("{} → {}", r.from, r.to))
        .collect::<Vec<_>>()
        .join(", ");
    let files: Vec<String> = changes.iter().map(|c| shown(&c.path)).collect();
    let target = format!(
        "rename {what}: {count} name(s) in {} file(s) ({})",
        files.len(),
        files.join(", ")
    );
    let progress = Progress::new(events);
    progress.start(json!({ "targets": [target.clone()], "samples": 1 }));
    progress.line(target.clone());

    let verifier = Verifier::detected(ctx).await;
    let baseline = verifier.verify_files(&[]).await;
    progress.line(format!("the workspace as it is: {}", baseline.phrase()));
    let laid: Vec<(&std::path::Path, &str)> = changes
        .iter()
        .map(|c| (c.path.as_path(), c.after.as_str()))
        .collect();
    let verdict = verifier.verify_files(&laid).await;
    progress.line(format!("renamed: {}", verdict.phrase()));

    let made = Made {
        target,
        done: format!("Renamed {what}: {count} name(s) in {} file(s)", files.len()),
        workspace: "the renamed workspace",
        tests: verifier.checks().tests.clone(),
        started,
        verify_ms: verifier.spent_ms(),
    };
    let solved = settle(ctx, config, &progress, made, (&baseline, &verdict), changes).await;
    Some(solved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(from: &str, to: &str) -> Rename {
        Rename {
            from: from.into(),
            to: to.into(),
        }
    }

    /// The candidates of a workspace defining `defined` and nothing else, with no
    /// member held by another.
    fn paired(task: &str, defined: &[&str]) -> Vec<Candidate> {
        candidates(
            task,
            |n| defined.contains(&n),
            |n| defined.contains(&n),
            |_, _| false,
        )
    }

    /// The renames a workspace defining `defined` (and knowing `known` besides)
    /// finds in `task`: the strong ones, the nearest per old name, as with no model.
    fn found(task: &str, defined: &[&str], known: &[&str]) -> Vec<Rename> {
        let mut out: Vec<Rename> = Vec::new();
        for c in candidates(
            task,
            |n| defined.contains(&n),
            |n| defined.contains(&n) || known.contains(&n),
            |holder, member| holder == "Registry" && member == "Lookup",
        ) {
            if c.strong && c.near && !out.iter().any(|r| r.from == c.rename.from) {
                out.push(c.rename);
            }
        }
        out
    }

    #[test]
    fn renames_come_from_the_workspace_whatever_the_phrasing() {
        let defined = ["Lookup", "Registry", "NewRegistry"];
        for task in [
            "Let's call Registry.Lookup `Resolve` instead, rename the method and update whatever calls it.",
            "Rename Registry.Lookup to Resolve everywhere.",
            "Registry.Lookup should be named Resolve; nothing else changes.",
            "The method `Lookup` is badly named: `Resolve` says what it does. Change it across the module.",
            // The holder written beside its member says whose `Lookup`; it is not
            // what is renamed (this once renamed `Registry`).
            "The method Lookup on Registry should be called Resolve from now on; fix every place that uses it.",
            "Registry's Lookup should be called Resolve.",
            "The Lookup of Registry should be named Resolve.",
        ] {
            assert_eq!(
                found(task, &defined, &[]),
                vec![r("Lookup", "Resolve")],
                "{task}"
            );
        }
        let two = found(
            "In this module, rename the type Tokenizer to Lexer and its constructor NewTokenizer to NewLexer, everywhere (tests and comments). Behaviour must not change.",
            &["Tokenizer", "NewTokenizer"],
            &[],
        );
        assert_eq!(
            two,
            vec![r("NewTokenizer", "NewLexer"), r("Tokenizer", "Lexer")]
        );
        assert_eq!(
            found(
                "`fetchUser()` should become `loadUser()` in every file.",
                &["fetchUser"],
                &["fetchUsers"]
            ),
            vec![r("fetchUser", "loadUser")]
        );
    }

    /// A new name set off as code pairs with the defined name the task says "it" of,
    /// past other defined names, but only for the model to confirm; a path's head
    /// and a name in the other case do not pair.
    #[test]
    fn a_far_new_name_in_code_marks_pairs_for_the_model_to_confirm() {
        let task = "Now that Registry.Lookup chases aliases it's really resolving names, not looking them up. Let's call it `Resolve` instead and fix up everything in the module that uses the old name.";
        let defined = ["Registry", "Lookup", "aliases"];
        let c = paired(task, &defined);
        let far: Vec<_> = c.iter().filter(|c| !c.near).map(|c| &c.rename).collect();
        assert_eq!(far, vec![&r("Lookup", "Resolve")], "{c:?}");
        assert!(
            c.iter().all(|c| c.rename.to != "Resolve" || !c.near),
            "{c:?}"
        );
        // Without the model, nothing far is taken.
        assert!(found(task, &defined, &[]).is_empty());
        // However the far new name is set off, or shaped as code alone.
        for (task, defined, want) in [
            (
                "getCart() quietly creates a cart when the user has none, so \"get\" is misleading. I'd like it to be called ensureCart — update the store, the routes that use it and the tests.",
                &["getCart", "cart"][..],
                r("getCart", "ensureCart"),
            ),
            (
                "parse_cfg is a bad name now that it also applies defaults and converts types. Going forward it's `load_config`; please switch everything that uses it over.",
                &["parse_cfg", "defaults"][..],
                r("parse_cfg", "load_config"),
            ),
        ] {
            let c = paired(task, defined);
            assert!(
                c.iter().any(|c| c.rename == want && c.strong && !c.near),
                "{task}: {c:?}"
            );
        }
        // A name the task writes inside a call's arguments is a new parameter's type.
        let sig = "srv.NewServer(addr string, timeoutSeconds int, verbose bool) is getting unwieldy. Replace it with NewServer(cfg Config), where Config is a new struct in package srv with the fields Addr string, Timeout time.Duration and Verbose bool.";
        let c = candidates(
            sig,
            |n| n == "NewServer",
            |n| n == "NewServer",
            |_, _| false,
        );
        assert!(c.iter().all(|c| c.rename.to != "Config"), "{c:?}");
        // Unmarked and a word like any other, the far name does not pair at all.
        let plain = task.replace('`', "");
        let c = paired(&plain, &defined);
        assert!(c.iter().all(|c| c.near), "{c:?}");
    }

    /// Two renames side by side: each old name takes the nearest new name after it,
    /// never the `Lexer` just before `NewTokenizer` (the model's margin once landed
    /// `NewTokenizer → Lexer`).
    #[test]
    fn side_by_side_renames_pair_each_name_with_its_own() {
        let task = "In this module, rename the type Tokenizer to Lexer and its constructor NewTokenizer to NewLexer, everywhere (tests and comments). Behaviour must not change.";
        let defined = ["Tokenizer", "NewTokenizer"];
        let c = paired(task, &defined);
        assert!(
            c.iter().any(|c| c.rename == r("NewTokenizer", "Lexer")),
            "{c:?}"
        );
        let (mut taken, far) = nearest(c);
        taken.sort_by(|a, b| a.from.cmp(&b.from));
        assert_eq!(
            taken,
            vec![r("NewTokenizer", "NewLexer"), r("Tokenizer", "Lexer")]
        );
        assert!(far.is_empty(), "{far:?}");
    }

    #[test]
    fn a_go_method_names_its_receiver_type() {
        assert_eq!(
            go_receiver("func (r *Registry) Lookup(name string) (string, error) {"),
            Some("Registry")
        );
        assert_eq!(go_receiver("func (s Set[T]) Has(v T) bool {"), Some("Set"));
        assert_eq!(go_receiver("func Lookup(name string) string {"), None);
        assert_eq!(go_receiver("type Registry struct {"), None);
    }

    /// A holder renamed on its own is still a rename of the holder.
    #[test]
    fn a_holder_alone_is_renamed() {
        assert_eq!(
            found(
                "Rename Registry to Catalog across the module; the method Lookup keeps its name.",
                &["Registry", "Lookup"],
                &[]
            ),
            vec![r("Registry", "Catalog")]
        );
    }

    #[test]
    fn no_rename_where_the_workspace_has_none() {
        // Nothing defined is named, or the new name exists already.
        assert!(found("Fix add so that it adds.", &["add"], &[]).is_empty());
        assert!(found("Rename Lookup to Find.", &["Lookup"], &["Find"]).is_empty());
        // A flag, a message and a lower-case word are no new names without the model.
        assert!(
            found(
                "Add a --dev switch that turns on debug logging.",
                &["debug"],
                &[]
            )
            .is_empty()
        );
        assert!(
            found(
                "Make `Parse` report `line 4: unknown key` for typos.",
                &["Parse"],
                &[]
            )
            .is_empty()
        );
        // A type named beside a function is not a rename of the function.
        let c = candidates(
            "Replace NewServer(addr) with NewServer(cfg Config).",
            |n| n == "NewServer",
            |_| false,
            |_, _| false,
        );
        assert!(c.is_empty(), "{c:?}");
    }

    #[test]
    fn names_change_on_identifier_boundaries_only() {
        let renames = [r("fetchUser", "loadUser")];
        let (text, n) = apply(
            "export function fetchUser(id) {}\nfetchUsers(); prefetchUser(); // fetchUser here\n",
            &renames,
        )
        .unwrap();
        assert_eq!(
            text,
            "export function loadUser(id) {}\nfetchUsers(); prefetchUser(); // loadUser here\n"
        );
        assert_eq!(n, 2);
        assert_eq!(apply("nothing to see", &renames), None);
    }

    #[test]
    fn a_type_name_changes_inside_camel_case_names_too() {
        let renames = [r("Tokenizer", "Lexer"), r("NewTokenizer", "NewLexer")];
        let (text, _) = apply(
            "type Tokenizer struct{}\nfunc NewTokenizer() *Tokenizer {}\nvar e TokenizerError\nvar t Tokenizers\nvar x HTTPTokenizer\n",
            &renames,
        )
        .unwrap();
        assert_eq!(
            text,
            "type Lexer struct{}\nfunc NewLexer() *Lexer {}\nvar e LexerError\nvar t Tokenizers\nvar x HTTPTokenizer\n"
        );
    }

    #[test]
    fn renames_never_chain() {
        let (text, n) = apply("a b", &[r("a", "b"), r("b", "c")]).unwrap();
        assert_eq!((text.as_str(), n), ("b c", 2));
    }
}

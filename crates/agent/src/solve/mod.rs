//! The small-model pipeline (Agentless-style): the way a session solves a change
//! request with a model that cannot drive the tool loop. Several strategies share one
//! trait ([`strategy::Strategy`]) and one list ([`strategies`]); each decides from
//! what the workspace holds whether it applies (never from the task's wording), and
//! they run cheapest first until one lands a verified change:
//! - [`rename`]: a name the index defines, changed to one the workspace does not
//!   know, everywhere, without the model (which only confirms the reading);
//! - [`reword`]: a message the task quotes and a string literal holds, rewritten in
//!   each literal's idiom, without the model;
//! - [`characterise`]: tests for code to keep, the model proposing calls and the code
//!   giving the values;
//! - [`edit_set`]: several small files written whole together (a function and its
//!   callers, the code and the data file it reads);
//! - [`Rewriting`]: one function (or one short file), written whole.
//!
//! The model-written ones localise without the model ([`localise`]), ask for whole
//! functions or files in one fenced block ([`generate`]), sample several candidates
//! (the first greedy, the rest at a temperature with distinct seeds; the shared
//! prompt stays in the local model's KV cache), check each in the sandbox's overlay
//! ([`verify`]: syntax, the language's compile check, the project's tests), pick one
//! ([`pick`]: the first that turns a failing check green without breaking a passing
//! one; else, when nothing failed to begin with, the majority, the model's judgement
//! of the values candidates return, or agreement on its assertions), allow one repair
//! round with the error, and land the pick as one edit through the session's edit
//! sink (`write_file`'s path: planned against the live buffer, versioned,
//! reviewable).
//!
//! **Invariant.** No candidate reaches the disk or the editor's buffers before the
//! pick: candidates exist as strings, and as buffers laid over the workspace inside
//! the sandbox's mount namespace, whose writes stay in its scratch layer.
//!
//! Which way a session takes: [`agentls_model::ModelProfile::uses_pipeline`] (the
//! profile's `solver`) and whether the task asks for a change ([`applies`]); then
//! whether any strategy applies. When none does, the tool loop runs as before; when
//! candidates were drawn and none verified, `solver = "auto"` ends the turn with what
//! was tried ([`report::Solved::refuted`]) and `pipeline` hands over to the loop.

pub mod agreement;
mod ask;
mod batch;
mod behaviour;
mod callees;
pub mod characterise;
pub mod claims;
mod config;
pub mod edit_set;
pub mod examples;
mod failing;
#[cfg(test)]
mod fixtures;
pub mod generate;
pub mod judge;
mod land;
pub mod localise;
pub mod mention;
pub mod pick;
pub mod pinned;
mod progress;
pub mod rename;
mod report;
pub mod reword;
pub(crate) mod strategy;
pub mod verify;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agentls_model::{ChatRequest, Provider, Usage};
use agentls_tools::ToolContext;
use serde_json::json;

use crate::event::EventSender;
use ask::ModelUse;
use land::land;
use localise::Target;
use progress::Progress;
use verify::{Verdict, Verifier};

pub use config::{MORE_SAMPLES, SolveConfig};
pub use report::{CandidateReport, SolveReport, SolveTimings, Solved};

/// Whether a session on `provider` takes the pipeline for `task` first: a profile
/// that asks for it, and a task that asks for a change (a question goes to the tool
/// loop, which reads and answers). Which way of solving applies is decided after,
/// from the workspace ([`strategy`]).
pub fn applies(provider: &dyn Provider, task: &str) -> bool {
    provider.profile().uses_pipeline() && !localise::is_question(task)
}

/// Every strategy, cheapest first: the model-free ones (exact and instant when they
/// apply), then the model's: code and the data it reads before a single function
/// (which would hard-code a value), a function and its callers after it (the
/// rewrite defers to them when its pick changes a signature the callers use). The
/// tool loop is the last way of all, and the session's, not this list's.
pub(crate) fn strategies() -> Vec<Box<dyn strategy::Strategy>> {
    vec![
        Box::new(rename::Renaming),
        Box::new(reword::Rewording),
        Box::new(characterise::Characterising),
        Box::new(edit_set::EditSets(edit_set::Joined::Data)),
        Box::new(Rewriting),
        Box::new(edit_set::EditSets(edit_set::Joined::Callers)),
    ]
}

/// Solves `task` the pipeline's way: every strategy that applies here ([`strategy`]),
/// cheapest first, until one lands a verified change. `None` when none applies (the
/// tool loop takes the task); a report with no `answer` when none verified a change.
pub async fn solve_small(
    provider: &Arc<dyn Provider>,
    ctx: &ToolContext,
    task: &str,
    config: &SolveConfig,
    events: Option<&EventSender>,
) -> Option<Solved> {
    let strategies = strategies();
    let (strategies, plans) = {
        let (root, index, store, limits) = (
            ctx.root.clone(),
            ctx.index.clone(),
            ctx.store.clone(),
            ctx.read_limits,
        );
        let task = task.to_owned();
        tokio::task::spawn_blocking(move || {
            let index = index.read().unwrap_or_else(|p| p.into_inner());
            let scene = strategy::Scene {
                root: &root,
                task: &task,
                index: &index,
                store: &store,
                limits: &limits,
                protected: localise::protected(&task),
                localised: std::sync::OnceLock::new(),
            };
            let plans = strategy::plans(&scene, &strategies);
            (strategies, plans)
        })
        .await
        .ok()?
    };
    if plans.is_empty() {
        tracing::info!("solve: no strategy applies; the tool loop takes the task");
        return None;
    }
    let cx = strategy::Cx {
        provider,
        ctx,
        task,
        config,
        events,
    };
    let mut last: Option<Solved> = None;
    for (i, plan) in plans {
        if ctx.cancel.is_cancelled() || config.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let name = strategies[i].name();
        tracing::info!("solve: {name}: {}", plan.why);
        let why = plan.why;
        let Some(mut solved) = strategies[i].run(&cx, plan.work).await else {
            continue;
        };
        solved.report.strategy = name.to_owned();
        solved.report.applies = why;
        tracing::info!("solve: {name}: {}", solved.report.timings.phrase());
        config.tap(&solved.report);
        if let Some(before) = last.take() {
            solved.calls += before.calls;
            solved.usage.add(&before.usage);
            solved.model_ms += before.model_ms;
        }
        if solved.answer.is_some() {
            return Some(solved);
        }
        last = Some(solved);
    }
    last
}

/// The single-place rewrite: a function (or one short file) the task points to,
/// written whole by the model, several candidates verified, one picked. A pick that
/// changes the signature of a function other files call is not landed: the edit set
/// of the function and its callers takes the task.
pub(crate) struct Rewriting;

/// What [`Rewriting`] works on.
pub(crate) struct Rewrites {
    /// The targets, best first ([`localise`]).
    targets: Vec<Target>,
    /// The workspace's tests, `(path below the root, text)`, shown with the task.
    tests: Vec<(String, String)>,
    /// The target functions that source files other than their own call.
    called_elsewhere: Vec<String>,
}

#[async_trait::async_trait]
impl strategy::Strategy for Rewriting {
    fn name(&self) -> &'static str {
        "rewrite"
    }

    fn plan(&self, scene: &strategy::Scene<'_>) -> Option<strategy::Plan> {
        let targets = scene.targets().to_vec();
        if targets.is_empty() {
            return None;
        }
        let tests = test_files(scene.root, scene.index, scene.store, scene.limits);
        let called_elsewhere = targets
            .iter()
            .filter_map(|t| match &t.scope {
                localise::Scope::Function { name, .. }
                    if !edit_set::callers(scene, name, &t.path).is_empty() =>
                {
                    Some(name.clone())
                }
                _ => None,
            })
            .collect();
        let why = targets
            .iter()
            .map(|t| format!("{}: {}", t.shown(scene.root), t.why))
            .collect::<Vec<_>>()
            .join("; ");
        Some(strategy::Plan {
            why,
            work: Box::new(Rewrites {
                targets,
                tests,
                called_elsewhere,
            }),
        })
    }

    async fn run(&self, cx: &strategy::Cx<'_>, work: strategy::Work) -> Option<Solved> {
        let Ok(rewrites) = work.downcast::<Rewrites>() else {
            return None;
        };
        Some(rewrite(cx, &rewrites).await)
    }
}

/// Samples, verifies and picks for the best two targets at most; lands the pick.
async fn rewrite(cx: &strategy::Cx<'_>, rewrites: &Rewrites) -> Solved {
    let Rewrites {
        targets,
        tests,
        called_elsewhere,
    } = rewrites;
    let (provider, ctx, task, config) = (cx.provider, cx.ctx, cx.task, cx.config);
    let started = Instant::now();
    let progress = Progress::new(cx.events);
    let verifier = Verifier::detected(ctx).await;
    let targets = &narrowed(ctx, &verifier, task, targets).await;
    let shown: Vec<String> = targets
        .iter()
        .map(|t| format!("{}: {}", t.shown(&ctx.root), t.why))
        .collect();
    progress.start(json!({ "targets": shown, "samples": config.samples }));
    let mut run = Run {
        provider,
        ctx,
        config,
        verifier: &verifier,
        progress: &progress,
        report: SolveReport {
            targets: shown,
            tests: verifier.checks().tests.clone(),
            ..SolveReport::default()
        },
        texts: Vec::new(),
        numbers: Vec::new(),
        verdicts: Vec::new(),
        answers: Vec::new(),
        used: ModelUse::default(),
        called_elsewhere: called_elsewhere.clone(),
        judging: report::SolveTimings::default(),
        claims: None,
        claim_passes: Vec::new(),
        behaviours: None,
        asserted: None,
        share: None,
    };
    let mut answer = None;
    // The best two targets at most: each costs a round of samples.
    let mut queue: VecDeque<Target> = targets.iter().take(2).cloned().collect();
    let mut tried: Vec<Target> = Vec::new();
    let mut followed = false;
    while let Some(target) = queue.pop_front() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        // With a target waiting, this one keeps its `samples` but only half the time
        // left for more: a wrong first target sampled to the deadline and left the
        // right one none.
        run.share = if queue.is_empty() {
            None
        } else {
            config.halfway()
        };
        let first = run.report.candidates.len();
        if let Some(done) = run.target(task, &target, tests).await {
            answer = Some(done);
            break;
        }
        // Left as it was: what it calls comes next (once a run).
        if !followed && run.unchanged(first) {
            followed = true;
            let more = run.callees(&target, &tried, &queue);
            for callee in more.into_iter().rev() {
                queue.push_front(callee);
            }
        }
        tried.push(target);
    }
    let spent = run.spent();
    (run.report.drafted, run.report.accepted) = (run.used.drafted, run.used.accepted);
    run.report.timings = report::SolveTimings {
        prompt_ms: spent.prompt_ms - run.judging.prompt_ms,
        decode_ms: spent.decode_ms - run.judging.decode_ms,
        verify_ms: spent.verify_ms - run.judging.verify_ms,
        judge_ms: run.judging.judge_ms,
    };
    let report = run.report.clone();
    progress.finish(&report, answer.is_some(), started);
    config.tap(&report);
    Solved {
        report,
        answer,
        calls: run.used.calls,
        usage: run.used.usage,
        model_ms: run.used.model_ms,
    }
}

/// `targets` with a whole file the task points to by no function's name replaced by
/// the functions of it that the failing tests call ([`failing::tested`]): a
/// function's worth of tokens a sample rather than the file's. As they were when the
/// tests pass, or name no test the index finds.
async fn narrowed(
    ctx: &ToolContext,
    verifier: &Verifier,
    task: &str,
    targets: &[Target],
) -> Vec<Target> {
    let Some(first) = targets.first() else {
        return Vec::new();
    };
    let Some(command) = verifier.checks().tests.clone() else {
        return targets.to_vec();
    };
    if first.scope != localise::Scope::File {
        return targets.to_vec();
    }
    let failing = match verifier.output(&command, &[]).await {
        Some((false, output)) => failing::names(&output),
        _ => return targets.to_vec(),
    };
    let functions = {
        let index = ctx.index.read().unwrap_or_else(|p| p.into_inner());
        failing::tested(
            &ctx.root,
            &index,
            &ctx.store,
            &ctx.read_limits,
            task,
            first,
            &failing,
        )
    };
    if functions.is_empty() {
        return targets.to_vec();
    }
    tracing::debug!(failing = ?failing, "solve: the failing tests narrow the file to functions");
    functions
        .into_iter()
        .chain(targets[1..].iter().cloned())
        .collect()
}

/// The state of one pipeline run over its targets.
struct Run<'a> {
    provider: &'a Arc<dyn Provider>,
    ctx: &'a ToolContext,
    config: &'a SolveConfig,
    verifier: &'a Verifier,
    progress: &'a Progress<'a>,
    report: SolveReport,
    /// The current target's candidate texts, verdicts and raw answers, by index.
    texts: Vec<String>,
    /// Each text's index in the report's candidates (an answer with no change has
    /// no text).
    numbers: Vec<usize>,
    verdicts: Vec<Verdict>,
    answers: Vec<String>,
    used: ModelUse,
    /// Functions other files call: a pick that changes one's signature is not landed.
    called_elsewhere: Vec<String>,
    /// What telling candidates apart cost: its model and check time, and its whole.
    judging: report::SolveTimings,
    /// The current target's checks from the task that the code as it was fails.
    claims: Option<Claims>,
    /// How many of `claims` each probed candidate passes: `(index, passed)`.
    claim_passes: Vec<(usize, usize)>,
    /// What the current target's candidates return on the model's assertions' calls,
    /// once two different ones pass ([`behaviour`]).
    behaviours: Option<behaviour::Behaviours>,
    /// The code of the model's assertions answer for the current target, once asked
    /// (during sampling, only by [`Run::watch`], once a target).
    asserted: Option<String>,
    /// When the current target's time past `samples` ends, if another target follows.
    share: Option<Instant>,
}

/// Checks from the task's values ([`claims`]) kept for a target: those the code as it
/// was fails, and how to probe them.
struct Claims {
    name: String,
    checks: Vec<(String, String)>,
    layout: pinned::Layout,
    test_path: std::path::PathBuf,
}

impl Run<'_> {
    /// Samples, verifies and picks for one target; lands the pick. The answer for the
    /// user when a change landed.
    async fn target(
        &mut self,
        task: &str,
        target: &Target,
        tests: &[(String, String)],
    ) -> Option<String> {
        let root = &self.ctx.root;
        let baseline = self
            .verifier
            .verify(&target.path, target.language, &target.text)
            .await;
        self.report.baseline = baseline.phrase();
        self.progress.line(format!(
            "{}: {} as it is",
            target.shown(root),
            baseline.phrase()
        ));
        let req = generate::request(root, task, target, tests);
        let first = self.report.candidates.len();
        self.texts.clear();
        self.numbers.clear();
        self.verdicts.clear();
        self.answers.clear();
        (self.behaviours, self.asserted) = (None, None);
        self.claims_for(task, target, &baseline).await;
        let mut choice = None;
        if self.fim(target, &baseline, first).await || self.claimed() {
            choice = self.chosen(&baseline);
        }
        let sampling = Instant::now();
        let mut i = 0;
        // Past `samples`, a target the answers leave as it was gets no more: the
        // model sees nothing to change there (js-batches drew 21 such answers).
        while choice.is_none()
            && self.config.another_within(i, sampling, self.share)
            && !(i >= self.config.samples.max(1) && self.unchanged(first))
        {
            let width = self.config.width(i);
            let asked = Ask {
                req: &req,
                from: i,
                width,
                seed: self.config.seed,
                repair: false,
            };
            let round = self.round(&asked, target, &baseline, first).await;
            i += width;
            match round {
                Round::Green => choice = self.chosen(&baseline),
                Round::Cancelled => return None,
                Round::Signature(name) => {
                    self.report.reason = format!(
                        "candidates change the signature of `{name}`, which other files call: the function and its callers change together instead"
                    );
                    return None;
                }
                Round::Settled => {
                    self.behaved();
                    break;
                }
                Round::Done => {}
            }
            // Between rounds, while more will follow: what the candidates do.
            if self.config.another_within(i, sampling, self.share) {
                self.watch(task, target, &baseline).await;
                if self.behaved() {
                    break;
                }
            }
        }
        if choice.is_none() {
            choice = self.most_claims();
        }
        if choice.is_none() && !pick::something_fails(&baseline) {
            let (t0, before) = (Instant::now(), self.spent());
            choice = self.agreement(task, target, &baseline).await;
            self.judged(t0, &before);
        }
        if choice.is_none() {
            choice = self.chosen(&baseline);
        }
        if choice.is_none()
            && pick::something_fails(&baseline)
            && self.config.repair_fits(i, sampling)
        {
            choice = self.repair(&req, target, &baseline, first).await;
        }
        let Some(choice) = choice else {
            self.report.reason = pick::unchosen(&baseline, &self.verdicts);
            return None;
        };
        let chosen = self.numbers[choice.index()];
        self.report.chosen = Some(chosen);
        self.report.reason = choice.reason(chosen);
        let text = self.texts[choice.index()].clone();
        if let Some(name) = self.changed_signature(target, &text) {
            self.report.reason = format!(
                "candidate {} changes the signature of `{name}`, which other files call: the function and its callers change together instead",
                chosen + 1
            );
            return None;
        }
        match land(self.ctx, target, text).await {
            Ok(summary) => {
                self.report.landed = true;
                Some(format!(
                    "Changed {} ({}). {}; {}. {summary}",
                    target.shown(root),
                    target.why,
                    self.report.tally(),
                    self.report.reason
                ))
            }
            Err(e) => {
                self.report.reason = format!("the chosen change did not land: {e}");
                None
            }
        }
    }

    /// Whether the model sees nothing to change in the target whose first candidate
    /// is `first` in the report: no answer changed it into code that builds, and at
    /// least half left it as it was (py-paginate's `page`: 4 of 6 as it was, 2 that
    /// do not parse; the bug is in `page_count`, which it calls).
    fn unchanged(&self, first: usize) -> bool {
        let answers = self.report.candidates.get(first..).unwrap_or_default();
        let same = answers.iter().filter(|c| c.text.is_none()).count();
        !answers.is_empty()
            && 2 * same >= answers.len()
            && answers.iter().all(|c| c.text.is_none() || !c.builds)
    }

    /// The functions `target` calls ([`callees::callees`]) that are not among `tried`
    /// or `queued`, as targets; each is called from elsewhere, so a pick that changes
    /// its signature is not landed.
    fn callees(
        &mut self,
        target: &Target,
        tried: &[Target],
        queued: &VecDeque<Target>,
    ) -> Vec<Target> {
        let taken: Vec<&Target> = tried.iter().chain(queued).collect();
        let found = {
            let index = self.ctx.index.read().unwrap_or_else(|p| p.into_inner());
            callees::callees(
                &self.ctx.root,
                &index,
                &self.ctx.store,
                &self.ctx.read_limits,
                target,
                &taken,
            )
        };
        for callee in &found {
            if let localise::Scope::Function { name, .. } = &callee.scope {
                self.called_elsewhere.push(name.clone());
            }
            let shown = format!("{}: {}", callee.shown(&self.ctx.root), callee.why);
            self.progress.line(format!("next: {shown}"));
            self.report.targets.push(shown);
        }
        found
    }

    /// The model's and the checks' time so far (`judge_ms` unset).
    /// Counts what was spent since `t0` (and `before`) as telling candidates apart.
    fn judged(&mut self, t0: Instant, before: &report::SolveTimings) {
        let after = self.spent();
        self.judging.prompt_ms += after.prompt_ms - before.prompt_ms;
        self.judging.decode_ms += after.decode_ms - before.decode_ms;
        self.judging.verify_ms += after.verify_ms - before.verify_ms;
        self.judging.judge_ms += t0.elapsed().as_secs_f64() * 1000.0;
    }

    /// The choice once sampling stops early: the candidate that passed the task's
    /// checks, else the usual pick.
    fn chosen(&self, baseline: &Verdict) -> Option<pick::Choice> {
        if self.claimed() {
            self.most_claims()
        } else {
            pick::pick(baseline, &self.verdicts, &self.texts)
                .filter(|c| pick::agreed(c, self.config.samples))
        }
    }

    /// Whether a candidate passes every one of the task's checks (sampling stops).
    fn claimed(&self) -> bool {
        self.claims.as_ref().is_some_and(|claims| {
            self.claim_passes
                .iter()
                .any(|(_, passed)| *passed == claims.checks.len())
        })
    }

    /// The first candidate that passes the most of the task's checks, if one passes
    /// any: all of them once one is [`Run::claimed`]; else a wrong check costs the
    /// candidates alike.
    fn most_claims(&self) -> Option<pick::Choice> {
        let of = self.claims.as_ref()?.checks.len();
        let best = self.claim_passes.iter().map(|(_, p)| *p).max()?;
        let (index, passed) = self
            .claim_passes
            .iter()
            .find(|(_, p)| *p == best && best > 0)?;
        Some(pick::Choice::Claimed {
            index: *index,
            passed: *passed,
            of,
        })
    }

    /// Sets the target's checks from the task ([`claims`]): only where nothing fails
    /// before (a failing test decides by itself), the task states values, and the
    /// function has behaviour to fail a check with (a stub fails every check, right
    /// or wrong, so the code as it was sifts none out).
    async fn claims_for(&mut self, task: &str, target: &Target, baseline: &Verdict) {
        self.claims = None;
        self.claim_passes.clear();
        if self.config.task_checks
            && !pick::something_fails(baseline)
            && claims::gives_values(task)
            && let localise::Scope::Function {
                name, stub: false, ..
            } = &target.scope
        {
            let (t0, before) = (Instant::now(), self.spent());
            self.claims = self.claims(task, target, name).await;
            self.judged(t0, &before);
        }
    }

    /// Asks the model for checks of `name` from the task's values and keeps those
    /// the code as it was fails ([`claims`]); `None` when none is kept.
    async fn claims(&mut self, task: &str, target: &Target, name: &str) -> Option<Claims> {
        let shown = target.shown(&self.ctx.root);
        let (layout, test_path) = claims::layout(&self.ctx.root, target, &shown, name)?;
        let answer = self.ask(&claims::request(task, target, &shown, name)).await;
        tracing::debug!("solve: the checks answer:\n{answer}");
        let written = claims::checks(target.language, &generate::code_of(&answer), name);
        let mut claims = Claims {
            name: name.to_owned(),
            checks: written,
            layout,
            test_path,
        };
        let held = self.hold(&claims, target, &target.text).await;
        let written = claims.checks.len();
        claims.checks = std::mem::take(&mut claims.checks)
            .into_iter()
            .zip(held)
            .filter(|(_, held)| *held == Some(false))
            .map(|(check, _)| check)
            .collect();
        self.progress.line(format!(
            "checks from the task: the model wrote {written}; the code as it is fails {}",
            claims.checks.len()
        ));
        self.report.assertions.extend(
            claims
                .checks
                .iter()
                .map(|(call, want)| format!("{call} == {want}")),
        );
        (!claims.checks.is_empty()).then_some(claims)
    }

    /// Whether each of `claims`' checks holds on `text` as the target's content
    /// (`None`: a side did not return anything a check can compare).
    async fn hold(&self, claims: &Claims, target: &Target, text: &str) -> Vec<Option<bool>> {
        let calls = claims::calls(&claims.name, &claims.checks);
        let pinned = characterise::probe(
            self.verifier,
            (&claims.layout, text),
            &claims.test_path,
            &[(target.path.as_path(), text)],
            calls,
            self.progress,
        )
        .await;
        claims::holds(&claims.checks, &pinned)
    }

    fn spent(&self) -> report::SolveTimings {
        self.used.spent(self.verifier)
    }

    /// The target function's name when `text` changes its signature and other files
    /// call it: such a change is not the rewrite's to land (its callers would not
    /// follow), but the edit set's of the function and its callers.
    fn changed_signature(&self, target: &Target, text: &str) -> Option<String> {
        let localise::Scope::Function { name, .. } = &target.scope else {
            return None;
        };
        (self.called_elsewhere.contains(name)
            && generate::signature(target.language, &target.text, name)
                != generate::signature(target.language, text, name))
        .then(|| name.clone())
    }

    /// [`Run::changed_signature`] of the last candidate, when it passes every check
    /// (sampling more for this target would only pick such a change again), or when
    /// it is the second of this target's candidates to change the signature, whatever
    /// their checks say: callers in other files then fail to build or to pass, and
    /// the edit set that changes them with the function is where the time is due
    /// (the rewrite sampled to its deadline on such tasks before).
    fn changes_a_called_signature(&self, target: &Target) -> Option<String> {
        let (text, verdict) = (self.texts.last()?, self.verdicts.last()?);
        let name = self.changed_signature(target, text)?;
        let changed = self
            .texts
            .iter()
            .filter(|t| self.changed_signature(target, t).is_some())
            .count();
        (verdict.passes() || changed >= 2).then_some(name)
    }

    /// The fill-in-the-middle candidate of a stub, when a completer is configured:
    /// the body asked as the middle of the file (greedy). Whether it turns a failing
    /// check green.
    async fn fim(&mut self, target: &Target, baseline: &Verdict, first: usize) -> bool {
        let Some(completer) = self.config.completer.clone() else {
            return false;
        };
        if !matches!(target.scope, localise::Scope::Function { stub: true, .. }) {
            return false;
        }
        let Some((req, rules)) = generate::fim_request(target, &target.shown(&self.ctx.root))
        else {
            return false;
        };
        let t0 = Instant::now();
        let middle = match completer
            .complete(&req, &rules, self.ctx.cancel.clone())
            .await
        {
            Ok(a) => {
                self.used.usage.add(&Usage {
                    input: u64::from(a.prompt_tokens),
                    cached_input: u64::from(a.cached_tokens),
                    output: u64::from(a.tokens),
                    ..Usage::default()
                });
                a.text
            }
            Err(e) => {
                tracing::warn!("solve: fill-in-the-middle failed: {}", e.message);
                return false;
            }
        };
        self.used.calls += 1;
        self.used.model_ms += t0.elapsed().as_secs_f64() * 1000.0;
        let new = generate::fim_splice(target, &req.prefix, &middle, &req.suffix);
        self.record(
            target,
            baseline,
            first,
            Recorded {
                new,
                answer: middle,
                temperature: 0.0,
                seed: None,
                repair: false,
                what: "fill-in-the-middle",
            },
        )
        .await
    }

    /// Tells apart candidates that pass every check, using the model's own
    /// assertions about the function: first their calls, the model judging the
    /// values the candidates return where they differ ([`judge`]), else the
    /// assertions themselves ([`agreement`]); `None` when it cannot (not a function,
    /// a language without assertion scripts, fewer than two different safe
    /// candidates, no assertion, or none passed).
    async fn agreement(
        &mut self,
        task: &str,
        target: &Target,
        baseline: &Verdict,
    ) -> Option<pick::Choice> {
        let localise::Scope::Function { name, range, .. } = &target.scope else {
            return None;
        };
        let mut safe = pick::safe(baseline, &self.verdicts);
        let mut distinct: Vec<usize> = Vec::new();
        for &i in &safe {
            if !distinct.iter().any(|&j| self.texts[j] == self.texts[i]) {
                distinct.push(i);
            }
        }
        let lang = target.language;
        if !(agreement::supported(lang) || judge::supported(lang)) || distinct.len() < 2 {
            return None;
        }
        let shown = target.shown(&self.ctx.root);
        // The task's and the docs' own examples first: they are the user's words.
        let docs = examples::docs_of(&target.text, range.clone());
        let (kept, passed, of) = self.examples(task, target, name, docs, &distinct).await;
        if kept.len() < distinct.len() {
            safe.retain(|&i| kept.iter().any(|&k| self.texts[k] == self.texts[i]));
            distinct = kept;
        }
        if let [index] = distinct[..] {
            return Some(pick::Choice::Examples { index, passed, of });
        }
        let code = self.asserted(task, target, name).await;
        let asserts = agreement::assertions(lang, &code, name);
        self.report.assertions.extend(asserts.iter().cloned());
        if let Some(judged) = self
            .judge(task, target, name, &code, &distinct, &safe)
            .await
        {
            return Some(judged);
        }
        let command = agreement::command(target.language, &shown, &asserts)?;
        let verifier = self.verifier;
        let run = async |text: &str| {
            let laid = [(target.path.as_path(), text)];
            verifier
                .run(&command, &laid)
                .await
                .and_then(|r| agreement::outcomes(&r.tail))
                .unwrap_or_default()
        };
        // What the code as it was passes says nothing about the change.
        let before = run(&target.text).await;
        let mut ran: Vec<(usize, Vec<bool>)> = Vec::new();
        for &i in &distinct {
            if self.ctx.cancel.is_cancelled() {
                return None;
            }
            let outcome = run(&self.texts[i]).await;
            ran.push((i, agreement::beyond(&outcome, &before)));
        }
        // Equal texts pass the same assertions: every safe candidate counts.
        let results: Vec<(usize, Vec<bool>)> = safe
            .iter()
            .filter_map(|&i| {
                let (_, outcome) = ran.iter().find(|(j, _)| self.texts[*j] == self.texts[i])?;
                Some((i, outcome.clone()))
            })
            .collect();
        let chosen = agreement::choose(&results);
        self.progress.line(match chosen {
            Some((i, size, passed)) => format!(
                "assertions: the model wrote {}; candidate {} and {} other(s) pass {passed} the code as it was fails",
                asserts.len(),
                self.numbers[i] + 1,
                size - 1
            ),
            None => format!(
                "assertions: the model wrote {}; no candidate passes one the code as it was fails",
                asserts.len()
            ),
        });
        let (index, size, passed) = chosen?;
        Some(pick::Choice::Agreed {
            index,
            size,
            passed,
            of: asserts.len(),
        })
    }

    /// The `distinct` candidates that pass the most of the examples the task and the
    /// function's docs give ([`examples`]), with how many they pass and of how many;
    /// all of them when there are none, or none passes one.
    async fn examples(
        &mut self,
        task: &str,
        target: &Target,
        name: &str,
        docs: &str,
        distinct: &[usize],
    ) -> (Vec<usize>, usize, usize) {
        let asserts = examples::assertions(target.language, name, docs, task);
        let shown = target.shown(&self.ctx.root);
        let Some(command) = agreement::command(target.language, &shown, &asserts) else {
            return (distinct.to_vec(), 0, 0);
        };
        let mut passes = Vec::with_capacity(distinct.len());
        for &i in distinct {
            let laid = [(target.path.as_path(), self.texts[i].as_str())];
            let outcome = self
                .verifier
                .run(&command, &laid)
                .await
                .and_then(|r| agreement::outcomes(&r.tail))
                .unwrap_or_default();
            passes.push(outcome.iter().filter(|ok| **ok).count());
        }
        let best = passes.iter().copied().max().unwrap_or(0);
        self.report.assertions.clone_from(&asserts);
        let kept: Vec<usize> = distinct
            .iter()
            .zip(&passes)
            .filter(|(_, p)| best > 0 && **p == best)
            .map(|(&i, _)| i)
            .collect();
        self.progress.line(format!(
            "examples: {} from the task and the docs; {} of {} different candidates pass {best}",
            asserts.len(),
            kept.len(),
            distinct.len()
        ));
        if kept.is_empty() {
            return (distinct.to_vec(), 0, asserts.len());
        }
        (kept, best, asserts.len())
    }

    /// Tells apart the `distinct` safe candidates by the values they return where
    /// they differ, the model judging which value is right ([`judge`]); `None` when
    /// it cannot (a language without a probe, a provider that cannot score, no call
    /// on which the candidates differ, no dispute won).
    async fn judge(
        &mut self,
        task: &str,
        target: &Target,
        name: &str,
        code: &str,
        distinct: &[usize],
        safe: &[usize],
    ) -> Option<pick::Choice> {
        let lang = target.language;
        if !judge::supported(lang) {
            return None;
        }
        let shown = target.shown(&self.ctx.root);
        let arity = characterise::arity(lang, &target.text, name);
        let calls = judge::calls(code, name, arity);
        tracing::debug!(
            "solve: judge: {} call(s) from the answer:\n{code}",
            calls.len()
        );
        let layout = judge::layout(lang, &shown, name);
        let probe = pinned::probe(&layout, &calls)?;
        let mut outcomes = Vec::with_capacity(distinct.len());
        for &i in distinct {
            if self.ctx.cancel.is_cancelled() {
                return None;
            }
            // The same calls as while sampling (the same answer, arity and layout):
            // what a candidate returned then is not run again.
            let known = self
                .behaviours
                .as_ref()
                .and_then(|b| b.known(|j| self.texts[j] == self.texts[i]));
            outcomes.push(match known {
                Some(known) => known,
                None => {
                    self.outcomes(target, &probe, calls.len(), &self.texts[i])
                        .await
                }
            });
        }
        let disputes = judge::disputes(&calls, &outcomes);
        if disputes.is_empty() {
            self.progress.line(format!(
                "judge: the {} different candidates return the same on all {} calls",
                distinct.len(),
                calls.len()
            ));
            return None;
        }
        let definition = match &target.scope {
            localise::Scope::Function { range, .. } => target.text.get(range.clone())?,
            localise::Scope::File => return None,
        };
        let head = judge::header(lang, definition);
        let req = judge::request(task, lang, &shown, name, &head);
        let mut winners = Vec::with_capacity(disputes.len());
        for d in &disputes {
            let (head, ends) = judge::line(lang, d);
            let cancel = self.ctx.cancel.clone();
            let scores = self
                .used
                .score(self.provider, &req, &head, &ends, &cancel)
                .await?;
            let won = judge::winner(&scores);
            if let Some(w) = won {
                self.report.judged.push(format!(
                    "{}: {} (of {})",
                    d.call,
                    d.values[w],
                    d.values.len()
                ));
            }
            winners.push(won);
        }
        let weights: Vec<usize> = distinct
            .iter()
            .map(|&i| {
                safe.iter()
                    .filter(|&&j| self.texts[j] == self.texts[i])
                    .count()
            })
            .collect();
        let (c, wins, of) = judge::choose(&disputes, &winners, &weights)?;
        let index = distinct[c];
        self.progress.line(format!(
            "judge: the candidates differ on {of} of {} calls; the model finds candidate {}'s values most likely in {wins}",
            calls.len(),
            self.numbers[index] + 1
        ));
        Some(pick::Choice::Judged { index, wins, of })
    }

    /// The code of the model's assertions about `name` for the current target: asked
    /// once (greedy), kept for the judge.
    async fn asserted(&mut self, task: &str, target: &Target, name: &str) -> String {
        if let Some(code) = &self.asserted {
            return code.clone();
        }
        let shown = target.shown(&self.ctx.root);
        let req = agreement::request(task, target, &shown, name);
        let answer = self.ask(&req).await;
        let code = generate::code_of(&answer);
        self.asserted = Some(code.clone());
        code
    }

    /// Starts recording what candidates return ([`behaviour`]) once two different
    /// candidates that change the code pass every check, where nothing failed
    /// before, no checks from the task decide, and the judge could probe the target
    /// (a function in Python or JavaScript). The assertions asked for here are those
    /// the judge would ask for after sampling.
    async fn watch(&mut self, task: &str, target: &Target, baseline: &Verdict) {
        let localise::Scope::Function { name, .. } = &target.scope else {
            return;
        };
        let lang = target.language;
        if self.asserted.is_some()
            || self.claims.is_some()
            || pick::something_fails(baseline)
            || !judge::supported(lang)
        {
            return;
        }
        let safe = pick::safe(baseline, &self.verdicts);
        let mut changed: Vec<&str> = Vec::new();
        for &i in &safe {
            let text = self.texts[i].as_str();
            if text != target.text && !changed.contains(&text) {
                changed.push(text);
            }
        }
        if changed.len() < 2 {
            return;
        }
        let (t0, before) = (Instant::now(), self.spent());
        let code = self.asserted(task, target, name).await;
        let calls = judge::calls(&code, name, characterise::arity(lang, &target.text, name));
        let layout = judge::layout(lang, &target.shown(&self.ctx.root), name);
        if let Some(probe) = pinned::probe(&layout, &calls) {
            let before = self
                .outcomes(target, &probe, calls.len(), &target.text)
                .await;
            self.behaviours = Some(behaviour::Behaviours {
                calls,
                probe,
                before,
                of: Vec::new(),
            });
            for i in safe {
                self.behave(target, i).await;
            }
            if let Some(b) = &self.behaviours {
                self.progress.line(format!(
                    "behaviour: {} calls from the model's assertions; {} of {} candidates that pass return the same new values",
                    b.calls.len(),
                    b.agreeing(),
                    b.of.len()
                ));
            }
        }
        self.judged(t0, &before);
    }

    /// Records what candidate `index` returns on the behaviours' calls, once they are
    /// probed.
    async fn behave(&mut self, target: &Target, index: usize) {
        let Some(b) = &self.behaviours else {
            return;
        };
        let text = &self.texts[index];
        let outcomes = match b.known(|j| self.texts[j] == *text) {
            Some(known) => known,
            None => {
                let (probe, n, text) = (b.probe.clone(), b.calls.len(), text.clone());
                self.outcomes(target, &probe, n, &text).await
            }
        };
        if let Some(b) = &mut self.behaviours {
            b.of.push((index, outcomes));
        }
    }

    /// Whether the candidates' behaviours settle the pick; says so when they do.
    fn behaved(&self) -> bool {
        let Some(b) = self.behaviours.as_ref().filter(|b| b.settled()) else {
            return false;
        };
        self.progress.line(format!(
            "behaviour: {} candidates return the same on all {} calls, not what the code as it was returns; sampling stops",
            b.agreeing(),
            b.calls.len()
        ));
        true
    }

    /// What `text`, laid at the target's path, does on the `n` calls of `probe`.
    async fn outcomes(
        &self,
        target: &Target,
        probe: &pinned::Probe,
        n: usize,
        text: &str,
    ) -> Vec<Option<pinned::Outcome>> {
        let laid = [(target.path.as_path(), text)];
        let output = self.verifier.output(&probe.command, &laid).await;
        pinned::outcomes(
            target.language,
            &output.map(|(_, o)| o).unwrap_or_default(),
            n,
        )
    }

    /// One model call, counted; its text (empty when the model failed).
    async fn ask(&mut self, req: &ChatRequest) -> String {
        self.used.ask(self.provider, req, &self.ctx.cancel).await
    }

    /// Samples `asked.from..asked.from + asked.width` of a request (sample 0 greedy),
    /// decoded as one batch where the provider can, else one after another; each
    /// candidate is verified the moment its answer is complete, while the rest of the
    /// batch decodes, and the round ends as soon as the pick cannot change.
    async fn round(
        &mut self,
        asked: &Ask<'_>,
        target: &Target,
        baseline: &Verdict,
        first: usize,
    ) -> Round {
        let sampled =
            |i: usize| generate::sampled(asked.req, i, self.config.temperature, asked.seed);
        let samplings: Vec<_> = (asked.from..asked.from + asked.width)
            .map(|i| sampled(i).sampling)
            .collect();
        let (t0, checks_before) = (Instant::now(), self.verifier.spent_ms());
        let done: batch::Done = match &target.scope {
            localise::Scope::Function { name, range, .. } => {
                let (lang, name) = (target.language, name.clone());
                let original = target
                    .text
                    .get(range.clone())
                    .unwrap_or_default()
                    .to_owned();
                Box::new(move |answer: &str| {
                    generate::function_done(lang, &generate::code_of(answer), &name, &original)
                })
            }
            localise::Scope::File => Box::new(|_: &str| false),
        };
        let Some(mut batch) =
            batch::Batch::start(self.provider, asked.req, &samplings, &self.ctx.cancel, done)
        else {
            for i in asked.from..asked.from + asked.width {
                let green = self
                    .candidate(&sampled(i), target, baseline, first, asked.repair)
                    .await;
                if let Some(end) = self.after(green, target, baseline) {
                    return end;
                }
            }
            return Round::Done;
        };
        let mut end = Round::Done;
        let mut prompt_read = false;
        while let Some(done) = batch.next().await {
            let done = match done {
                Ok(done) => done,
                Err(e) => {
                    tracing::warn!("solve: the model failed: {}", e.message);
                    break;
                }
            };
            if !std::mem::replace(&mut prompt_read, true) {
                self.used.prompt_ms += done.stats.prompt_ms as f64;
            }
            self.used.answered(&done.response, &done.stats);
            let green = self
                .answered(
                    target,
                    baseline,
                    first,
                    done.response.text,
                    &samplings[done.index],
                    asked.repair,
                )
                .await;
            if let Some(stop) = self.after(green, target, baseline) {
                end = stop;
                break;
            }
        }
        if !prompt_read {
            // Ended before any sequence brought its figures: the wait for the first
            // token was the prompt's reading.
            self.used.prompt_ms += batch.prompt_ms();
        }
        drop(batch);
        // Time the model was waited for: the round's, less the checks run beside it.
        let checks = self.verifier.spent_ms() - checks_before;
        self.used.model_ms += (t0.elapsed().as_secs_f64() * 1000.0 - checks).max(0.0);
        end
    }

    /// What ends a round after a candidate was recorded (`green`: it turned a failing
    /// check green), if anything does.
    fn after(&self, green: bool, target: &Target, baseline: &Verdict) -> Option<Round> {
        if green || self.claimed() {
            return Some(Round::Green);
        }
        if self.ctx.cancel.is_cancelled() {
            return Some(Round::Cancelled);
        }
        if let Some(name) = self.changes_a_called_signature(target) {
            return Some(Round::Signature(name));
        }
        // Candidates that agree may agree on failing the task's checks.
        let behaved = self.behaviours.as_ref().is_some_and(|b| b.settled());
        (self.claims.is_none() && (behaved || pick::settled(baseline, &self.verdicts, &self.texts)))
            .then_some(Round::Settled)
    }

    /// Asks for one candidate, verifies it and records it; whether it turns a failing
    /// check green (sampling can stop).
    async fn candidate(
        &mut self,
        req: &ChatRequest,
        target: &Target,
        baseline: &Verdict,
        first: usize,
        repair: bool,
    ) -> bool {
        let answer = self.ask(req).await;
        self.answered(target, baseline, first, answer, &req.sampling, repair)
            .await
    }

    /// Splices an answer sampled with `sampling` into the target, verifies and
    /// records it; whether it turns a failing check green.
    async fn answered(
        &mut self,
        target: &Target,
        baseline: &Verdict,
        first: usize,
        answer: String,
        sampling: &agentls_model::Sampling,
        repair: bool,
    ) -> bool {
        let temperature = sampling.temperature.unwrap_or(0.0);
        let new = generate::splice(target, &generate::code_of(&answer));
        self.record(
            target,
            baseline,
            first,
            Recorded {
                new,
                answer,
                temperature,
                seed: sampling.seed.filter(|_| temperature > 0.0),
                repair,
                what: if repair { "repair" } else { "candidate" },
            },
        )
        .await
    }

    /// Verifies a candidate's text and records it; whether it turns a failing check
    /// green.
    async fn record(
        &mut self,
        target: &Target,
        baseline: &Verdict,
        first: usize,
        c: Recorded,
    ) -> bool {
        let Recorded {
            new,
            answer,
            temperature,
            seed,
            repair,
            what,
        } = c;
        let n = self.report.candidates.len() - first + 1;
        // Past `samples`, only the deadline knows how many more.
        let count = match self.config.samples.max(1) {
            total if n <= total => format!("{n}/{total}"),
            _ => n.to_string(),
        };
        let verdict = match &new {
            None => None,
            // The same text twice is checked once.
            Some(text) => match self.texts.iter().position(|t| t == text) {
                Some(j) => Some(self.verdicts[j].clone()),
                None => Some(
                    self.verifier
                        .verify(&target.path, target.language, text)
                        .await,
                ),
            },
        };
        let green = verdict
            .as_ref()
            .is_some_and(|v| pick::turns_green(baseline, v));
        let phrase = verdict
            .as_ref()
            .map_or_else(|| "no change".to_owned(), Verdict::phrase);
        self.report.candidates.push(CandidateReport {
            path: target.shown(&self.ctx.root),
            temperature,
            seed,
            repair,
            fim: what == "fill-in-the-middle",
            text: new.clone(),
            also: Vec::new(),
            verdict: phrase.clone(),
            builds: verdict.as_ref().is_some_and(Verdict::builds),
            passes: verdict.as_ref().is_some_and(Verdict::passes),
        });
        if let (Some(text), Some(verdict)) = (new, verdict) {
            let fresh = !self.texts.contains(&text);
            let safe = verdict.passes() && !pick::breaks(baseline, &verdict);
            self.numbers.push(self.report.candidates.len() - 1);
            self.texts.push(text);
            self.verdicts.push(verdict);
            self.answers.push(answer);
            if fresh && safe && !self.claimed() {
                self.claim(target, self.texts.len() - 1).await;
            }
            if safe {
                self.behave(target, self.texts.len() - 1).await;
            }
        }
        self.progress.line(format!(
            "{what} {count}: {phrase} — {}",
            self.report.tally()
        ));
        green
    }

    /// Probes the task's checks on candidate `index` and records how many it passes
    /// ([`Run::claimed`] once it passes them all).
    async fn claim(&mut self, target: &Target, index: usize) {
        let Some(claims) = &self.claims else {
            return;
        };
        let held = self.hold(claims, target, &self.texts[index]).await;
        let passed = held.iter().filter(|h| **h == Some(true)).count();
        self.claim_passes.push((index, passed));
        // Candidates enough to settle the pick, and not one check passed by any: the
        // checks are more likely wrong than every candidate, so they stop holding
        // the pick open.
        if self.claim_passes.len() >= claims::DOUBTED
            && self.claim_passes.iter().all(|(_, p)| *p == 0)
        {
            self.progress.line(format!(
                "checks from the task: {} different candidates pass none of them; they no longer decide",
                self.claim_passes.len()
            ));
            self.claims = None;
            return;
        }
        self.progress.line(format!(
            "checks from the task: candidate {} passes {passed} of {}",
            self.numbers[index] + 1,
            held.len()
        ));
    }

    /// The one repair round: the candidate that builds and passes the most tests,
    /// shown its failure, asked again (greedy, then one sample).
    async fn repair(
        &mut self,
        req: &ChatRequest,
        target: &Target,
        baseline: &Verdict,
        first: usize,
    ) -> Option<pick::Choice> {
        let best = (0..self.verdicts.len())
            .filter(|&i| self.verdicts[i].builds() && !pick::breaks(baseline, &self.verdicts[i]))
            .max_by_key(|&i| {
                self.verdicts[i]
                    .tests
                    .as_ref()
                    .and_then(|t| t.counts)
                    .map_or(0, |c| c.0)
            })
            .or_else(|| (0..self.verdicts.len()).find(|&i| self.verdicts[i].syntax_errors == 0))?;
        let failure = self.verdicts[best]
            .tests
            .as_ref()
            .map_or_else(|| self.verdicts[best].phrase(), |t| t.tail.clone());
        let asked = generate::repair(req, &self.answers[best], &failure, target);
        let asked = Ask {
            req: &asked,
            from: 0,
            width: 2,
            seed: self.config.seed.wrapping_add(1_000),
            repair: true,
        };
        if matches!(
            self.round(&asked, target, baseline, first).await,
            Round::Cancelled
        ) {
            return None;
        }
        pick::pick(baseline, &self.verdicts, &self.texts)
            .filter(|c| matches!(c, pick::Choice::Green(_)))
    }
}

/// A round of samples of one request, as [`Run::round`] takes it.
struct Ask<'a> {
    req: &'a ChatRequest,
    /// The first sample's number (0: greedy) and how many.
    from: usize,
    width: usize,
    /// The seed sample `i` adds `i` to.
    seed: u64,
    /// From the repair round.
    repair: bool,
}

/// How a round of samples ended.
enum Round {
    /// A candidate turned a failing check green: it is the pick.
    Green,
    /// The user cancelled.
    Cancelled,
    /// Candidates change the signature of this function, which other files call
    /// ([`Run::changes_a_called_signature`]): not the rewrite's to land.
    Signature(String),
    /// Enough candidates that pass agree that more cannot change the pick.
    Settled,
    /// Every sample was taken.
    Done,
}

/// One candidate as [`Run::record`] takes it.
struct Recorded {
    /// The file's new text; `None` when the answer changed nothing.
    new: Option<String>,
    /// The model's raw answer (shown again in the repair round).
    answer: String,
    temperature: f32,
    seed: Option<u64>,
    repair: bool,
    /// "candidate", "repair", "fill-in-the-middle": for the progress line.
    what: &'static str,
}

/// The workspace's test files, `(path below the root, text)`, smallest first: shown
/// to the model with the task.
fn test_files(
    root: &Path,
    index: &agentls_index::Index,
    store: &agentls_text::DocumentStore,
    limits: &agentls_text::ReadLimits,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = index
        .paths()
        .filter(|p| localise::is_test_file(root, p))
        .filter_map(|p| {
            let text = store.read(p, limits).ok()?.rope.to_string();
            Some((
                p.strip_prefix(root).unwrap_or(p).display().to_string(),
                text,
            ))
        })
        .collect();
    out.sort_by_key(|(_, t)| t.len());
    out
}

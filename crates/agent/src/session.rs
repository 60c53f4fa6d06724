//! A session and its loop: build the request → stream the model → run the tool calls →
//! append the results → repeat, until the model stops calling tools, the budget runs
//! out, the user cancels, or the provider fails. The transcript survives every outcome.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentls_model::{
    Accumulator, CancellationToken, ChatRequest, Message, Part, Phase, Provider, RUNAWAY_STOP,
    RouteInput, Router, StreamEvent,
};
use agentls_tools::{Approver, ToolContext};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::RwLock;

use crate::compaction::{self, Artifacts, ReadArtifact};
use crate::config::SessionConfig;
use crate::context::{StaticContext, system_prompt};
use crate::dispatch::{CallOutcome, Dispatch};
use crate::event::{Event, EventSender, SessionStatus};
use crate::metrics::{Metrics, class_name, ms};
use crate::status::Status;
use crate::toolset::ToolSet;
use crate::trajectory::Trajectory;

/// Files named to a lean model for its task ([`Session::files_for_task`]): as many as
/// `repo_map` focuses on for a query.
const TASK_FILES: usize = 5;
/// Chunks searched for them.
const TASK_FILES_HITS: usize = 30;
/// Longest the first message waits for them (mypy's 1,251 files chunk in 1.3 s).
const TASK_FILES_WAIT: Duration = Duration::from_secs(5);

/// Longest tool output written to the trajectory (bytes).
const MAX_LOGGED_OUTPUT: usize = 20_000;

/// One conversation with the agent. Not `Sync`: one run at a time (`&mut self`).
pub struct Session {
    id: String,
    config: SessionConfig,
    provider: Arc<dyn Provider>,
    summarizer: Option<Arc<dyn Provider>>,
    all_tools: ToolSet,
    tools: ToolSet,
    ctx: ToolContext,
    static_ctx: StaticContext,
    request: ChatRequest,
    lock: Arc<RwLock<()>>,
    events: Option<EventSender>,
    trajectory: Option<Trajectory>,
    metrics: Metrics,
    routing: Option<Routing>,
    approvals: Arc<RecordingApprover>,
    /// Consecutive steps in which a tool call failed (the router escalates on them).
    failures: usize,
    /// Catches a model that repeats a call with the same result.
    repeats: crate::repeats::RepeatGuard,
    /// Whether this run already asked the model to answer without template text.
    echo_nudged: bool,
    /// Whether this run already asked the model again after a runaway answer.
    runaway_nudged: bool,
    /// Characters of the request per token, as the provider counted the last prompt
    /// (4 until it has): compaction's estimate is calibrated by it, since code and JSON
    /// tokenize denser than prose (a 0.5B model's prompt was 1.5x the 4-chars guess and
    /// overran its 8k window before compaction ever fired).
    chars_per_token: f64,
    /// A tool changed the workspace and no command ran after it.
    edited_since_command: bool,
    /// A tool changed the workspace in this run.
    edited_this_run: bool,
    /// The user's latest message is a question (ends with `?`): an answer without an
    /// edit is what it asks for.
    asked_question: bool,
    /// Answers this run already sent back for the lean profile's workflow
    /// ([`Session::challenge`]): each kind once per run.
    challenged: Vec<&'static str>,
    /// The final check already ran in this run (it runs at most once).
    final_checked: bool,
    /// Characters of the user's latest message.
    request_chars: usize,
    /// Words of the user's messages that may name files
    /// ([`crate::workspace_paths::path_words`]), at most
    /// [`crate::workspace_paths::MAX_NAMED`]: a provider that constrains path arguments
    /// lets them name those files, git-ignored or not.
    named: Vec<String>,
    artifacts: Artifacts,
    pending_note: Option<String>,
    /// The cancel token was spent by an earlier run: the next run gets a fresh one. A
    /// token cancelled between runs stays cancelled, so a cancel that races the start
    /// of a run still stops it.
    spent_cancel: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("model", &self.provider.name())
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// A new session id: time-ordered and unique enough for file names.
pub fn new_session_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{millis:x}-{:04x}", fastrand::u16(..))
}

/// The session's approver: asks the one it wraps and remembers what was refused.
struct RecordingApprover {
    inner: Arc<dyn Approver>,
    refused: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Approver for RecordingApprover {
    async fn approve(&self, what: &str) -> bool {
        let yes = self.inner.approve(what).await;
        if !yes && let Ok(mut r) = self.refused.lock() {
            r.push(what.to_owned());
        }
        yes
    }

    async fn approve_command(&self, what: &str, terminal: bool) -> agentls_tools::CommandChoice {
        let choice = self.inner.approve_command(what, terminal).await;
        if choice == agentls_tools::CommandChoice::Refuse
            && let Ok(mut r) = self.refused.lock()
        {
            r.push(what.to_owned());
        }
        choice
    }
}

/// `auto`: the router and the models it may pick, asked before every model call.
struct Routing {
    router: Router,
    providers: Vec<Arc<dyn Provider>>,
}

impl Session {
    /// A session on `provider` with `tools`, whose calls run in `ctx`. `static_ctx`
    /// goes into the system prompt once, for the whole session.
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: ToolSet,
        mut ctx: ToolContext,
        config: SessionConfig,
        static_ctx: StaticContext,
    ) -> Self {
        let approvals = Arc::new(RecordingApprover {
            inner: ctx.approver.clone(),
            refused: Default::default(),
        });
        ctx.approver = approvals.clone();
        let mut session = Self {
            id: new_session_id(),
            config,
            provider,
            summarizer: None,
            all_tools: tools,
            tools: ToolSet::default(),
            ctx,
            static_ctx,
            request: ChatRequest::default(),
            lock: Arc::new(RwLock::new(())),
            events: None,
            trajectory: None,
            metrics: Metrics::default(),
            routing: None,
            approvals,
            failures: 0,
            repeats: crate::repeats::RepeatGuard::default(),
            echo_nudged: false,
            runaway_nudged: false,
            chars_per_token: compaction::CHARS_PER_TOKEN,
            edited_since_command: false,
            edited_this_run: false,
            asked_question: false,
            challenged: Vec::new(),
            final_checked: false,
            request_chars: 0,
            named: Vec::new(),
            artifacts: Artifacts::default(),
            pending_note: None,
            spent_cancel: false,
        };
        session
            .all_tools
            .insert(Arc::new(ReadArtifact(session.artifacts.clone())));
        session.configure_for_model();
        session
    }

    /// Sends progress events to `tx`.
    pub fn with_events(mut self, tx: EventSender) -> Self {
        self.events = Some(tx);
        self
    }

    /// Writes the trajectory to `t`.
    pub fn with_trajectory(mut self, t: Trajectory) -> Self {
        t.record(
            "session",
            json!({
                "id": self.id,
                "model": self.provider.name(),
                "mode": self.config.mode,
                "tools": self.tools.names(),
                "system": self.request.system,
            }),
        );
        self.trajectory = Some(t);
        self
    }

    /// Uses `p` (the cheapest model) to write compaction summaries.
    pub fn with_summarizer(mut self, p: Arc<dyn Provider>) -> Self {
        self.summarizer = Some(p);
        self
    }

    /// Routes every model call (`auto`): before each call the router picks one of
    /// `providers` (matched by [`Provider::name`] against the route's model) from the
    /// phase, the failed steps in a row, the turns so far and the prompt size. A change
    /// of model is a hand-over as in [`Session::switch_model`], with the note added at
    /// once; each model keeps its own stable prefix (system prompt and tools).
    pub fn with_router(mut self, router: Router, providers: Vec<Arc<dyn Provider>>) -> Self {
        self.routing = Some(Routing { router, providers });
        self
    }

    /// Shares a read/write lock with other sessions (subagents) on the same workspace.
    pub fn with_lock(mut self, lock: Arc<RwLock<()>>) -> Self {
        self.lock = lock;
        self
    }

    /// Names the session `id` (a server that hands out ids before building sessions).
    /// Call before [`Session::with_trajectory`], which records the id.
    pub fn with_id(mut self, id: String) -> Self {
        self.id = id;
        self
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Changes what the agent may do from the next model call on: the tools offered
    /// and the system prompt follow the mode.
    pub fn set_mode(&mut self, mode: crate::Mode) {
        self.config.mode = mode;
        self.configure_for_model();
    }

    /// Goes on from a saved conversation: `messages` become the transcript; the system
    /// prompt and tools stay this session's.
    pub fn restore(&mut self, messages: Vec<Message>) {
        for m in &messages {
            if m.role == agentls_model::Role::User {
                for part in &m.parts {
                    if let Part::Text(text) = part {
                        self.remember_named(text);
                    }
                }
            }
        }
        self.request.messages = messages;
    }

    /// Keeps the words of a user's `text` that may name files (the field `named`).
    fn remember_named(&mut self, text: &str) {
        for word in crate::workspace_paths::path_words(text) {
            if self.named.len() >= crate::workspace_paths::MAX_NAMED {
                break;
            }
            if !self.named.iter().any(|n| n == word) {
                self.named.push(word.to_owned());
            }
        }
    }

    /// For the lean profile, when its prompt lists only the workspace's first files: the
    /// files semantic search finds for `task`, as a note for the model. A small model
    /// that starts from the files that matter reads them instead of wandering the tree.
    /// The session's first message only: a follow-up ("go on", "yes") names no task.
    async fn files_for_task(&self, task: &str) -> Option<String> {
        let first = !self
            .request
            .messages
            .iter()
            .any(|m| m.role == agentls_model::Role::User);
        if !first || !self.provider.profile().lean_tools || self.static_ctx.more_files == 0 {
            return None;
        }
        let (semantic, index) = (self.ctx.semantic.clone(), self.ctx.index.clone());
        let text = task.to_owned();
        let search = tokio::task::spawn_blocking(move || {
            semantic.search(&index, &text, TASK_FILES_HITS, None)
        });
        // A hint, not a step: the first search of a session chunks the workspace, and
        // the model does not wait long for it, nor past a cancel.
        let answer = tokio::select! {
            answer = search => answer.ok()?,
            () = self.ctx.cancel.cancelled() => return None,
            () = tokio::time::sleep(TASK_FILES_WAIT) => {
                tracing::debug!("files for the task: no answer within {TASK_FILES_WAIT:?}");
                return None;
            }
        };
        let files = answer.files(TASK_FILES);
        if files.is_empty() {
            return None;
        }
        let names: Vec<String> = files
            .iter()
            .map(|p| {
                p.strip_prefix(&self.ctx.root)
                    .unwrap_or(p)
                    .display()
                    .to_string()
            })
            .collect();
        self.log(
            "task_files",
            json!({ "files": names, "ranking": answer.ranking() }),
        );
        // How they were ranked goes to the trajectory, not to a small model: the
        // words about installing an embedding model are the user's business.
        Some(format!(
            "Files that may matter for this task (semantic search on it): {}",
            names.join(", ")
        ))
    }

    /// The conversation so far.
    pub fn transcript(&self) -> &[Message] {
        &self.request.messages
    }

    /// The request the next step would send (system prompt, tools, transcript).
    pub fn request(&self) -> &ChatRequest {
        &self.request
    }

    /// The name of the model in use (its provider's).
    pub fn model_name(&self) -> &str {
        self.provider.name()
    }

    /// The context window of the model in use, in tokens.
    pub fn context_window(&self) -> u32 {
        self.provider.profile().context_window
    }

    /// Totals so far.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Masked tool outputs.
    pub fn artifacts(&self) -> &Artifacts {
        &self.artifacts
    }

    /// The trajectory being written, if any.
    pub fn trajectory(&self) -> Option<&Trajectory> {
        self.trajectory.as_ref()
    }

    /// The token that cancels the current run (model call and running tools). After a
    /// cancelled run the next run gets a fresh token: ask again.
    pub fn cancel_token(&self) -> CancellationToken {
        self.ctx.cancel.clone()
    }

    /// The token that cancels the next run: the current one, or a fresh one when the
    /// last run spent it.
    pub fn fresh_cancel_token(&mut self) -> CancellationToken {
        if self.spent_cancel {
            self.ctx.cancel = CancellationToken::new();
            self.spent_cancel = false;
        }
        self.ctx.cancel.clone()
    }

    /// Hands the session to another model: it gets its own tool set and system prompt,
    /// a note that it takes over, and calls in the history to tools it lacks become text.
    pub fn switch_model(&mut self, provider: Arc<dyn Provider>) {
        let note = self.hand_over(provider);
        self.pending_note = Some(note);
    }

    /// Switches to `provider` and returns the takeover note for it.
    fn hand_over(&mut self, provider: Arc<dyn Provider>) -> String {
        let from = self.provider.name().to_owned();
        self.provider = provider;
        self.configure_for_model();
        let offered = self.tools.clone();
        let lacking: std::collections::HashSet<String> = self
            .request
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolCall(c) if offered.get(&c.name).is_none() => Some(c.id.clone()),
                _ => None,
            })
            .collect();
        for m in &mut self.request.messages {
            for p in &mut m.parts {
                let text = match p {
                    Part::ToolCall(c) if lacking.contains(&c.id) => {
                        format!("\n[earlier call by {from}: {}({})]\n", c.name, c.arguments)
                    }
                    Part::ToolResult(r) if lacking.contains(&r.call_id) => {
                        format!("[result of that call: {}]\n", r.content)
                    }
                    _ => continue,
                };
                *p = Part::Text(text);
            }
        }
        format!(
            "[Note: you are taking over this session from the model {from}. Its work so far is above.]\n\n"
        )
    }

    /// Asks the router (if any) for this call's model and hands over when it changes.
    fn route(&mut self, step: u32) {
        let Some(routing) = &self.routing else {
            return;
        };
        let mut input = RouteInput::new(match self.config.mode {
            crate::config::Mode::Agent => Phase::Implement,
            crate::config::Mode::Ask => Phase::Ask,
            crate::config::Mode::Plan => Phase::Plan,
        });
        input.request_chars = self.request_chars;
        input.failures = self.failures;
        input.history_turns = self
            .request
            .messages
            .iter()
            .filter(|m| m.role == agentls_model::Role::Assistant)
            .count();
        input.prompt_tokens = compaction::estimate_tokens(&self.request) as u64;
        let route = routing.router.route(&input);
        let reason = route.reasons.join("; ");
        let chosen = routing
            .providers
            .iter()
            .find(|p| p.name() == route.model)
            .cloned();
        self.log(
            "route",
            json!({
                "step": step,
                "model": route.model,
                "tier": format!("{:?}", route.tier),
                "score": route.score,
                "reasons": route.reasons,
                "failures": input.failures,
                "prompt_tokens": input.prompt_tokens,
            }),
        );
        self.send(Event::Routed {
            model: route.model.clone(),
            reason,
        });
        match chosen {
            Some(p) if p.name() != self.provider.name() => {
                let worked = self
                    .request
                    .messages
                    .iter()
                    .any(|m| m.role == agentls_model::Role::Assistant);
                if !worked {
                    // Nobody to take over from: just start on the chosen model.
                    self.provider = p;
                    self.configure_for_model();
                    return;
                }
                let note = self.hand_over(p);
                match self.request.messages.last_mut() {
                    Some(m) if m.role == agentls_model::Role::User => {
                        m.parts.push(Part::Text(note))
                    }
                    _ => self.request.messages.push(Message::user(note)),
                }
            }
            Some(_) => {}
            None => {
                tracing::warn!(model = %route.model, "the router chose a model that is not available; keeping the current one")
            }
        }
    }

    fn configure_for_model(&mut self) {
        let profile = self.provider.profile();
        self.tools = self
            .all_tools
            .offered(self.config.mode, profile.edit_format);
        if profile.lean_tools {
            self.tools = self.tools.lean();
        }
        self.request.system = Some(system_prompt(profile, self.config.mode, &self.static_ctx));
        self.request.fixed_system =
            Some(crate::context::fixed_prompt(profile, self.config.mode).len());
        self.request.tools = self.tools.defs();
    }

    /// Adds the user's `message` and runs until the model is done or a limit is hit.
    pub async fn run(&mut self, message: impl Into<String>) -> Status {
        let message = message.into();
        self.echo_nudged = false;
        self.runaway_nudged = false;
        self.final_checked = false;
        self.edited_this_run = false;
        self.asked_question = message.trim_end().ends_with('?');
        self.challenged.clear();
        self.log("user", json!({ "text": message }));
        let mut parts = Vec::new();
        if let Some(note) = self.pending_note.take() {
            parts.push(Part::Text(note));
        }
        self.request_chars = message.chars().count();
        self.remember_named(&message);
        let found = self.files_for_task(&message).await;
        parts.push(Part::Text(message.clone()));
        if let Some(note) = found {
            parts.push(Part::Text(note));
        }
        let first = !self
            .request
            .messages
            .iter()
            .any(|m| m.role == agentls_model::Role::User);
        self.request.messages.push(Message {
            role: agentls_model::Role::User,
            parts,
        });
        if first && let Some(status) = self.solve_first(&message).await {
            return status;
        }
        self.resume().await
    }

    /// The small-model pipeline ([`crate::solve`]) on a session's first task, when the
    /// profile and the task's shape call for it: the run's status when it landed a
    /// change; `None` and the tool loop runs as before when it did not.
    async fn solve_first(&mut self, task: &str) -> Option<Status> {
        if !self.config.mode.allows_writes() || !crate::solve::applies(&*self.provider, task) {
            return None;
        }
        let start = Instant::now();
        self.send(Event::Status {
            status: SessionStatus::Running,
            model: self.provider.name().to_owned(),
        });
        // Four fifths of the wall-time budget: the rest is the tool loop's, should the
        // pipeline choose nothing.
        let mut solve = self.config.solve.clone();
        if solve.deadline.is_none() {
            solve.deadline = start.checked_add(self.config.budget.max_wall.mul_f32(0.8));
        }
        let solved = crate::solve::solve_small(
            &self.provider,
            &self.ctx,
            task,
            &solve,
            self.events.as_ref(),
        )
        .await?;
        self.metrics.steps += solved.calls;
        self.metrics.input_tokens += solved.usage.input;
        self.metrics.cached_input_tokens += solved.usage.cached_input;
        self.metrics.output_tokens += solved.usage.output;
        self.metrics.model_ms += solved.model_ms;
        self.metrics.wall_ms += ms(start.elapsed());
        self.log("solve", json!(solved.report));
        let answer = match solved.answer {
            Some(answer) => answer,
            // Candidates drawn and none verified: with `auto`, the turn ends with what
            // was tried. The tool loop after it solved none of the suite's tasks on
            // the embedded models and made unverified edits (docs/results.md).
            None if self.provider.profile().solver == agentls_model::Solver::Auto => {
                solved.refuted()?
            }
            None => return None,
        };
        self.request
            .messages
            .push(Message::assistant(answer.clone()));
        let status = Status::Done { answer };
        self.send(crate::event::finished(&status, &self.metrics));
        Some(status)
    }

    /// Goes on from where the last run stopped (after a provider error, say) without a
    /// new user message.
    pub async fn resume(&mut self) -> Status {
        if self.spent_cancel {
            self.ctx.cancel = CancellationToken::new();
            self.spent_cancel = false;
        }
        let start = Instant::now();
        let wall_before = self.metrics.wall_ms;
        self.send(Event::Status {
            status: SessionStatus::Running,
            model: self.provider.name().to_owned(),
        });
        let status = self.run_loop(start, wall_before).await;
        self.metrics.wall_ms = wall_before + ms(start.elapsed());
        self.spent_cancel = self.ctx.cancel.is_cancelled();
        self.log(
            "end",
            json!({
                "status": status,
                "metrics": self.metrics,
                "harness_ms": self.metrics.harness_ms(),
                "cache_hit_rate": self.metrics.cache_hit_rate(),
            }),
        );
        self.send(crate::event::finished(&status, &self.metrics));
        status
    }

    async fn run_loop(&mut self, start: Instant, wall_before: f64) -> Status {
        let mut steps_this_run = 0u32;
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Status::Cancelled;
            }
            if let Some(limit) = self.budget_reached(start, wall_before) {
                return Status::BudgetExhausted {
                    limit: limit.into(),
                };
            }
            let step = self.metrics.steps + 1;
            self.route(step);
            self.maybe_compact().await;
            self.metrics.steps += 1;
            steps_this_run += 1;
            self.send(Event::Step { step });

            let response = match self.call_model(step).await {
                Ok(r) => r,
                Err(e) => return self.model_failed(step, e),
            };
            let calls = response.tool_calls.clone();
            self.request.messages.push(response.to_message());
            if calls.is_empty() {
                match self.answered(step, &response.text, response.stop).await {
                    Some(answer) => {
                        tracing::debug!(steps_this_run, "session done");
                        return Status::Done { answer };
                    }
                    None => continue,
                }
            }
            let outcomes = self.run_calls(step, &calls).await;
            self.account(&outcomes);
            self.request.messages.push(Message::tool_results(
                outcomes.iter().map(CallOutcome::to_tool_result).collect(),
            ));
        }
    }

    /// What runs this session's tool calls.
    fn dispatch(&self) -> Dispatch<'_> {
        Dispatch {
            tools: &self.tools,
            ctx: &self.ctx,
            lock: &self.lock,
            mode: self.config.mode,
            timeout: self.config.tool_timeout,
            events: self.events.as_ref(),
        }
    }

    /// The budget's limit reached before the next model call, if any.
    fn budget_reached(&self, start: Instant, wall_before: f64) -> Option<&'static str> {
        let budget = &self.config.budget;
        if self.metrics.steps >= budget.max_steps {
            Some("steps")
        } else if self.metrics.total_tokens() >= budget.max_tokens {
            Some("tokens")
        } else if wall_before + ms(start.elapsed()) >= ms(budget.max_wall) {
            Some("wall_time")
        } else {
            None
        }
    }

    /// How a run ends when the model call failed: cancelled, or a provider error told
    /// to the user. The step is not counted.
    fn model_failed(&mut self, step: u32, e: agentls_model::ModelError) -> Status {
        self.metrics.steps -= 1;
        let class = class_name(e.class);
        self.log(
            "error",
            json!({"step": step, "class": class, "message": e.message}),
        );
        if e.class == agentls_model::ErrorClass::UserAborted {
            return Status::Cancelled;
        }
        self.send(Event::Error {
            class: class.into(),
            message: e.message.clone(),
        });
        Status::ProviderError {
            class: class.into(),
            message: e.message,
        }
    }

    /// The model answered without calling a tool: the answer to end the run with, or
    /// `None` when the harness asks once more (a runaway, an echoed tool result or
    /// template text), challenges the answer, or runs the project's check.
    async fn answered(
        &mut self,
        step: u32,
        text: &str,
        stop: agentls_model::StopReason,
    ) -> Option<String> {
        let runaway = stop == agentls_model::StopReason::Other(RUNAWAY_STOP.to_owned());
        if runaway {
            self.log("guard", json!({"step": step, "guard": "runaway"}));
        }
        if runaway && !self.runaway_nudged {
            // The provider cut the answer short as it repeated itself: no answer to
            // give the user. Ask once more; a second one stands.
            self.runaway_nudged = true;
            self.request.messages.push(Message::user(
                "(from the harness) Your last message repeated itself over and over and was cut off. Either call a tool, or give your final answer briefly, in plain words.",
            ));
            return None;
        }
        if !self.echo_nudged && self.echoes_last_results(text) {
            // A copy of the tool result it follows is not an answer either.
            self.echo_nudged = true;
            self.log("guard", json!({"step": step, "guard": "result_echo"}));
            self.request.messages.push(Message::user(
                "(from the harness) Your last message repeated a tool result: it is not an answer. Either call a tool, or give your final answer in plain words.",
            ));
            return None;
        }
        let mut answer = text;
        if crate::repeats::is_template_echo(text) {
            // Small models imitate the chat template: an invented tool response is not
            // an answer. Keep what came before it, or ask once more.
            answer = crate::repeats::before_template(text);
            self.log("guard", json!({"step": step, "guard": "template_echo"}));
            if answer.is_empty() && !self.echo_nudged {
                self.echo_nudged = true;
                self.request.messages.push(Message::user(
                    "(from the harness) Your last message was template text, not an answer: tool results come only from the harness. Either call a tool, or give your final answer in plain words.",
                ));
                return None;
            }
        }
        let answer = crate::repeats::without_dangling_fence(answer).to_owned();
        if self.challenge(step) || self.final_check(step).await {
            return None;
        }
        Some(answer)
    }

    /// Runs the model's calls of this step: those the repeat guard refuses (and, for
    /// the lean profile, edits of files the model has not read) get their refusal,
    /// the rest run through [`Dispatch`]; notes of the repeat guard are added. One
    /// outcome per call, in the calls' order.
    async fn run_calls(
        &mut self,
        step: u32,
        calls: &[agentls_model::ToolCall],
    ) -> Vec<CallOutcome> {
        let t0 = Instant::now();
        let mut refused: Vec<Option<(&str, String)>> = calls
            .iter()
            .map(|c| self.repeats.refuses(c, step).map(|why| ("refused", why)))
            .collect();
        if self.provider.profile().lean_tools {
            for (call, refusal) in calls.iter().zip(refused.iter_mut()) {
                if refusal.is_none()
                    && let Some(why) =
                        agentls_tools::read_before_edit(&self.ctx, &call.name, &call.arguments)
                            .await
                {
                    *refusal = Some(("unread", why));
                }
            }
        }
        let runnable: Vec<agentls_model::ToolCall> = calls
            .iter()
            .zip(&refused)
            .filter(|(_, r)| r.is_none())
            .map(|(c, _)| c.clone())
            .collect();
        let mut ran = self.dispatch().run(&runnable).await.into_iter();
        let mut outcomes = Vec::with_capacity(calls.len());
        for (call, refusal) in calls.iter().zip(refused) {
            match refusal {
                Some((kind, why)) => {
                    self.log(
                        "guard",
                        json!({"step": step, "guard": kind, "tool": call.name}),
                    );
                    outcomes.push(CallOutcome {
                        call: call.clone(),
                        result: Err(agentls_tools::ToolError::invalid_arguments(why)),
                        span: (Duration::ZERO, Duration::ZERO),
                    });
                }
                None => outcomes.extend(ran.next()),
            }
        }
        for o in &mut outcomes {
            if o.result.is_ok() && crate::final_check::edits(&o.call.name) {
                self.repeats.workspace_changed(&o.call);
            }
            let seen = crate::repeats::Seen::of(&o.result);
            if let crate::repeats::Verdict::Note(note) = self.repeats.record(&o.call, step, seen) {
                self.log(
                    "guard",
                    json!({"step": step, "guard": "noted", "tool": o.call.name}),
                );
                match &mut o.result {
                    Ok(out) => out.content = format!("{}\n\n{note}", out.content),
                    Err(e) => e.message = format!("{}\n\n{note}", e.message),
                }
            }
        }
        self.metrics.tool_ms += ms(t0.elapsed());
        outcomes
    }

    /// Counts a step's outcomes: metrics, edits since the last command, refusals, and
    /// whether the step failed (a refusal by the user is not the model failing; a
    /// failing build or test run is).
    fn account(&mut self, outcomes: &[CallOutcome]) {
        for o in outcomes {
            self.note_outcome(o);
            if o.result.is_ok() {
                if crate::final_check::edits(&o.call.name) {
                    self.edited_since_command = true;
                    self.edited_this_run = true;
                } else if o.call.name == "run_command" {
                    self.edited_since_command = false;
                }
            }
        }
        if let Ok(mut refused) = self.approvals.refused.lock() {
            self.metrics.refused.append(&mut refused);
        }
        let failed = |o: &CallOutcome| match &o.result {
            Ok(out) => out.failed,
            Err(e) => e.class != agentls_tools::ErrorClass::UserAborted,
        };
        if outcomes.iter().any(failed) {
            self.failures += 1;
            self.metrics.failed_steps += 1;
        } else {
            self.failures = 0;
        }
    }

    async fn call_model(
        &mut self,
        step: u32,
    ) -> Result<agentls_model::Response, agentls_model::ModelError> {
        if self.trajectory.is_some() {
            self.log(
                "request",
                json!({
                    "step": step,
                    "model": self.provider.name(),
                    "messages": self.request.messages.len(),
                    "approx_tokens": compaction::estimate_tokens(&self.request),
                }),
            );
        }
        if self.provider.constrains_arguments() {
            self.request.paths =
                crate::workspace_paths::constraint_async(&self.ctx, &self.tools, &self.named).await;
        }
        self.request.forbidden_tools = self.repeats.refused_tools(step);
        let t0 = Instant::now();
        let sent_chars = self.request.approx_chars();
        let mut stream = self.provider.stream(&self.request, self.ctx.cancel.clone());
        let mut acc = Accumulator::default();
        let mut failure = None;
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(ev) => {
                    match &ev {
                        StreamEvent::TextDelta(t) if self.events.is_some() => {
                            self.send(Event::TextDelta { text: t.clone() });
                        }
                        StreamEvent::Usage(u) => {
                            if u.input > 0 {
                                self.chars_per_token = (sent_chars as f64 / u.input as f64)
                                    .clamp(1.0, compaction::CHARS_PER_TOKEN);
                            }
                            self.send(Event::Usage {
                                input: u.input,
                                cached_input: u.cached_input,
                                output: u.output,
                            })
                        }
                        _ => {}
                    }
                    acc.push(&ev);
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        drop(stream);
        let took = t0.elapsed();
        self.metrics.model_ms += ms(took);
        if let Some(e) = failure {
            return Err(e);
        }
        let response = acc.finish();
        let profile = self.provider.profile().clone();
        self.metrics.add_usage(&response.usage, &profile);
        if self.trajectory.is_some() {
            let calls: Vec<_> = response
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
            self.log(
                "response",
                json!({
                    "step": step,
                    "text": response.text,
                    "tool_calls": calls,
                    "stop": format!("{:?}", response.stop),
                    "usage": {
                        "input": response.usage.input,
                        "cached_input": response.usage.cached_input,
                        "cache_write": response.usage.cache_write,
                        "output": response.usage.output,
                    },
                    "model_ms": ms(took),
                }),
            );
        }
        Ok(response)
    }

    /// Whether `answer` opens with a copy of a tool result of the step before it.
    fn echoes_last_results(&self, answer: &str) -> bool {
        // The last message is the answer itself; the one before, the results it follows.
        let Some(before) = self.request.messages.iter().rev().nth(1) else {
            return false;
        };
        crate::repeats::echoes_result(
            answer,
            before.parts.iter().filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.content.as_str()),
                _ => None,
            }),
        )
    }

    /// The lean profile holds a small model's answer to its workflow (read, edit, run
    /// the tests, answer): an answer with no edit in the run, or after edits no command
    /// checked (and no final check configured to do it), goes back once per run each,
    /// saying what is missing. True when it went back. Small models answered "No changes
    /// needed." after reading one file. A question (a message ending with `?`) is not
    /// sent back for want of an edit: a small model told to change something might.
    fn challenge(&mut self, step: u32) -> bool {
        if !self.provider.profile().lean_tools
            || self.config.mode != crate::Mode::Agent
            || self.ctx.cancel.is_cancelled()
        {
            return false;
        }
        let (kind, note) = if !self.edited_this_run && !self.asked_question {
            ("no_edit", crate::final_check::NO_EDIT_NOTE)
        } else if self.edited_since_command && self.config.final_check.is_none() {
            ("untested", crate::final_check::UNTESTED_NOTE)
        } else {
            return false;
        };
        if self.challenged.contains(&kind) {
            return false;
        }
        self.challenged.push(kind);
        self.log("guard", json!({"step": step, "guard": kind}));
        self.request.messages.push(Message::user(note));
        true
    }

    /// Runs the project's check when the model is about to finish after edits it did
    /// not check; true when the check failed and its output went back to the model.
    async fn final_check(&mut self, step: u32) -> bool {
        let Some(command) = self.config.final_check.clone() else {
            return false;
        };
        if !self.edited_since_command
            || self.final_checked
            || self.config.mode != crate::Mode::Agent
            || self.ctx.cancel.is_cancelled()
        {
            return false;
        }
        self.final_checked = true;
        let call = agentls_model::ToolCall {
            id: format!("final-check-{step}"),
            name: "run_command".to_owned(),
            arguments: json!({ "command": command }).to_string(),
        };
        let t0 = Instant::now();
        let outcome = self
            .dispatch()
            .run(std::slice::from_ref(&call))
            .await
            .into_iter()
            .next();
        self.metrics.tool_ms += ms(t0.elapsed());
        let Some(outcome) = outcome else {
            return false;
        };
        self.note_outcome(&outcome);
        self.edited_since_command = false;
        // Only a check that ran and failed goes back: one that could not run (no
        // sandbox, refused by the user) says nothing about the edits.
        let failed_output = match &outcome.result {
            Ok(out) if out.failed => Some(out.content.clone()),
            _ => None,
        };
        self.log(
            "final_check",
            json!({"step": step, "command": command, "failed": failed_output.is_some(), "ran": outcome.result.is_ok()}),
        );
        let Some(output) = failed_output else {
            return false;
        };
        self.metrics.failed_steps += 1;
        self.request
            .messages
            .push(Message::user(crate::final_check::failed_note(
                &command, &output,
            )));
        true
    }

    fn note_outcome(&mut self, o: &CallOutcome) {
        let class = o.result.as_ref().err().map(|e| e.class);
        self.metrics.add_call(&o.call.name, class);
        if o.result.as_ref().is_ok_and(|out| out.failed) {
            self.metrics.failed_commands += 1;
        }
        if self.trajectory.is_some() {
            let (ok, content) = match &o.result {
                Ok(out) => (true, out.content.as_str()),
                Err(e) => (false, e.message.as_str()),
            };
            let mut content = content.to_owned();
            if content.len() > MAX_LOGGED_OUTPUT {
                let mut cut = MAX_LOGGED_OUTPUT;
                while !content.is_char_boundary(cut) {
                    cut -= 1;
                }
                content.truncate(cut);
                content.push_str("[… cut]");
            }
            self.log(
                "tool",
                json!({
                    "id": o.call.id,
                    "name": o.call.name,
                    "arguments": o.call.arguments,
                    "ok": ok,
                    "error_class": class.map(class_name),
                    "content": content,
                    "start_ms": ms(o.span.0),
                    "end_ms": ms(o.span.1),
                }),
            );
        }
    }

    /// The request's size in tokens, estimated from its characters at the rate the
    /// provider last counted.
    fn estimated_tokens(&self) -> usize {
        (self.request.approx_chars() as f64 / self.chars_per_token) as usize
    }

    /// Compacts the conversation now, whatever its size (a front end's compaction op):
    /// old tool outputs masked, everything before the last exchange folded into a
    /// summary. How many outputs were masked and messages folded; a `compacted` event
    /// when either is more than none.
    pub async fn compact(&mut self) -> (usize, usize) {
        let cfg = &self.config.compaction;
        let (keep, min_bytes) = (cfg.keep_recent.min(2), cfg.min_mask_bytes);
        let masked = compaction::mask_old_outputs(
            &mut self.request.messages,
            keep,
            min_bytes,
            &self.artifacts,
        );
        let summarized = compaction::summarize(
            &mut self.request.messages,
            keep,
            self.summarizer.as_deref(),
            &self.ctx.cancel,
        )
        .await;
        if masked + summarized > 0 {
            self.metrics.compactions += 1;
            self.log(
                "compaction",
                json!({"masked": masked, "summarized": summarized, "asked": true,
                       "approx_tokens_after": compaction::estimate_tokens(&self.request)}),
            );
            self.send(Event::Compacted { masked, summarized });
        }
        (masked, summarized)
    }

    async fn maybe_compact(&mut self) {
        let cfg = &self.config.compaction;
        let window = self.provider.profile().context_window as f64;
        let limit = (window * f64::from(cfg.threshold)) as usize;
        if self.estimated_tokens() <= limit {
            return;
        }
        let masked = compaction::mask_old_outputs(
            &mut self.request.messages,
            cfg.keep_recent,
            cfg.min_mask_bytes,
            &self.artifacts,
        );
        let mut summarized = 0;
        if self.estimated_tokens() > limit {
            let summarizer = self.summarizer.as_deref();
            summarized = compaction::summarize(
                &mut self.request.messages,
                cfg.keep_recent,
                summarizer,
                &self.ctx.cancel,
            )
            .await;
        }
        let mut masked = masked;
        if self.estimated_tokens() > limit {
            // Still too big: only the newest turn keeps its outputs whole.
            masked += compaction::mask_old_outputs(
                &mut self.request.messages,
                1,
                cfg.min_mask_bytes,
                &self.artifacts,
            );
        }
        if masked + summarized > 0 {
            self.metrics.compactions += 1;
            self.log(
                "compaction",
                json!({"masked": masked, "summarized": summarized,
                       "approx_tokens_after": compaction::estimate_tokens(&self.request)}),
            );
            self.send(Event::Compacted { masked, summarized });
        }
    }

    fn send(&self, ev: Event) {
        if let Some(tx) = &self.events {
            let _ = tx.send(ev);
        }
    }

    fn log(&self, kind: &str, fields: serde_json::Value) {
        if let Some(t) = &self.trajectory {
            t.record(kind, fields);
        }
    }
}

//! What a pipeline run reports: its targets, every candidate, the pick and why.

use agentls_model::Usage;
use serde::Serialize;

/// One candidate as the report keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    /// The file it changes, below the root.
    pub path: String,
    /// Its sampling: temperature and seed (`None` for greedy).
    pub temperature: f32,
    /// The seed it was sampled with.
    pub seed: Option<u64>,
    /// From the repair round.
    pub repair: bool,
    /// Written as the middle of the file (fill-in-the-middle), not as a whole function.
    pub fim: bool,
    /// The file's new text; `None` when the answer changed nothing or had no code.
    pub text: Option<String>,
    /// The other files the candidate changes, `(path below the root, new text)`: a
    /// rename spans files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<(String, String)>,
    /// What the checks said, for people.
    pub verdict: String,
    /// It parses and compiles.
    pub builds: bool,
    /// Every check that ran passed.
    pub passes: bool,
}

/// What a pipeline run did: its targets, every candidate, the pick and why.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SolveReport {
    /// The strategy that made it ([`super::strategy`]): "rename", "reword",
    /// "characterise", "edit set", "rewrite".
    pub strategy: String,
    /// Why that strategy applied, from what the workspace holds.
    pub applies: String,
    /// Where it looked, and why there.
    pub targets: Vec<String>,
    /// The project's test command, if it found one.
    pub tests: Option<String>,
    /// What the checks said of the workspace as it was.
    pub baseline: String,
    /// Every candidate, in order.
    pub candidates: Vec<CandidateReport>,
    /// The model's assertions that told candidates apart, when it was asked for them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<String>,
    /// The disputes the model judged (`CALL: VALUE` it found most likely, `(of N)`
    /// values the candidates returned), when candidates were told apart that way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judged: Vec<String>,
    /// The chosen candidate's index.
    pub chosen: Option<usize>,
    /// Why it was chosen (or why none was).
    pub reason: String,
    /// Whether the chosen change landed.
    pub landed: bool,
    /// Where the time went.
    pub timings: SolveTimings,
    /// Tokens drafted from the original code for greedy answers (prompt lookup), and
    /// how many of them the model kept: what speculative rewriting saved.
    pub drafted: u64,
    /// Of the drafted tokens, those the model kept.
    pub accepted: u64,
}

/// Where a strategy's time went, in ms: what to make faster next.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SolveTimings {
    /// Reading prompts (until each answer's first token) and scoring.
    pub prompt_ms: f64,
    /// Writing answers (after their first token).
    pub decode_ms: f64,
    /// Running the checks on candidates (syntax, compile, tests) in the sandbox.
    pub verify_ms: f64,
    /// Telling candidates apart when no test did (examples, the model's assertions
    /// and judgements), model time included.
    pub judge_ms: f64,
}

impl SolveTimings {
    /// "prompt 1.2 s, decoding 8.0 s, checks 3.1 s, judging 0.0 s".
    pub fn phrase(&self) -> String {
        format!(
            "prompt {:.1} s, decoding {:.1} s, checks {:.1} s, judging {:.1} s",
            self.prompt_ms / 1000.0,
            self.decode_ms / 1000.0,
            self.verify_ms / 1000.0,
            self.judge_ms / 1000.0
        )
    }
}

impl SolveReport {
    /// "4/8 candidates compile, 2 pass the tests".
    pub fn tally(&self) -> String {
        let n = self.candidates.len();
        let builds = self.candidates.iter().filter(|c| c.builds).count();
        let passes = self.candidates.iter().filter(|c| c.passes).count();
        let what = if self.tests.is_some() {
            "pass the tests"
        } else {
            "pass every check"
        };
        format!("{builds}/{n} candidates compile, {passes} {what}")
    }
}

/// What [`solve_small`] hands back to the session.
#[derive(Debug)]
pub struct Solved {
    /// The report.
    pub report: SolveReport,
    /// The answer for the user (what changed and why), when a change landed.
    pub answer: Option<String>,
    /// Model calls made.
    pub calls: u32,
    /// Their tokens.
    pub usage: Usage,
    /// Time waiting for the model, in ms.
    pub model_ms: f64,
}

impl Solved {
    /// What the user is told when the pipeline drew candidates and landed none, so
    /// that the turn ends there (`solver = "auto"`): which way ran, on what, the tally
    /// and why nothing was chosen. `None` when no candidate was drawn (nothing applied
    /// far enough to try): the tool loop may still read and answer.
    pub fn refuted(&self) -> Option<String> {
        if self.answer.is_some() || self.report.candidates.is_empty() {
            return None;
        }
        let r = &self.report;
        let why = if r.reason.is_empty() {
            "no candidate was verified"
        } else {
            r.reason.as_str()
        };
        let tried = if r.targets.is_empty() {
            String::new()
        } else {
            format!(" {}", r.targets.join("; "))
        };
        Some(format!(
            "No change made: {why}. The {} tried{tried} ({}). Your files are as they were.",
            r.strategy,
            r.tally()
        ))
    }
}

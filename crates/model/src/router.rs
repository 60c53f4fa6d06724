//! The `auto` model: picks the fast or the strong model per request, and says why.

use serde::{Deserialize, Serialize};

/// `[router]` in the config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    /// Cheap, quick model (configured name).
    pub fast: String,
    /// Capable model (configured name).
    pub strong: String,
    /// How to choose.
    #[serde(default)]
    pub mode: RouterMode,
    /// Score at which a request goes to the strong model.
    #[serde(default = "default_threshold")]
    pub threshold: u32,
}

fn default_threshold() -> u32 {
    4
}

/// Routing strategy.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RouterMode {
    /// Score each request's complexity.
    #[default]
    Auto,
    /// Plan with the strong model, implement with the fast one (escalating on
    /// repeated failures).
    PlanStrongImplementFast,
}

/// What the agent is doing with this request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Answer a question.
    Ask,
    /// Make a plan.
    Plan,
    /// Carry out edits.
    Implement,
    /// Fix a diagnostic or failing test.
    Fix,
    /// Cheap housekeeping: summaries for compaction, titles.
    Summarize,
}

/// What the router knows about a request.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteInput {
    /// Phase.
    pub phase: Phase,
    /// Characters of the user's request.
    pub request_chars: usize,
    /// Files involved (selected, mentioned, touched so far).
    pub files: usize,
    /// Symbols involved.
    pub symbols: usize,
    /// Turns in the conversation so far.
    pub history_turns: usize,
    /// Consecutive failed attempts (edits refused, tests still failing).
    pub failures: usize,
    /// Estimated prompt tokens.
    pub prompt_tokens: u64,
}

impl RouteInput {
    /// A request in `phase` with nothing else known.
    pub fn new(phase: Phase) -> Self {
        Self {
            phase,
            request_chars: 0,
            files: 0,
            symbols: 0,
            history_turns: 0,
            failures: 0,
            prompt_tokens: 0,
        }
    }
}

/// Which side was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The fast model.
    Fast,
    /// The strong model.
    Strong,
}

/// A routing decision and its reasons, for the trajectory log.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// Configured name of the chosen model.
    pub model: String,
    /// Tier.
    pub tier: Tier,
    /// Complexity score (meaningful in [`RouterMode::Auto`]).
    pub score: u32,
    /// Why, one short phrase per signal that counted.
    pub reasons: Vec<String>,
}

/// The router.
#[derive(Clone, Debug)]
pub struct Router {
    config: RouterConfig,
    fast_context: u32,
}

impl Router {
    /// A router; `fast_context` is the fast model's context window, since a prompt
    /// that does not fit must go to the strong one.
    pub fn new(config: RouterConfig, fast_context: u32) -> Self {
        Self {
            config,
            fast_context,
        }
    }

    /// Picks a model for one request.
    pub fn route(&self, input: &RouteInput) -> Route {
        let mut reasons = Vec::new();
        // Hard rules first: they hold in every mode.
        if input.prompt_tokens > u64::from(self.fast_context) * 9 / 10 {
            reasons.push(format!(
                "prompt of ~{} tokens does not fit the fast model's {} window",
                input.prompt_tokens, self.fast_context
            ));
            return self.pick(Tier::Strong, 0, reasons);
        }
        if input.phase == Phase::Summarize {
            reasons.push("housekeeping step (summary)".into());
            return self.pick(Tier::Fast, 0, reasons);
        }
        if input.failures >= 2 {
            reasons.push(format!(
                "{} failed attempts in a row: escalate",
                input.failures
            ));
            return self.pick(Tier::Strong, 0, reasons);
        }
        if self.config.mode == RouterMode::PlanStrongImplementFast {
            return match input.phase {
                Phase::Plan | Phase::Ask => {
                    reasons.push(
                        "plan-strong mode: planning and questions go to the strong model".into(),
                    );
                    self.pick(Tier::Strong, 0, reasons)
                }
                _ => {
                    reasons.push("plan-strong mode: implementation goes to the fast model".into());
                    self.pick(Tier::Fast, 0, reasons)
                }
            };
        }
        let mut score = 0;
        let mut add = |points: u32, why: String| {
            score += points;
            reasons.push(format!("+{points} {why}"));
        };
        match input.request_chars {
            n if n > 2000 => add(2, format!("long request ({n} chars)")),
            n if n > 500 => add(1, format!("medium request ({n} chars)")),
            _ => {}
        }
        match input.files {
            n if n > 3 => add(2, format!("{n} files involved")),
            n if n > 1 => add(1, format!("{n} files involved")),
            _ => {}
        }
        match input.symbols {
            n if n > 10 => add(2, format!("{n} symbols involved")),
            n if n > 3 => add(1, format!("{n} symbols involved")),
            _ => {}
        }
        if input.phase == Phase::Plan {
            add(3, "planning".into());
        }
        if input.history_turns > 20 {
            add(1, format!("long session ({} turns)", input.history_turns));
        }
        if input.failures == 1 {
            add(1, "one failed attempt".into());
        }
        let tier = if score >= self.config.threshold {
            Tier::Strong
        } else {
            Tier::Fast
        };
        reasons.push(format!(
            "score {score} vs threshold {}",
            self.config.threshold
        ));
        self.pick(tier, score, reasons)
    }

    fn pick(&self, tier: Tier, score: u32, reasons: Vec<String>) -> Route {
        let model = match tier {
            Tier::Fast => self.config.fast.clone(),
            Tier::Strong => self.config.strong.clone(),
        };
        tracing::debug!(%model, ?tier, score, ?reasons, "routed");
        Route {
            model,
            tier,
            score,
            reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(mode: RouterMode) -> Router {
        Router::new(
            RouterConfig {
                fast: "small".into(),
                strong: "big".into(),
                mode,
                threshold: 4,
            },
            32_000,
        )
    }

    #[test]
    fn simple_edit_goes_fast() {
        let r = router(RouterMode::Auto).route(&RouteInput {
            request_chars: 80,
            files: 1,
            ..RouteInput::new(Phase::Implement)
        });
        assert_eq!(
            (r.model.as_str(), r.tier, r.score),
            ("small", Tier::Fast, 0)
        );
        assert_eq!(r.reasons, vec!["score 0 vs threshold 4"]);
    }

    #[test]
    fn broad_change_goes_strong_with_reasons() {
        let input = RouteInput {
            request_chars: 2500,
            files: 5,
            symbols: 4,
            ..RouteInput::new(Phase::Implement)
        };
        let r = router(RouterMode::Auto).route(&input);
        assert_eq!((r.tier, r.score), (Tier::Strong, 5));
        assert_eq!(
            r.reasons,
            vec![
                "+2 long request (2500 chars)",
                "+2 5 files involved",
                "+1 4 symbols involved",
                "score 5 vs threshold 4"
            ]
        );
    }

    #[test]
    fn planning_scores_high_and_summaries_stay_fast() {
        let r = router(RouterMode::Auto);
        let plan = r.route(&RouteInput {
            files: 2,
            ..RouteInput::new(Phase::Plan)
        });
        assert_eq!((plan.tier, plan.score), (Tier::Strong, 4));
        let sum = r.route(&RouteInput {
            request_chars: 9000,
            files: 9,
            ..RouteInput::new(Phase::Summarize)
        });
        assert_eq!(sum.tier, Tier::Fast);
    }

    #[test]
    fn hard_rules_override_the_score() {
        let r = router(RouterMode::Auto);
        let big = r.route(&RouteInput {
            prompt_tokens: 30_000,
            ..RouteInput::new(Phase::Summarize)
        });
        assert_eq!(big.tier, Tier::Strong);
        assert!(big.reasons[0].contains("does not fit"), "{:?}", big.reasons);
        let stuck = r.route(&RouteInput {
            failures: 2,
            ..RouteInput::new(Phase::Fix)
        });
        assert_eq!(stuck.tier, Tier::Strong);
    }

    #[test]
    fn plan_strong_implement_fast_mode() {
        let r = router(RouterMode::PlanStrongImplementFast);
        assert_eq!(r.route(&RouteInput::new(Phase::Plan)).model, "big");
        let imp = r.route(&RouteInput {
            request_chars: 5000,
            files: 10,
            ..RouteInput::new(Phase::Implement)
        });
        assert_eq!(imp.model, "small");
        assert!(imp.reasons[0].contains("implementation"));
        assert_eq!(
            r.route(&RouteInput {
                failures: 3,
                ..RouteInput::new(Phase::Implement)
            })
            .model,
            "big"
        );
    }
}

//! Which commands may run without asking: allow, ask or forbid, by argument prefix.
//!
//! The sandbox does not ask anyone; the caller (agent or server) checks a command with
//! [`Policy::check_argv`] or [`Policy::check_shell`] and asks the user on
//! [`Decision::Ask`].
//!
//! **The sandbox, not this policy, is what makes a command safe.** A prefix rule
//! cannot see what a program does (`python3 plant.py` runs whatever the model wrote
//! into `plant.py`), so the default policy does not pretend to: with the full sandbox
//! (no network, writes only to the workspace and a private /tmp, nothing of the host
//! reachable) every command runs unasked, except a few whose very purpose is outward or
//! destructive, which are asked about as a courtesy (`git push`, `cargo publish`,
//! `rm -rf`, `git reset --hard`, `git clean`), and privilege changes, which are
//! forbidden. When the kernel lacks a layer of the sandbox the caller passes
//! [`Decision::Ask`] as the default to [`Policy::check_shell_with_default`], and every
//! command without an allow rule is asked about.

/// What to do with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user first.
    Ask,
    /// Never run it.
    Forbid,
}

/// One rule: commands whose first words equal `prefix` get `decision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Leading words, e.g. `["git", "push"]`.
    pub prefix: Vec<String>,
    /// The decision for matching commands.
    pub decision: Decision,
}

/// Rules by command prefix; the longest matching prefix wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<Rule>,
    default: Decision,
}

impl Default for Policy {
    /// Everything runs (the sandbox contains it); publishing, pushing and wholesale
    /// deletion ask; privilege changes are forbidden. The allow rules below matter when
    /// the sandbox is incomplete and unknown commands are asked about.
    fn default() -> Self {
        let mut p = Policy::new(Decision::Allow);
        for prefix in [
            "cargo build",
            "cargo check",
            "cargo test",
            "cargo clippy",
            "cargo fmt",
            "cargo run",
            "cargo doc",
            "cargo bench",
            "cargo tree",
            "cargo metadata",
            "rustc",
            "go build",
            "go test",
            "go vet",
            "npm test",
            "npm run",
            "npx",
            "yarn test",
            "pnpm test",
            "pytest",
            "python",
            "python3",
            "make",
            "cmake",
            "ctest",
            "ls",
            "cat",
            "head",
            "tail",
            "wc",
            "grep",
            "rg",
            "find",
            "sed -n",
            "echo",
            "true",
            "false",
            "pwd",
            "git status",
            "git diff",
            "git log",
            "git show",
            "git blame",
            "diff",
            "sort",
            "uniq",
            "tree",
            "which",
            "env",
            "test",
        ] {
            p = p.with(prefix, Decision::Allow);
        }
        for prefix in [
            "git push",
            "cargo publish",
            "npm publish",
            "git reset --hard",
            "git clean",
            "rm -rf",
            "rm -fr",
        ] {
            p = p.with(prefix, Decision::Ask);
        }
        for prefix in ["sudo", "su", "doas", "mkfs", "shutdown", "reboot"] {
            p = p.with(prefix, Decision::Forbid);
        }
        p
    }
}

impl Policy {
    /// An empty policy answering `default` for everything.
    pub fn new(default: Decision) -> Self {
        Self {
            rules: Vec::new(),
            default,
        }
    }

    /// Adds a rule; `prefix` is split on whitespace. A later rule with the same prefix
    /// replaces the earlier one.
    pub fn with(mut self, prefix: &str, decision: Decision) -> Self {
        let prefix: Vec<String> = prefix.split_whitespace().map(String::from).collect();
        self.rules.retain(|r| r.prefix != prefix);
        self.rules.push(Rule { prefix, decision });
        self
    }

    /// The rules, in insertion order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The decision for an argument vector. The program is compared by file name, so
    /// `/usr/bin/git push` matches `git push`.
    pub fn check_argv<S: AsRef<str>>(&self, argv: &[S]) -> Decision {
        self.decide(argv).unwrap_or(self.default)
    }

    /// The decision of the longest rule matching `argv`, if any.
    fn decide<S: AsRef<str>>(&self, argv: &[S]) -> Option<Decision> {
        let words: Vec<&str> = argv
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let w = w.as_ref();
                if i == 0 {
                    w.rsplit('/').next().unwrap_or(w)
                } else {
                    w
                }
            })
            .collect();
        self.rules
            .iter()
            .filter(|r| {
                r.prefix.len() <= words.len() && r.prefix.iter().zip(&words).all(|(a, b)| a == b)
            })
            .max_by_key(|r| r.prefix.len())
            .map(|r| r.decision)
    }

    /// The strictest decision over the simple commands of a shell script. The split is
    /// deliberately crude (on `;`, `&`, `|`, newlines, `$(`, backticks, parentheses):
    /// anything it cannot see through, such as `eval` or `sh -c`, falls to the default
    /// unless a rule names it.
    pub fn check_shell(&self, script: &str) -> Decision {
        self.check_shell_with_default(script, self.default)
    }

    /// [`Policy::check_shell`] with `default` for commands no rule names: `Ask` when
    /// the sandbox is incomplete.
    pub fn check_shell_with_default(&self, script: &str, default: Decision) -> Decision {
        self.check_shell_inner(script, default)
    }

    fn check_shell_inner(&self, script: &str, default: Decision) -> Decision {
        let mut worst = None;
        for part in script.split([';', '&', '|', '\n', '`', '(', ')', '{', '}']) {
            let part = part.trim().trim_start_matches('$').trim();
            let mut words: Vec<&str> = part.split_whitespace().collect();
            // Leading `VAR=value` assignments and `!` are not the command.
            while words
                .first()
                .is_some_and(|w| *w == "!" || (w.contains('=') && !w.starts_with('=')))
            {
                words.remove(0);
            }
            if words.is_empty() {
                continue;
            }
            let d = self.decide(&words).unwrap_or(default);
            worst = Some(worst.map_or(d, |w: Decision| w.max(d)));
        }
        worst.unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let p = Policy::new(Decision::Ask)
            .with("git", Decision::Allow)
            .with("git push", Decision::Forbid);
        assert_eq!(p.check_argv(&["git", "status"]), Decision::Allow);
        assert_eq!(
            p.check_argv(&["/usr/bin/git", "push", "origin"]),
            Decision::Forbid
        );
        assert_eq!(p.check_argv(&["gitk"]), Decision::Ask);
        assert_eq!(p.check_argv::<&str>(&[]), Decision::Ask);
    }

    #[test]
    fn shell_takes_the_strictest_part() {
        let p = Policy::default();
        // With the whole sandbox, what no rule names runs: the sandbox contains it.
        assert_eq!(p.check_shell("cargo test && ls"), Decision::Allow);
        assert_eq!(p.check_shell("cargo test; sudo rm x"), Decision::Forbid);
        assert_eq!(p.check_shell("echo $(curl example)"), Decision::Allow);
        assert_eq!(p.check_shell("RUST_LOG=debug cargo test"), Decision::Allow);
        assert_eq!(p.check_shell("git push --force"), Decision::Ask);
        assert_eq!(p.check_shell("cd x && rm -rf build"), Decision::Ask);
        // The promise holds both ways: a script the model wrote and the same code
        // inline get the same answer.
        assert_eq!(
            p.check_shell("python3 plant.py"),
            p.check_shell("python3 -c \"import os; print(os.getcwd())\"")
        );
        // Without the whole sandbox, what no allow rule names is asked about.
        let ask = |s: &str| p.check_shell_with_default(s, Decision::Ask);
        assert_eq!(ask("cargo test && ls"), Decision::Allow);
        assert_eq!(ask("echo $(curl example)"), Decision::Ask);
        assert_eq!(ask("some-tool --version"), Decision::Ask);
        assert_eq!(ask("sudo true"), Decision::Forbid);
        assert_eq!(ask("   "), Decision::Ask);
    }

    #[test]
    fn later_rule_replaces_earlier() {
        let p = Policy::new(Decision::Forbid)
            .with("ls", Decision::Ask)
            .with("ls", Decision::Allow);
        assert_eq!(p.rules().len(), 1);
        assert_eq!(p.check_argv(&["ls", "-la"]), Decision::Allow);
    }
}

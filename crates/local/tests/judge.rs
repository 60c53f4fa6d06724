//! Real-model: the pipeline's judge (`agentls_agent::solve::judge`) reads values as
//! the ends of assertions and the embedded engine scores them (`Provider::score`).
//! On disputes whose right value a 0.5B model knows, the right one must be the most
//! likely; scores are log-probabilities (finite, below zero), one per value, the
//! and the same when asked again in another order (the prompt's cache reused, each
//! value dropped from it after; up to the batch's rounding).
//! Needs the weights (`agentls model fetch qwen2.5-coder-0.5b`, or
//! `AGENTLS_TEST_GGUF_CODER`); without them it prints SKIPPED (fails under CI).

mod common;

use agentls_agent::solve::judge::{self, Dispute};
use agentls_index::Language;
use agentls_local::LocalProvider;
use agentls_model::{CancellationToken, Provider};

fn dispute(call: &str, values: &[&str]) -> Dispute {
    Dispute {
        call: call.to_owned(),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
        by: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_finds_the_right_value_most_likely() {
    let Some(path) = common::coder_model("the_model_finds_the_right_value_most_likely") else {
        return;
    };
    let provider = LocalProvider::load("qwen2.5-coder-0.5b", &path).unwrap();
    let cases = [
        (
            "Implement add in calc.py: the sum of its two arguments.",
            "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    raise NotImplementedError\n",
            "add",
            dispute("add(2, 3)", &["6", "5", "-1"]),
            1,
        ),
        (
            "Implement shout in words.py: the text in upper case with an exclamation mark.",
            "def shout(text):\n    return text\n",
            "shout",
            dispute("shout('hello')", &["'hello'", "'HELLO!'", "'Hello!'"]),
            1,
        ),
        (
            "Implement reverse in seq.py: the items in reverse order.",
            "def reverse(items):\n    pass\n",
            "reverse",
            dispute("reverse([1, 2, 3])", &["[1, 2, 3]", "[]", "[3, 2, 1]"]),
            2,
        ),
    ];
    for (task, definition, name, d, right) in cases {
        let head = judge::header(Language::Python, definition);
        assert!(
            !head.contains("raise NotImplementedError") && !head.contains("return text"),
            "the old body is left out: {head}"
        );
        let req = judge::request(task, Language::Python, "m.py", name, &head);
        let (line, ends) = judge::line(Language::Python, &d);
        let score = async |ends: &[String]| {
            provider
                .score(&req, &line, ends, CancellationToken::new())
                .expect("the embedded engine scores text")
                .await
                .unwrap()
        };
        let scores = score(&ends).await;
        assert_eq!(scores.len(), d.values.len());
        assert!(
            scores.iter().all(|s| s.is_finite() && *s < 0.0),
            "{scores:?}"
        );
        assert_eq!(
            judge::winner(&scores),
            Some(right),
            "{}: {scores:?} for {:?}",
            d.call,
            d.values
        );
        // Asked again, in another order: the same scores (nothing of one value stays
        // in the cache for the next), up to llama.cpp's sums, which vary a little
        // with how the tokens were batched (measured: 0.03 at most without
        // llamafile's sgemm, 0.13 with it).
        let mut back = ends.clone();
        back.reverse();
        let mut again = score(&back).await;
        again.reverse();
        for (a, b) in scores.iter().zip(&again) {
            assert!((a - b).abs() < 0.3, "{scores:?} then {again:?}");
        }
        assert_eq!(judge::winner(&again), Some(right));
    }
}

//! Batched sampling (`Provider::stream_many`) on the real models: SmolLM2-135M and
//! Qwen2.5-Coder-0.5B (see `common` for where their weights come from; under CI a
//! missing model fails).

#![allow(clippy::print_stderr)]

mod common;

use agentls_local::speculate::Lookup;
use agentls_local::{EngineOptions, LocalProvider};
use agentls_model::{
    CancellationToken, ChatRequest, ErrorClass, ManyEvent, Provider, Sampling, StopReason,
    StreamEvent, collect, collect_many,
};
use futures::StreamExt;

fn smollm2(test: &str) -> Option<LocalProvider> {
    let path = common::catalog_model(test, "smollm2-135m", "AGENTLS_TEST_GGUF")?;
    match LocalProvider::load("smollm2", &path) {
        Ok(p) => Some(p),
        Err(e) => panic!("cannot load {}: {e}", path.display()),
    }
}

fn coder(test: &str, opts: &EngineOptions) -> Option<LocalProvider> {
    let path = common::coder_model(test)?;
    match LocalProvider::load_with("coder", &path, opts) {
        Ok(p) => Some(p),
        Err(e) => panic!("cannot load {}: {e}", path.display()),
    }
}

fn request(user: &str, max_tokens: u32) -> ChatRequest {
    let mut r = ChatRequest::new(None, user);
    r.max_tokens = Some(max_tokens);
    r
}

/// Greedy first, then sampled with distinct seeds (as the solve pipeline asks).
fn samplings(n: usize) -> Vec<Sampling> {
    (0..n)
        .map(|i| Sampling {
            temperature: Some(if i == 0 { 0.0 } else { 0.8 }),
            top_p: Some(if i == 0 { 1.0 } else { 0.95 }),
            seed: Some(1000 + i as u64),
        })
        .collect()
}

/// The copy task the drafts are for: a function to repeat with one change.
fn rewrite_request() -> ChatRequest {
    let body: String = (1..=12)
        .map(|i| format!("    total += values[{i}] * {};\n", i * 3))
        .collect();
    let mut req = request(
        &format!(
            "Rewrite this function with `total` renamed to `sum`, all else unchanged:\n\
             ```rust\nfn weigh(values: &[i64]) -> i64 {{\n    let mut total = 0;\n{body}    total\n}}\n```"
        ),
        260,
    );
    req.code_block = Some("rust".into());
    req
}

#[tokio::test]
async fn one_sequence_matches_a_single_stream_and_four_share_its_opening() {
    let test = "one_sequence_matches_a_single_stream_and_four_share_its_opening";
    let Some(p) = smollm2(test) else { return };
    for user in [
        "Write a short story about a lighthouse keeper and a storm.",
        "List five fruits, one per line.",
    ] {
        let req = request(user, 80);
        let single = collect(p.stream(&req, CancellationToken::new()))
            .await
            .unwrap();
        // One sequence: its cells lie as a single stream's do.
        let one = collect_many(
            p.stream_many(&req, &samplings(1), CancellationToken::new())
                .unwrap(),
            1,
        )
        .await
        .unwrap();
        assert_eq!(one[0].0.text, single.text, "{user}");
        let many = p
            .stream_many(&req, &samplings(4), CancellationToken::new())
            .expect("the local engine decodes in batches");
        let answers = collect_many(many, 4).await.unwrap();
        // Beside other sequences, the greedy one's attention sums over cells that
        // interleave with theirs (masked, but in other SIMD lanes): at a near tie of
        // free text it may take the other token, so only its opening is compared here
        // (the copy task below compares whole answers).
        let opening: String = single.text.chars().take(60).collect();
        assert!(
            answers[0].0.text.starts_with(&opening),
            "{user}: {answers:?}"
        );
        for (r, stats) in &answers {
            assert!(r.usage.output > 0 && r.usage.output <= 80, "{r:?}");
            assert_eq!(stats.width, 4);
        }
        // Distinct seeds sample distinct answers.
        assert!(
            answers[1..].iter().any(|(r, _)| r.text != single.text),
            "{answers:?}"
        );
    }
}

#[tokio::test]
async fn sampled_sequences_are_reproducible_and_end_in_order() {
    let test = "sampled_sequences_are_reproducible_and_end_in_order";
    let Some(p) = smollm2(test) else { return };
    let req = request("Name a colour and say why you like it.", 60);
    let run = || async {
        let mut stream = p
            .stream_many(&req, &samplings(3), CancellationToken::new())
            .unwrap();
        let mut events: Vec<Vec<String>> = vec![Vec::new(); 3];
        let mut ended = [false; 3];
        let mut texts = vec![String::new(); 3];
        while let Some(item) = stream.next().await {
            match item.unwrap() {
                ManyEvent::Event(i, ev) => {
                    assert!(!ended[i], "an event of sequence {i} after its stop");
                    let kind = match &ev {
                        StreamEvent::TextDelta(t) => {
                            texts[i].push_str(t);
                            "text"
                        }
                        StreamEvent::Usage(_) => "usage",
                        StreamEvent::Stop(_) => {
                            ended[i] = true;
                            "stop"
                        }
                        _ => "other",
                    };
                    events[i].push(kind.to_owned());
                }
                ManyEvent::Stats(i, _) => events[i].push("stats".to_owned()),
            }
        }
        assert_eq!(ended, [true; 3]);
        for e in &events {
            assert_eq!(&e[e.len() - 3..], ["usage", "stats", "stop"], "{e:?}");
        }
        texts
    };
    let a = run().await;
    let b = run().await;
    assert_eq!(a, b, "the same seeds give the same answers");
}

#[tokio::test]
async fn greedy_sequence_zero_matches_a_single_stream_on_the_coder_model() {
    let test = "greedy_sequence_zero_matches_a_single_stream_on_the_coder_model";
    let opts = EngineOptions {
        threads: 2,
        context: 2048,
        ..EngineOptions::default()
    };
    let Some(p) = coder(test, &opts) else { return };
    let req = rewrite_request();
    let single = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    let answers = collect_many(
        p.stream_many(&req, &samplings(3), CancellationToken::new())
            .unwrap(),
        3,
    )
    .await
    .unwrap();
    assert!(single.text.contains("values[12] * 36;"), "{}", single.text);
    assert_eq!(answers[0].0.text, single.text);
    assert_eq!(answers[0].0.stop, single.stop);
    // The greedy rewrite copies the original: most of it comes from drafts.
    let stats = answers[0].1;
    assert!(
        stats.accepted * 2 > answers[0].0.usage.output && stats.drafted >= stats.accepted,
        "{stats:?} for {} tokens",
        answers[0].0.usage.output
    );
    // Sampled sequences are not drafted (drafts are checked against greedy choices).
    assert_eq!((answers[1].1.drafted, answers[2].1.drafted), (0, 0));
    for (r, _) in &answers {
        assert!(r.text.starts_with("```rust\n") && r.text.trim_end().ends_with("```"));
    }
}

#[tokio::test]
async fn drafting_leaves_every_greedy_sequence_as_plain_decoding_writes_it() {
    let test = "drafting_leaves_every_greedy_sequence_as_plain_decoding_writes_it";
    let opts = EngineOptions {
        threads: 2,
        context: 2048,
        ..EngineOptions::default()
    };
    let Some(spec) = coder(test, &opts) else {
        return;
    };
    let plain = spec.clone().with_speculation(None);
    let spec = spec.with_speculation(Some(Lookup::default()));
    let greedy = vec![Sampling::default(); 2];
    let req = rewrite_request();
    let a = collect_many(
        plain
            .stream_many(&req, &greedy, CancellationToken::new())
            .unwrap(),
        2,
    )
    .await
    .unwrap();
    let b = collect_many(
        spec.stream_many(&req, &greedy, CancellationToken::new())
            .unwrap(),
        2,
    )
    .await
    .unwrap();
    for i in 0..2 {
        assert_eq!(a[i].0.text, b[i].0.text);
        assert_eq!(a[i].0.usage.output, b[i].0.usage.output);
        assert_eq!(a[i].1.drafted, 0);
        assert!(b[i].1.accepted > 0, "{:?}", b[i].1);
    }
    assert_eq!(a[0].0.text, a[1].0.text);
}

#[tokio::test]
async fn sequences_past_the_context_end_cleanly_at_their_limit() {
    let test = "sequences_past_the_context_end_cleanly_at_their_limit";
    let opts = EngineOptions {
        threads: 2,
        context: 256,
        ..EngineOptions::default()
    };
    let path = match common::catalog_model(test, "smollm2-135m", "AGENTLS_TEST_GGUF") {
        Some(p) => p,
        None => return,
    };
    let p = LocalProvider::load_with("smollm2", &path, &opts).unwrap();
    let req = request(
        "Write a long story about a lighthouse keeper and a storm.",
        200,
    );
    let answers = collect_many(
        p.stream_many(&req, &samplings(4), CancellationToken::new())
            .unwrap(),
        4,
    )
    .await
    .unwrap();
    // 4 answers of up to 200 tokens after the prompt do not fit 256 cells at once:
    // some end early, cut at the cache's end, without an error.
    assert!(
        answers
            .iter()
            .any(|(r, _)| r.stop == StopReason::MaxTokens && r.usage.output < 200),
        "{answers:?}"
    );
    // The engine is whole after: the same request streams as usual.
    let after = collect(p.stream(&request("Say hi.", 8), CancellationToken::new()))
        .await
        .unwrap();
    assert!(after.usage.output > 0);
}

#[tokio::test]
async fn a_cancelled_batch_ends_with_an_abort() {
    let test = "a_cancelled_batch_ends_with_an_abort";
    let Some(p) = smollm2(test) else { return };
    let cancel = CancellationToken::new();
    let req = request("Write a long story about a lighthouse keeper.", 400);
    let mut stream = p.stream_many(&req, &samplings(4), cancel.clone()).unwrap();
    let mut seen = 0;
    let mut last = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(_) => {
                seen += 1;
                if seen == 5 {
                    cancel.cancel();
                }
            }
            Err(e) => last = Some(e),
        }
    }
    assert_eq!(last.expect("an abort").class, ErrorClass::UserAborted);
    // The engine serves the next call.
    let after = collect(p.stream(&request("Say hi.", 8), CancellationToken::new()))
        .await
        .unwrap();
    assert!(after.usage.output > 0);
}

/// A sequence its reader ends stops being decoded at once (its cells and its share of
/// each step go to the others), with its own stop reason, while the others run on to
/// their own ends.
#[tokio::test]
async fn a_sequence_its_reader_ends_stops_while_the_others_go_on() {
    let test = "a_sequence_its_reader_ends_stops_while_the_others_go_on";
    let Some(p) = smollm2(test) else { return };
    let req = request(
        "Write a long story about a lighthouse keeper and a storm.",
        120,
    );
    let mut stream = p
        .stream_many(&req, &samplings(3), CancellationToken::new())
        .unwrap();
    let (mut deltas, mut ended_at) = ([0usize; 3], None);
    let mut stops: [Option<StopReason>; 3] = [None, None, None];
    let mut outputs = [0u64; 3];
    while let Some(item) = stream.next().await {
        let Ok(ManyEvent::Event(i, ev)) = item.map_err(|e| panic!("{e}")) else {
            continue;
        };
        match ev {
            StreamEvent::TextDelta(_) => {
                deltas[i] += 1;
                if i == 1 && deltas[1] == 3 {
                    stream.end(1);
                    ended_at = Some(deltas[1]);
                }
            }
            StreamEvent::Usage(u) => outputs[i] = u.output,
            StreamEvent::Stop(r) => stops[i] = Some(r),
            _ => {}
        }
    }
    assert_eq!(ended_at, Some(3));
    assert_eq!(
        stops[1],
        Some(StopReason::Other("ended by its reader".into())),
        "{stops:?}"
    );
    // Ended within a step or two of the reader's word (a step may feed a few tokens).
    assert!(outputs[1] < 12, "sequence 1 wrote {} tokens", outputs[1]);
    for i in [0, 2] {
        assert!(
            stops[i]
                .as_ref()
                .is_some_and(|r| *r != StopReason::Other("ended by its reader".into())),
            "{stops:?}"
        );
        assert!(outputs[i] > outputs[1], "{outputs:?}");
    }
}

/// An answer asked to start with a function's first line starts there, after the code
/// block's fence, in one stream and in a batch alike; the model goes on from it.
#[tokio::test]
async fn an_answer_begins_where_the_request_starts_it() {
    let test = "an_answer_begins_where_the_request_starts_it";
    let Some(p) = smollm2(test) else { return };
    let mut req = rewrite_request();
    req.max_tokens = Some(24);
    let start = "fn weigh(values: &[i64]) -> i64 {\n";
    req.answer_start = Some(start.to_owned());
    let single = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    let opened = format!("```rust\n{start}");
    assert!(single.text.starts_with(&opened), "{:?}", single.text);
    assert!(single.text.len() > opened.len(), "{:?}", single.text);
    let many = collect_many(
        p.stream_many(&req, &samplings(2), CancellationToken::new())
            .unwrap(),
        2,
    )
    .await
    .unwrap();
    for (r, _) in &many {
        assert!(r.text.starts_with(&opened), "{:?}", r.text);
    }
}

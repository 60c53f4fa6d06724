//! `agentls bench decode`: batched sampling on the embedded model. For each width N
//! (1, 2, 4, 8 by default) the engine answers one prompt N times at once
//! (`Provider::stream_many`: one batch, each sequence sampled with its own seed),
//! and llama.cpp's own batched decoding runs the same width over the same prompt with
//! nothing around it (forward passes of one token per sequence, nothing sampled, as
//! its `llama-batched-bench` times generation), in a second context over the same
//! weights, in the same run. Generation tokens per second are printed side by side,
//! with ours over llama.cpp's and each width over one sequence.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `agentls bench decode`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Catalog model.
    #[arg(long, value_name = "NAME", default_value = "qwen2.5-coder-0.5b")]
    pub model: String,
    /// A GGUF file instead.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// CPU threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Sequences decoded together, one measurement each.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub widths: Vec<usize>,
    /// Tokens each sequence generates (at most: a sequence may end sooner).
    #[arg(long, default_value_t = 128)]
    pub tokens: u32,
    /// Sampling temperature of every sequence (distinct seeds); 0 is greedy.
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f32,
}

/// One width's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Sequences decoded together.
    pub width: usize,
    /// Tokens our sequences generated in all.
    pub tokens: u64,
    /// Ours: generated tokens over the time from the prompt read to the last end.
    pub ours: f64,
    /// llama.cpp's batched decoding of `width` × the longest sequence's tokens.
    pub reference: f64,
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// Model, threads, prompt.
    pub header: String,
    /// One row a width.
    pub rows: Vec<Row>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.header)?;
        writeln!(
            f,
            "{:>5} {:>7} {:>12} {:>14} {:>12} {:>10}",
            "width", "tokens", "ours tok/s", "llama.cpp t/s", "ours/llama", "vs width 1"
        )?;
        let one = self.rows.iter().find(|r| r.width == 1).map(|r| r.ours);
        for r in &self.rows {
            let gain = one.map_or("-".to_owned(), |o| format!("{:.2}x", r.ours / o));
            writeln!(
                f,
                "{:>5} {:>7} {:>12.1} {:>14.1} {:>12.2} {:>10}",
                r.width,
                r.tokens,
                r.ours,
                r.reference,
                r.ours / r.reference,
                gain
            )?;
        }
        Ok(())
    }
}

/// Runs the bench and prints its table.
pub fn main(options: Options) -> anyhow::Result<ExitCode> {
    let report = run(&options)?;
    write!(std::io::stdout().lock(), "{report}")?;
    Ok(ExitCode::SUCCESS)
}

/// The prompt every width answers: long answers, so that sequences run their budget.
pub const PROMPT: &str = "Write a long, detailed essay on the history of the Roman Empire, \
from its founding to its fall, with many names and dates.";

/// Measures every width of `options`.
#[cfg(feature = "local")]
pub fn run(options: &Options) -> anyhow::Result<Report> {
    use agentls_local::engine::{Engine, EngineOptions};
    use agentls_local::{LocalProvider, MAX_SEQUENCES};
    use agentls_model::{CancellationToken, ChatRequest, Provider, Sampling, collect_many};
    use anyhow::Context;

    let path = crate::bench_complete::model_path(&options.model, options.path.as_deref())?;
    anyhow::ensure!(
        options
            .widths
            .iter()
            .all(|&w| (1..=MAX_SEQUENCES).contains(&w)),
        "widths run from 1 to {MAX_SEQUENCES}"
    );
    let opts = EngineOptions {
        threads: options.threads.max(1),
        context: 4096,
        ..EngineOptions::default()
    };
    let mut engine = Engine::load_with(&path, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut reference = engine
        .sibling(opts.context, &opts)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let model = engine.info.name.clone().unwrap_or_else(|| "?".into());
    let mut req = ChatRequest::new(None, PROMPT);
    req.max_tokens = Some(options.tokens);
    let pieces = engine.info.template.render(&req);
    let prompt = engine
        .encode_pieces(&pieces)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    reference
        .prefill(&prompt)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ours = LocalProvider::from_engine("bench", engine);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    // One call first: the prompt is then cached for every width (its read is not
    // what is measured).
    runtime.block_on(collect_many(
        ours.stream_many(&req, &[Sampling::default()], CancellationToken::new())
            .context("the embedded engine decodes in batches")?,
        1,
    ))?;
    let mut rows = Vec::new();
    for &width in &options.widths {
        let samplings: Vec<Sampling> = (0..width)
            .map(|i| Sampling {
                temperature: Some(options.temperature),
                top_p: Some(0.95),
                seed: Some(1001 + i as u64),
            })
            .collect();
        let answers = runtime.block_on(collect_many(
            ours.stream_many(&req, &samplings, CancellationToken::new())
                .context("the embedded engine decodes in batches")?,
            width,
        ))?;
        let tokens: u64 = answers.iter().map(|(r, _)| r.usage.output).sum();
        let longest = answers
            .iter()
            .map(|(r, _)| r.usage.output)
            .max()
            .unwrap_or(0);
        let ms = answers.iter().map(|(_, s)| s.decode_ms).max().unwrap_or(0);
        // On a thread of its own, as the engine's calls run.
        let took = std::thread::scope(|scope| {
            scope
                .spawn(|| reference.time_batched_decode(width, longest as usize))
                .join()
        })
        .map_err(|_| anyhow::anyhow!("the reference's thread panicked"))?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        rows.push(Row {
            width,
            tokens,
            ours: tokens as f64 * 1000.0 / ms.max(1) as f64,
            reference: (width as u64 * longest) as f64 / took.as_secs_f64().max(1e-9),
        });
    }
    let header = format!(
        "bench decode: {model} ({}), {} threads, prompt {} tokens, up to {} tokens a sequence at temperature {}, load {}",
        path.display(),
        options.threads,
        prompt.len(),
        options.tokens,
        options.temperature,
        crate::bench_complete::load_average(),
    );
    Ok(Report { header, rows })
}

/// Without the embedded model there is nothing to run.
#[cfg(not(feature = "local"))]
pub fn run(_options: &Options) -> anyhow::Result<Report> {
    anyhow::bail!(
        "this agentls was built without the embedded model; rebuild with `--features local` (needs cmake and libclang)"
    )
}

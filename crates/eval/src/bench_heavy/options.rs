//! The command-line flags of `agentls bench heavy`.

/// What `agentls bench heavy` measures and how much (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Size of the large Python buffer, in MB.
    #[arg(long, default_value_t = 10)]
    pub big_mb: usize,
    /// `workspace/symbol` requests per phase.
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Documents opened and then closed.
    #[arg(long, default_value_t = 2000)]
    pub docs: usize,
    /// Size of each document, in KB.
    #[arg(long, default_value_t = 100)]
    pub doc_kb: usize,
    /// Seconds to wait after the closes before the last measurement.
    #[arg(long, default_value_t = 30)]
    pub settle: u64,
    /// `latency`, `memory` or `all`.
    #[arg(long, default_value = "all")]
    pub only: String,
    /// The embedders the memory is measured with, comma-separated (`none`, `static`,
    /// `full`).
    #[arg(long, default_value = "none,static", value_delimiter = ',')]
    pub embedders: Vec<String>,
    /// With a model: wait until every chunk of the open documents has its vector before
    /// closing them (a nearest-neighbour graph is then being linked past 100,000).
    #[arg(long)]
    pub embed_first: bool,
}

//! `webert fill-mask`: the top-k tokens for each mask token.

use super::args::Common;
use super::input::texts;
use super::load::load;
use super::output::print;
use clap::Args;
use webert::tasks::fill_mask;
use webert::tasks::registry;
use webert::Result;

#[derive(Args)]
pub struct FillMaskArgs {
    #[command(flatten)]
    c: Common,
    #[arg(long, default_value = registry::default_arg("fill-mask", "top_k"))]
    top_k: usize,
}

pub async fn run(a: FillMaskArgs) -> Result<()> {
    let engine = load(&a.c).await?;
    let mut out = Vec::new();
    for t in texts(&a.c)? {
        let mut p = fill_mask::fill_mask(&engine, &t, a.top_k, a.c.truncation()).await?;
        out.push(match p.len() {
            1 => serde_json::json!(p.remove(0)),
            _ => serde_json::json!(p),
        });
    }
    print(&engine, out)
}

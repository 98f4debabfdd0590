//! Times the CPU encoder on a text of exactly N tokens: built for wasm32-wasip1 and run in Node
//! (`scripts/wasm_bench.sh`), it measures the simd128 kernels under V8 without a browser.
//!   wasm_bench <model dir>... [--seq-len 128] [--runs 20]
use std::time::Instant;
use webert::engine::{Engine, LoadOptions, Want};
use webert::model::ModelFiles;

fn main() -> webert::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut opt = |name: &str, default: usize| {
        let i = args.iter().position(|a| a == name);
        i.map(|i| {
            let v = args.remove(i + 1);
            args.remove(i);
            v.parse().expect("a number")
        })
        .unwrap_or(default)
    };
    let (seq_len, runs) = (opt("--seq-len", 128), opt("--runs", 20));
    let words = "Hi, my name is John Smith and I live at 42 Elm Street, Springfield. ";
    for dir in &args {
        let files = ModelFiles::from_dir(dir.as_ref())?;
        let engine = pollster::block_on(Engine::load(files, LoadOptions::cpu()))?;
        let mut text = String::new();
        while engine.tokenizer.encode(&text, None)?.len() < seq_len {
            text.push_str(words);
        }
        let windows = vec![engine.encode(&text, None, Some(seq_len))?];
        for _ in 0..3 {
            pollster::block_on(engine.run(&windows, Want::Logits, &[]))?;
        }
        let mut ms: Vec<f64> = (0..runs.max(1))
            .map(|_| {
                let t = Instant::now();
                pollster::block_on(engine.run(&windows, Want::Logits, &[])).map(|_| ())?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            })
            .collect::<webert::Result<_>>()?;
        ms.sort_by(f64::total_cmp);
        println!(
            "{dir}: {seq_len} tokens, {} median {:.1} ms, min {:.1} ms",
            engine.backend(),
            ms[ms.len() / 2],
            ms[0]
        );
    }
    Ok(())
}

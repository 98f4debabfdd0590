//! Timed GEMM tilings kept between processes: `export` writes the tilings this process knows
//! (`tiling_cache.rs`; and the rows it read and did not use) as JSON; `import` reads such a
//! text back, so that a page's next load, or a second model's worker, restores each shape's
//! tiling instead of timing it again. A saved tiling is used only where it is still one of the
//! candidates the device would time now: the same adapter, kernel choice, shape and rule, and
//! a fingerprint of every candidate's shader source, so a new release or other options time
//! again.

use super::context::KernelChoice;
use super::kernels::Kernel;
use super::tune::{self, CacheKey, GemmKey, Tuned};
use super::weights::GemmWeights;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::{LazyLock, Mutex};

const FORMAT: &str = "webert-gpu-tilings-1";
/// Rows kept in one saved text; beyond it, rows this process did not use are dropped.
const MAX_ROWS: usize = 512;

#[derive(Serialize, Deserialize)]
struct Saved {
    format: String,
    rows: Vec<Row>,
}

/// One shape's timing on one adapter under one kernel choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Row {
    adapter: String,
    kernels: String,
    weights: String,
    /// Rows (rounded as `GemmKey` rounds them), columns, reduction.
    shape: [usize; 3],
    /// `fingerprint` of the candidates this timing chose among.
    shaders: String,
    tiling: String,
    ms: f64,
    rule: String,
    rule_ms: f64,
}

impl Row {
    fn of(adapter: &str, choice: &KernelChoice, key: GemmKey, t: &Tuned) -> Row {
        let (kernels, weights) = names(choice, key.weights);
        Row {
            adapter: adapter.to_string(),
            kernels,
            weights,
            shape: [key.m, key.n, key.k],
            shaders: fingerprint(choice, key),
            tiling: t.plan.describe(),
            ms: t.ms,
            rule: t.rule.describe(),
            rule_ms: t.rule_ms,
        }
    }

    /// What a row is the timing of: adapter, kernel choice, weights and shape.
    fn id(&self) -> (&str, &str, &str, [usize; 3]) {
        (&self.adapter, &self.kernels, &self.weights, self.shape)
    }

    fn same_shape(&self, other: &Row) -> bool {
        self.id() == other.id()
    }
}

/// Rows read by `import` and not yet found invalid.
static SAVED: LazyLock<Mutex<Vec<Row>>> = LazyLock::new(Default::default);

fn saved() -> std::sync::MutexGuard<'static, Vec<Row>> {
    SAVED.lock().unwrap_or_else(|p| p.into_inner())
}

fn names(choice: &KernelChoice, weights: GemmWeights) -> (String, String) {
    (format!("{choice:?}"), format!("{weights:?}"))
}

/// A hash (FNV-1a, 64 bits, hex) of the candidate tilings of `key` and their shaders' code.
fn fingerprint(choice: &KernelChoice, key: GemmKey) -> String {
    let plans = tune::candidates(choice, key);
    let mut text = String::new();
    for p in &plans {
        text += &p.describe();
        text += &p.kernel.code(choice);
    }
    if plans.iter().any(|p| p.split_k > 1) {
        text += &Kernel::GemmReduce.code(choice);
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Reads saved tilings (a text `export` wrote) for later loads and forwards to restore; rows
/// already read under the same shape are replaced. Returns how many rows the text has.
pub fn import(json: &str) -> Result<usize> {
    let bad = |why: String| Error::Input(format!("saved GPU tilings: {why}"));
    let text: Saved = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
    if text.format != FORMAT {
        return Err(bad(format!("format `{}`, not `{FORMAT}`", text.format)));
    }
    let mut rows = saved();
    for row in &text.rows {
        rows.retain(|r| !r.same_shape(row));
    }
    let n = text.rows.len();
    rows.extend(text.rows);
    let over = rows.len().saturating_sub(MAX_ROWS);
    rows.drain(..over);
    Ok(n)
}

/// The tilings of `known` (this process's, timed or restored), and the rows read and not
/// used, as JSON for `import`.
pub fn export(known: &[(CacheKey, Tuned)]) -> String {
    let mut rows: Vec<Row> = (known.iter())
        .map(|((adapter, choice, key), t)| Row::of(adapter, choice, *key, t))
        .collect();
    let known = rows.len();
    for r in saved().iter() {
        if rows.len() < MAX_ROWS.max(known) && !rows[..known].iter().any(|k| k.same_shape(r)) {
            rows.push(r.clone());
        }
    }
    rows.sort_by(|a, b| a.id().cmp(&b.id()));
    let text = Saved {
        format: FORMAT.to_string(),
        rows,
    };
    serde_json::to_string(&text).expect("rows serialize")
}

/// The keys of `known` whose shapes `json`'s rows have (tests of restoring).
#[cfg(any(test, feature = "test-hooks"))]
pub fn keys_in(json: &str, known: Vec<(CacheKey, Tuned)>) -> Result<Vec<CacheKey>> {
    let text: Saved = serde_json::from_str(json).map_err(|e| Error::Input(e.to_string()))?;
    let keys = (known.into_iter())
        .filter(|((adapter, choice, key), t)| {
            let row = Row::of(adapter, choice, *key, t);
            text.rows.iter().any(|r| r.same_shape(&row))
        })
        .map(|(k, _)| k)
        .collect();
    Ok(keys)
}

/// The saved tiling of `key`, when one was read and is still valid here; an invalid one is
/// dropped (the shape is timed again and saved anew).
pub fn restore(adapter: &str, choice: &KernelChoice, key: GemmKey) -> Option<Tuned> {
    let (kernels, weights) = names(choice, key.weights);
    let mut rows = saved();
    let id = (
        adapter,
        kernels.as_str(),
        weights.as_str(),
        [key.m, key.n, key.k],
    );
    let at = rows.iter().position(|r| r.id() == id)?;
    let row = &rows[at];
    let plans = tune::candidates(choice, key);
    let plan = plans.iter().find(|p| p.describe() == row.tiling);
    let valid = row.shaders == fingerprint(choice, key)
        && plans[0].describe() == row.rule
        && row.ms.is_finite()
        && row.rule_ms.is_finite();
    match plan {
        Some(&plan) if valid => Some(Tuned {
            plan,
            ms: row.ms,
            rule: plans[0],
            rule_ms: row.rule_ms,
            saved: true,
        }),
        _ => {
            rows.remove(at);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm_plan::GemmPlan;
    use super::super::kernels::Tile;
    use super::super::tiling_cache::{self, export};
    use super::*;

    fn choice() -> KernelChoice {
        super::super::tune::tests::hardware()
    }

    fn split(s: u32) -> GemmPlan {
        GemmPlan {
            kernel: Kernel::Gemm(Tile::Short),
            split_k: s,
        }
    }

    /// A tiling timed under adapter `adapter` (each test its own, as tests share the process).
    fn timed(adapter: &str, key: GemmKey, plan: GemmPlan) -> Tuned {
        let c = choice();
        let rule = tune::candidates(&c, key)[0];
        let t = Tuned {
            plan,
            ms: 0.5,
            rule,
            rule_ms: 0.75,
            saved: false,
        };
        tiling_cache::remember(adapter, &c, key, t);
        t
    }

    /// The rows of `adapter` in `json`: tests run at once in one process, each on an adapter
    /// of its own, and read back only their own rows.
    fn rows_of(json: &str, adapter: &str) -> Vec<Row> {
        let s: Saved = serde_json::from_str(json).unwrap();
        s.rows
            .into_iter()
            .filter(|r| r.adapter == adapter)
            .collect()
    }

    fn text(rows: Vec<Row>) -> String {
        let text = Saved {
            format: FORMAT.into(),
            rows,
        };
        serde_json::to_string(&text).unwrap()
    }

    #[test]
    fn an_exported_tiling_is_restored_in_a_new_process() {
        let (a, c) = ("test adapter: round trip", choice());
        let key = GemmKey::new(128, 768, 3072, GemmWeights::F32);
        let t = timed(a, key, split(4));
        let json = export();
        assert_eq!(rows_of(&json, a).len(), 1, "{json}");
        tiling_cache::forget(&[(a.to_string(), c, key)]);
        assert!(restore(a, &c, key).is_none(), "nothing read yet");
        assert_eq!(import(&text(rows_of(&json, a))).unwrap(), 1);
        let back = tiling_cache::cached(a, &c, key).unwrap();
        assert_eq!(back, Tuned { saved: true, ..t });
        assert!(back.describe().contains("(saved)"));
        // Another adapter, other kernels or another shape restore nothing.
        let f16 = GemmKey::new(128, 768, 3072, GemmWeights::F16);
        assert!(restore("another adapter", &c, key).is_none());
        assert!(restore(
            a,
            &KernelChoice {
                subgroups: true,
                ..c
            },
            key
        )
        .is_none());
        assert!(restore(a, &c, f16).is_none());
    }

    #[test]
    fn a_saved_tiling_that_is_no_longer_a_candidate_is_dropped() {
        let (a, c) = ("test adapter: stale", choice());
        let key = GemmKey::new(128, 384, 1536, GemmWeights::F32);
        timed(a, key, split(2));
        let json = export();
        tiling_cache::forget(&[(a.to_string(), c, key)]);
        type Edit = (&'static str, fn(&mut Row));
        let edits: [Edit; 4] = [
            ("a tiling not offered", |r| {
                r.tiling = "gemm 16x64 split-k 64".into()
            }),
            ("other shaders", |r| r.shaders = "0123456789abcdef".into()),
            ("another rule", |r| r.rule = "gemm 64x64 split-k 8".into()),
            ("a shape of other rows", |r| r.shape[0] = 100),
        ];
        for (what, edit) in edits {
            let mut rows = rows_of(&json, a);
            edit(&mut rows[0]);
            import(&text(rows)).unwrap();
            assert!(tiling_cache::cached(a, &c, key).is_none(), "{what}");
        }
        // Dropped: the export no longer lists the rows found invalid.
        let left = rows_of(&export(), a);
        assert!(left.iter().all(|r| r.shape == [100, 384, 1536]), "{left:?}");
    }

    #[test]
    fn rows_of_other_adapters_are_kept_and_text_that_is_not_tilings_is_refused() {
        let a = "test adapter: foreign";
        let row = Row {
            adapter: a.into(),
            kernels: "some other choice".into(),
            weights: "F32".into(),
            shape: [16, 64, 64],
            shaders: "0".into(),
            tiling: "gemm 16x64".into(),
            ms: 1.0,
            rule: "gemm 16x64".into(),
            rule_ms: 1.0,
        };
        assert_eq!(import(&text(vec![row.clone()])).unwrap(), 1);
        assert_eq!(rows_of(&export(), a), vec![row.clone()]);
        // Read again, the same shape replaces its row rather than adding one.
        let newer = Row { ms: 2.0, ..row };
        import(&text(vec![newer.clone()])).unwrap();
        assert_eq!(rows_of(&export(), a), vec![newer]);
        for (bad, why) in [
            ("{", "EOF while parsing"),
            ("42", "invalid type"),
            (r#"{"format":"other","rows":[]}"#, "format `other`"),
        ] {
            let e = import(bad).unwrap_err().to_string();
            assert!(e.contains("saved GPU tilings: ") && e.contains(why), "{e}");
        }
    }
}

//! Reading an image back, every array checked against the kernel's layout and the plan.

use super::{
    image_build, Header, PackedEntry, QEntry, Section, TensorEntry, CODES_CHUNK, IMAGE_FORMAT,
    MAGIC,
};
use crate::cpu::gemm::PackedB;
use crate::cpu::half_values;
use crate::cpu::model::{CpuModel, Packed};
use crate::cpu::palette::decode;
use crate::cpu::qpack::{PackedQ, Spill};
use crate::cpu::tile::Kernel;
use crate::error::{Error, Result};
use crate::exec::Quantized;
use crate::model::{ModelConfig, Plan, Tensor, WeightUse};
use std::sync::Arc;

/// Where an image is read from: a byte slice, or (in the browser) a JS array copied from
/// straight into each array's own allocation.
pub trait ImageSource {
    fn byte_len(&self) -> usize;
    /// Fills `dst` from byte `at`, which the caller has checked lies within `len`.
    fn read(&self, at: usize, dst: &mut [u8]);
}

impl ImageSource for [u8] {
    fn byte_len(&self) -> usize {
        self.len()
    }
    fn read(&self, at: usize, dst: &mut [u8]) {
        dst.copy_from_slice(&self[at..at + dst.len()]);
    }
}

/// The arrays of an image being read.
struct Reader<'a, S: ImageSource + ?Sized> {
    src: &'a S,
    start: usize,
}

fn bad<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(Error::Input(format!("packed model image: {what}")))
}

impl<S: ImageSource + ?Sized> Reader<'_, S> {
    /// Whether section `s` lies within the image.
    fn holds(&self, s: Section) -> bool {
        let end = (self.start as u64)
            .checked_add(s.at)
            .and_then(|a| a.checked_add(s.len));
        end.is_some_and(|e| e <= self.src.byte_len() as u64)
    }

    fn array<T: bytemuck::Pod>(&self, s: Section) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>() as u64;
        if !s.len.is_multiple_of(size) || !self.holds(s) {
            return bad(format!("an array at {} of {} bytes", s.at, s.len));
        }
        let mut v = vec![T::zeroed(); (s.len / size) as usize];
        self.src
            .read(self.start + s.at as usize, bytemuck::cast_slice_mut(&mut v));
        Ok(v)
    }

    /// The values of a palette-coded array (one code per value), decoded a chunk at a time.
    fn decoded(&self, s: Section, values: &[f32]) -> Result<Vec<f32>> {
        if values.len() > 256 || !self.holds(s) {
            return bad(format!("a palette of {} values", values.len()));
        }
        let mut out = vec![0f32; s.len as usize];
        let mut codes = vec![0u8; CODES_CHUNK.min(out.len())];
        let at = self.start + s.at as usize;
        for (i, chunk) in out.chunks_mut(CODES_CHUNK).enumerate() {
            let codes = &mut codes[..chunk.len()];
            self.src.read(at + i * CODES_CHUNK, codes);
            if !decode(values, codes, chunk) {
                return bad("a code past its palette");
            }
        }
        Ok(out)
    }

    /// The values of an array of halves, widened a chunk at a time.
    fn widened(&self, s: Section) -> Result<Vec<f32>> {
        if !s.len.is_multiple_of(2) || !self.holds(s) {
            return bad(format!("an array of halves at {} of {} bytes", s.at, s.len));
        }
        let mut out = vec![0f32; (s.len / 2) as usize];
        let mut bytes = vec![0u8; 2 * CODES_CHUNK.min(out.len())];
        let at = self.start + s.at as usize;
        for (i, chunk) in out.chunks_mut(CODES_CHUNK).enumerate() {
            let bytes = &mut bytes[..2 * chunk.len()];
            self.src.read(at + 2 * i * CODES_CHUNK, bytes);
            half_values::decode(bytes, chunk);
        }
        Ok(out)
    }

    /// An f32 array, or its halves widened.
    fn floats(&self, s: Section, half: bool) -> Result<Vec<f32>> {
        match half {
            true => self.widened(s),
            false => self.array(s),
        }
    }

    fn q(&self, e: &QEntry, nr: usize, group: usize, channel: bool) -> Result<PackedQ> {
        let panels = e.n.div_ceil(e.nr);
        let q = PackedQ {
            n: e.n,
            k: e.k,
            nr: e.nr,
            group: e.group,
            block: e.block,
            codes: self.array(e.codes)?,
            scales: self.array(e.scales)?,
            zero: e.zero,
            ints: self.array(e.ints)?,
            spills: (self.array::<i32>(e.spills)?.chunks_exact(3))
                .map(|s| Spill {
                    col: s[0] as usize,
                    k: s[1] as usize,
                    rest: s[2],
                })
                .collect(),
            spill_at: (self.array::<u64>(e.spill_at)?.into_iter())
                .map(|a| a as usize)
                .collect(),
        };
        let fits = if channel {
            let spills_fit = q.spill_at.len() == panels + 1
                && q.spill_at.first() == Some(&0)
                && q.spill_at.windows(2).all(|w| w[0] <= w[1])
                && q.spill_at.last() == Some(&q.spills.len())
                && q.spills.iter().all(|s| s.col < nr && s.k < q.k);
            q.block == q.k.div_ceil(group) * group
                && q.codes.len() == panels * q.block * nr
                && q.scales.len() == panels * nr
                && q.ints.len() == panels * 2 * nr
                && q.zero.is_none()
                && spills_fit
        } else {
            let per_block = if q.zero.is_some() { nr } else { 2 * nr };
            let blocks = if q.block > 0 { q.blocks() } else { 0 };
            q.block > 0
                && q.block.is_multiple_of(group)
                && q.codes.len() == panels * blocks * q.block * nr
                && q.scales.len() == panels * blocks * per_block
                && q.zero.is_none_or(|z| (0..128).contains(&z))
                && q.ints.is_empty()
                && q.spills.is_empty()
                && q.spill_at.is_empty()
        };
        if e.nr != nr || e.group != group || !fits {
            return bad(format!("packed codes of a [{}, {}] weight", e.n, e.k));
        }
        Ok(q)
    }
}

impl CpuModel {
    /// The plan and CPU model an image holds, under `config` (from the folder's own
    /// `config.json`); an error when the image belongs to another build, kernel or
    /// `quantized` mode, holds more than `budget` bytes (the bytes it holds come third), or is
    /// damaged.
    pub fn from_image<S: ImageSource + ?Sized>(
        config: ModelConfig,
        src: &S,
        kernel: &'static Kernel,
        quantized: Quantized,
        budget: u64,
    ) -> Result<(Arc<Plan>, CpuModel, u64)> {
        let mut head = [0u8; 12];
        if src.byte_len() < head.len() {
            return bad("shorter than its header");
        }
        src.read(0, &mut head);
        if &head[..8] != MAGIC {
            return bad("not an image (no magic bytes)");
        }
        let json_len = u32::from_le_bytes(head[8..].try_into().expect("4 bytes")) as usize;
        if src.byte_len() - head.len() < json_len {
            return bad("shorter than its header");
        }
        let mut json = vec![0u8; json_len];
        src.read(head.len(), &mut json);
        let header: Header =
            serde_json::from_slice(&json).map_err(|e| Error::Input(e.to_string()))?;
        if header.format != IMAGE_FORMAT || header.build != image_build() {
            return bad(format!(
                "written by {}, not {}",
                header.build,
                image_build()
            ));
        }
        if header.kernel != kernel.name || header.int != (quantized == Quantized::Int) {
            return bad(format!("packed for {}, not {}", header.kernel, kernel.name));
        }
        let bytes = |s: &Section| s.len;
        let q_bytes = |q: &QEntry| {
            [q.codes, q.scales, q.ints, q.spills]
                .iter()
                .map(bytes)
                .sum()
        };
        let widened = |len: u64, half: bool| if half { 2 * len } else { len };
        let tensor_bytes = |t: &TensorEntry| match t.palette {
            Some(_) => 4 * t.data.len,
            None => widened(t.data.len, t.half),
        };
        let held: u64 = header.tensors.iter().map(tensor_bytes).sum::<u64>()
            + (header.packed.iter().flatten())
                .map(|p| match p {
                    PackedEntry::F32 { data, half, .. } => widened(data.len, *half),
                    PackedEntry::Int(q) | PackedEntry::Q8 { q, .. } => q_bytes(q),
                })
                .sum::<u64>();
        let what = || "the packed weights of this model".to_string();
        crate::model::budget::check(what, Some(held), budget)?;
        let reader = Reader {
            src,
            start: (head.len() + json_len).next_multiple_of(8),
        };
        let plan = Plan::from_stored(config, header.plan)?;
        let count = plan.weight_names.len();
        if header.tensors.len() != count || header.packed.len() != count {
            return bad(format!(
                "{} tensors for {count} weights",
                header.tensors.len()
            ));
        }
        let mut weights = Vec::with_capacity(count);
        for t in &header.tensors {
            let data = match t.palette {
                Some(_) if t.half => return bad("a tensor both palette-coded and halves"),
                Some(p) => reader.decoded(t.data, &reader.array(p)?)?,
                None => reader.floats(t.data, t.half)?,
            };
            if data.len() != t.shape.iter().product::<usize>() {
                return bad(format!("a tensor of shape {:?}", t.shape));
            }
            weights.push(Tensor::new(t.shape.clone(), data));
        }
        let mut packed = Vec::with_capacity(count);
        for p in &header.packed {
            packed.push(match p {
                None => None,
                Some(PackedEntry::F32 {
                    n,
                    k,
                    nr,
                    data,
                    half,
                }) => {
                    let b = PackedB::from_parts(kernel, *n, *k, *nr, reader.floats(*data, *half)?);
                    Some(Packed::F32(b.map_or_else(
                        || bad(format!("packed f32 of a [{n}, {k}] weight")),
                        Ok,
                    )?))
                }
                Some(PackedEntry::Int(q)) => {
                    let Some(qk) = kernel.quant else {
                        return bad(format!("{} has no q4 tile", kernel.name));
                    };
                    Some(Packed::Int(reader.q(q, qk.nr, qk.group, false)?))
                }
                Some(PackedEntry::Q8 { kernel: name, q }) => {
                    let Some(&qk) = kernel.q8.iter().find(|qk| qk.name == name) else {
                        return bad(format!("{} has no q8 tile {name}", kernel.name));
                    };
                    Some(Packed::Q8(qk, reader.q(q, qk.nr, qk.group, true)?))
                }
            });
        }
        check_uses(&plan, &weights, &packed)?;
        let plan = Arc::new(plan);
        let model = CpuModel {
            plan: plan.clone(),
            kernel,
            weights,
            packed,
            quantized,
            budget: u64::MAX,
            id: CpuModel::next_id(),
        };
        Ok((plan, model, held))
    }
}

/// Every op's weights are there in the form it reads them: a linear's packed with its shape,
/// the others' tensors whole.
fn check_uses(plan: &Plan, weights: &[Tensor], packed: &[Option<Packed>]) -> Result<()> {
    for op in &plan.ops {
        if let crate::model::Op::Linear { linear, norm, .. } = op {
            let (n, k) = match &packed[linear.weight.0] {
                Some(Packed::F32(b)) => (b.n, b.k),
                Some(Packed::Int(q)) | Some(Packed::Q8(_, q)) => (q.n, q.k),
                None => (0, 0),
            };
            if (n, k) != (linear.n_out, linear.n_in) {
                return bad(format!(
                    "`{}` packed as [{n}, {k}]",
                    plan.weight_names[linear.weight.0]
                ));
            }
            let norm = norm.iter().flat_map(|n| [n.gamma, n.beta]);
            if let Some(id) = linear
                .bias
                .into_iter()
                .chain(norm)
                .find(|id| weights[id.0].data.len() != n)
            {
                return bad(format!("`{}` is not {n} long", plan.weight_names[id.0]));
            }
        }
        for (id, used) in op.weights() {
            if used != WeightUse::Gemm && weights[id.0].data.is_empty() {
                return bad(format!("`{}` is empty", plan.weight_names[id.0]));
            }
        }
    }
    Ok(())
}

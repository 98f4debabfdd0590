//! Writing an image: the header, then each array at a multiple of 8, palette-coded tensors
//! encoded a chunk at a time.

use super::{
    image_build, Header, PackedEntry, QEntry, Section, TensorEntry, CODES_CHUNK, IMAGE_FORMAT,
    MAGIC,
};
use crate::cpu::model::{CpuModel, Packed};
use crate::cpu::palette::Palette;
use crate::cpu::qpack::PackedQ;
use crate::error::{Error, Result};
use crate::exec::Quantized;
use crate::model::Tensor;
use std::borrow::Cow;

/// Tensors this large or larger are kept with a palette where they have one.
const PALETTE_FROM: usize = 1 << 16;

/// One array of an image being written.
enum Part<'a> {
    Bytes(Cow<'a, [u8]>),
    Codes(&'a [f32], Palette),
}

impl Part<'_> {
    fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::Codes(data, _) => data.len(),
        }
    }
}

/// The arrays of an image being written, in order, each placed at a multiple of 8.
#[derive(Default)]
struct Arrays<'a> {
    parts: Vec<Part<'a>>,
    end: u64,
}

impl<'a> Arrays<'a> {
    fn add(&mut self, part: Part<'a>) -> Section {
        let at = self.end.next_multiple_of(8);
        let len = part.len() as u64;
        self.end = at + len;
        self.parts.push(part);
        Section { at, len }
    }

    fn tensor(&mut self, t: &'a Tensor) -> TensorEntry {
        let palette = (t.data.len() >= PALETTE_FROM)
            .then(|| Palette::of(&t.data))
            .flatten();
        let (data, palette) = match palette {
            Some(p) => {
                let values = self.owned(p.values().to_vec());
                (self.add(Part::Codes(&t.data, p)), Some(values))
            }
            None => (self.slice(&t.data), None),
        };
        TensorEntry {
            shape: t.shape.clone(),
            data,
            palette,
        }
    }

    fn slice<T: bytemuck::Pod>(&mut self, v: &'a [T]) -> Section {
        self.add(Part::Bytes(Cow::Borrowed(bytemuck::cast_slice(v))))
    }

    fn owned<T: bytemuck::Pod>(&mut self, v: Vec<T>) -> Section {
        self.add(Part::Bytes(Cow::Owned(bytemuck::cast_slice(&v).to_vec())))
    }

    fn q(&mut self, q: &'a PackedQ) -> QEntry {
        let spills: Vec<i32> = (q.spills.iter())
            .flat_map(|s| [s.col as i32, s.k as i32, s.rest])
            .collect();
        QEntry {
            n: q.n,
            k: q.k,
            nr: q.nr,
            group: q.group,
            block: q.block,
            zero: q.zero,
            codes: self.slice(&q.codes),
            scales: self.slice(&q.scales),
            ints: self.slice(&q.ints),
            spills: self.owned(spills),
            spill_at: self.owned(q.spill_at.iter().map(|&a| a as u64).collect()),
        }
    }
}

impl CpuModel {
    /// Writes this model's image to `sink`, a part at a time (the arrays are not copied into
    /// one buffer first).
    pub fn write_image(&self, sink: &mut dyn FnMut(&[u8])) -> Result<()> {
        let mut arrays = Arrays::default();
        let tensors = self.weights.iter().map(|t| arrays.tensor(t)).collect();
        let packed = (self.packed.iter())
            .map(|p| {
                p.as_ref().map(|p| match p {
                    Packed::F32(b) => {
                        let (nr, data) = b.parts();
                        PackedEntry::F32 {
                            n: b.n,
                            k: b.k,
                            nr,
                            data: arrays.slice(data),
                        }
                    }
                    Packed::Int(q) => PackedEntry::Int(arrays.q(q)),
                    Packed::Q8(qk, q) => PackedEntry::Q8 {
                        kernel: qk.name.into(),
                        q: arrays.q(q),
                    },
                })
            })
            .collect();
        let header = Header {
            format: IMAGE_FORMAT,
            build: image_build(),
            kernel: self.kernel.name.into(),
            int: self.quantized == Quantized::Int,
            plan: self.plan.stored(),
            tensors,
            packed,
        };
        let json = serde_json::to_vec(&header)
            .map_err(|e| Error::Input(format!("packed model image: {e}")))?;
        sink(MAGIC);
        sink(&(json.len() as u32).to_le_bytes());
        sink(&json);
        let zeros = [0u8; 8];
        let mut at = (MAGIC.len() + 4 + json.len()) as u64;
        sink(&zeros[..(at.next_multiple_of(8) - at) as usize]);
        at = 0;
        let mut codes = Vec::new();
        for part in &arrays.parts {
            sink(&zeros[..(at.next_multiple_of(8) - at) as usize]);
            match part {
                Part::Bytes(bytes) => sink(bytes),
                Part::Codes(data, palette) => {
                    for chunk in data.chunks(CODES_CHUNK) {
                        codes.resize(chunk.len(), 0);
                        palette.encode(chunk, &mut codes);
                        sink(&codes);
                    }
                }
            }
            at = at.next_multiple_of(8) + part.len() as u64;
        }
        Ok(())
    }
}

//! Writing an image: the header, then each array at a multiple of 8, palette-coded and
//! half-valued arrays encoded a chunk at a time. An [`ImageCursor`] names the model's arrays
//! instead of borrowing them, so an image can be written a piece at a time (between calls,
//! into a stream) and is never held whole.

use super::{
    image_build, Header, PackedEntry, QEntry, Section, TensorEntry, CODES_CHUNK, IMAGE_FORMAT,
    MAGIC,
};
use crate::cpu::half_values;
use crate::cpu::model::{CpuModel, Packed};
use crate::cpu::palette::Palette;
use crate::cpu::qpack::PackedQ;
use crate::error::{Error, Result};
use crate::exec::Quantized;

/// Tensors this large or larger are kept with a palette where they have one, else as halves
/// where every value is one.
const PALETTE_FROM: usize = 1 << 16;

/// Where one array of an image comes from.
enum Source {
    Owned(Vec<u8>),
    /// A tensor's f32 values, by `WeightId`.
    Tensor(usize),
    /// A tensor's values as their codes in the palette.
    Codes(usize, Palette),
    /// A tensor's values as halves.
    HalfTensor(usize),
    /// A packed f32 weight's panels.
    PackedF32(usize),
    /// A packed f32 weight's panels as halves.
    HalfPacked(usize),
    Q(usize, QField),
}

#[derive(Clone, Copy)]
enum QField {
    Codes,
    Scales,
    Ints,
}

/// The arrays of an image, in order, each placed at a multiple of 8.
#[derive(Default)]
struct Arrays {
    parts: Vec<(Section, Source)>,
    end: u64,
}

impl Arrays {
    fn add(&mut self, len: usize, source: Source) -> Section {
        let at = self.end.next_multiple_of(8);
        let section = Section {
            at,
            len: len as u64,
        };
        self.end = at + len as u64;
        self.parts.push((section, source));
        section
    }

    fn owned<T: bytemuck::Pod>(&mut self, v: Vec<T>) -> Section {
        let bytes = bytemuck::cast_slice(&v).to_vec();
        self.add(bytes.len(), Source::Owned(bytes))
    }

    fn tensor(&mut self, model: &CpuModel, id: usize) -> TensorEntry {
        let t = &model.weights[id];
        let large = t.data.len() >= PALETTE_FROM;
        let palette = large.then(|| Palette::of(&t.data)).flatten();
        let half = large && palette.is_none() && half_values::all_exact(&t.data);
        let (data, palette) = match palette {
            Some(p) => {
                let values = self.owned(p.values().to_vec());
                (self.add(t.data.len(), Source::Codes(id, p)), Some(values))
            }
            None if half => (self.add(2 * t.data.len(), Source::HalfTensor(id)), None),
            None => (self.add(4 * t.data.len(), Source::Tensor(id)), None),
        };
        TensorEntry {
            shape: t.shape.clone(),
            data,
            palette,
            half,
        }
    }

    fn q(&mut self, id: usize, q: &PackedQ) -> QEntry {
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
            codes: self.add(q.codes.len(), Source::Q(id, QField::Codes)),
            scales: self.add(4 * q.scales.len(), Source::Q(id, QField::Scales)),
            ints: self.add(4 * q.ints.len(), Source::Q(id, QField::Ints)),
            spills: self.owned(spills),
            spill_at: self.owned(q.spill_at.iter().map(|&a| a as u64).collect()),
        }
    }
}

/// An image being written: the header's bytes and where every array comes from. It belongs to
/// the model that made it ([`CpuModel::image_cursor`]); `at` is how many bytes are out.
pub struct ImageCursor {
    model: u64,
    head: Vec<u8>,
    parts: Vec<(Section, Source)>,
    len: u64,
    at: u64,
    part: usize,
    codes: Vec<u8>,
}

impl ImageCursor {
    /// The image's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many bytes are out.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// Whether every byte is out.
    pub fn done(&self) -> bool {
        self.at == self.len
    }
}

impl CpuModel {
    /// The start of this model's image: its header made, its arrays named.
    pub fn image_cursor(&self) -> Result<ImageCursor> {
        let mut arrays = Arrays::default();
        let tensors = (0..self.weights.len())
            .map(|id| arrays.tensor(self, id))
            .collect();
        let packed = (self.packed.iter().enumerate())
            .map(|(id, p)| {
                p.as_ref().map(|p| match p {
                    Packed::F32(b) => {
                        let (nr, data) = b.parts();
                        let half = half_values::all_exact(data);
                        let data = match half {
                            true => arrays.add(2 * data.len(), Source::HalfPacked(id)),
                            false => arrays.add(4 * data.len(), Source::PackedF32(id)),
                        };
                        PackedEntry::F32 {
                            n: b.n,
                            k: b.k,
                            nr,
                            data,
                            half,
                        }
                    }
                    Packed::Int(q) => PackedEntry::Int(arrays.q(id, q)),
                    Packed::Q8(qk, q) => PackedEntry::Q8 {
                        kernel: qk.name.into(),
                        q: arrays.q(id, q),
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
        let mut head = [MAGIC.as_slice(), &(json.len() as u32).to_le_bytes(), &json].concat();
        head.resize(head.len().next_multiple_of(8), 0);
        Ok(ImageCursor {
            model: self.id,
            len: head.len() as u64 + arrays.end,
            head,
            parts: arrays.parts,
            at: 0,
            part: 0,
            codes: Vec::new(),
        })
    }

    /// Writes the next `max` bytes of `cursor`'s image to `sink` (fewer at its end); an error
    /// for another model's cursor.
    pub fn write_image_chunk(
        &self,
        cursor: &mut ImageCursor,
        max: u64,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        if cursor.model != self.id {
            return Err(Error::Input(
                "an image cursor of another model (the model was loaded again)".into(),
            ));
        }
        let stop = cursor.at.saturating_add(max.max(1)).min(cursor.len);
        let ImageCursor {
            head,
            parts,
            at,
            part,
            codes,
            ..
        } = cursor;
        let base = head.len() as u64;
        while *at < stop {
            if *at < base {
                let end = stop.min(base);
                sink(&head[*at as usize..end as usize]);
                *at = end;
                continue;
            }
            let (section, source) = &parts[*part];
            let (start, end) = (base + section.at, base + section.at + section.len);
            if *at < start {
                let end = start.min(stop);
                sink(&[0u8; 8][..(end - *at) as usize]);
                *at = end;
            } else if *at < end {
                let range = (*at - start) as usize..(stop.min(end) - start) as usize;
                *at += self.part_bytes(source, range, codes, sink) as u64;
            } else {
                *part += 1;
            }
        }
        Ok(())
    }

    /// Bytes `range` of the array `source` names to `sink`; how many went out (a palette's
    /// codes and halves a chunk at a time, so fewer than asked).
    fn part_bytes(
        &self,
        source: &Source,
        range: std::ops::Range<usize>,
        codes: &mut Vec<u8>,
        sink: &mut dyn FnMut(&[u8]),
    ) -> usize {
        let bytes: &[u8] = match source {
            Source::Owned(b) => b,
            Source::Tensor(id) => bytemuck::cast_slice(&self.weights[*id].data),
            Source::Codes(id, palette) => {
                let end = range.end.min(range.start + CODES_CHUNK);
                let data = &self.weights[*id].data[range.start..end];
                codes.resize(data.len(), 0);
                palette.encode(data, codes);
                sink(codes);
                return data.len();
            }
            Source::PackedF32(id) => bytemuck::cast_slice(self.packed_f32(*id)),
            Source::HalfTensor(id) => {
                return half_bytes(&self.weights[*id].data, range, codes, sink);
            }
            Source::HalfPacked(id) => {
                return half_bytes(self.packed_f32(*id), range, codes, sink);
            }
            Source::Q(id, field) => {
                let q = match &self.packed[*id] {
                    Some(Packed::Int(q) | Packed::Q8(_, q)) => q,
                    _ => unreachable!("named as a packed integer weight"),
                };
                match field {
                    QField::Codes => &q.codes,
                    QField::Scales => bytemuck::cast_slice(&q.scales),
                    QField::Ints => bytemuck::cast_slice(&q.ints),
                }
            }
        };
        sink(&bytes[range.clone()]);
        range.len()
    }

    fn packed_f32(&self, id: usize) -> &[f32] {
        match &self.packed[id] {
            Some(Packed::F32(b)) => b.parts().1,
            _ => unreachable!("named as a packed f32 weight"),
        }
    }

    /// Writes this model's image to `sink`, a part at a time (never held whole).
    pub fn write_image(&self, sink: &mut dyn FnMut(&[u8])) -> Result<()> {
        let mut cursor = self.image_cursor()?;
        while !cursor.done() {
            self.write_image_chunk(&mut cursor, u64::MAX, sink)?;
        }
        Ok(())
    }
}

/// Bytes `range` of `data` as halves (two bytes a value) to `sink`, at most a chunk of values;
/// how many bytes went out. A range may start or end inside a value.
fn half_bytes(
    data: &[f32],
    range: std::ops::Range<usize>,
    buf: &mut Vec<u8>,
    sink: &mut dyn FnMut(&[u8]),
) -> usize {
    let first = range.start / 2;
    let last = range.end.div_ceil(2).min(first + CODES_CHUNK);
    buf.resize(2 * (last - first), 0);
    half_values::encode(&data[first..last], buf);
    let bytes = &buf[range.start - 2 * first..range.end.min(2 * last) - 2 * first];
    sink(bytes);
    bytes.len()
}

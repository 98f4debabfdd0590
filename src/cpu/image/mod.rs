//! A loaded CPU model as bytes, a packed-model image: the plan, the tensors read as they are and
//! the linear weights already packed for one kernel, so that a later load of the same files
//! skips the import and the packing. Layout: [`MAGIC`], the header's length (u32 LE), the
//! header (JSON), then the arrays it points to, each at a multiple of 8 bytes from the end of
//! the header's padding. Read back, every array is checked against the kernel's layout, so a
//! damaged image is an error, never an out-of-bounds read.

mod read;
mod write;

pub use read::ImageSource;
pub use write::ImageCursor;

use crate::model::StoredPlan;
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"WEBERTPK";

/// Raised whenever what an image holds, or how it is laid out, changes.
pub const IMAGE_FORMAT: u32 = 2;

#[cfg(not(target_endian = "little"))]
compile_error!("packed-model images are little-endian");

/// A byte range of the arrays after the header.
#[derive(Serialize, Deserialize, Clone, Copy)]
struct Section {
    at: u64,
    len: u64,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    /// Which engine wrote it ([`image_build`]): another build's plan or packing may differ.
    build: String,
    kernel: String,
    int: bool,
    plan: StoredPlan,
    tensors: Vec<TensorEntry>,
    packed: Vec<Option<PackedEntry>>,
}

#[derive(Serialize, Deserialize)]
struct TensorEntry {
    shape: Vec<usize>,
    /// f32; with `palette` one byte per value, its code in the palette; with `half` two bytes
    /// per value, the value as a half ([`half_values`](crate::cpu::half_values)).
    data: Section,
    /// f32, at most 256 ([`Palette`]).
    palette: Option<Section>,
    half: bool,
}

#[derive(Serialize, Deserialize)]
enum PackedEntry {
    F32 {
        n: usize,
        k: usize,
        nr: usize,
        /// f32, or with `half` two bytes per value (as a tensor's).
        data: Section,
        half: bool,
    },
    Int(QEntry),
    Q8 {
        kernel: String,
        q: QEntry,
    },
}

#[derive(Serialize, Deserialize)]
struct QEntry {
    n: usize,
    k: usize,
    nr: usize,
    group: usize,
    block: usize,
    zero: Option<i32>,
    codes: Section,
    scales: Section,
    ints: Section,
    /// `col, k, rest` per spill, as i32.
    spills: Section,
    /// u64.
    spill_at: Section,
}

/// The engine build an image belongs to: the crate's version, the image format and the
/// sources' fingerprint (`src/build.rs`).
pub fn image_build() -> String {
    let (version, sources) = (env!("CARGO_PKG_VERSION"), env!("WEBERT_SOURCE_HASH"));
    format!("webert {version} image {IMAGE_FORMAT} sources {sources}")
}

/// Values encoded a chunk at a time as they are written (the codes are never held whole).
const CODES_CHUNK: usize = 1 << 16;

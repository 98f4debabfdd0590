//! Packed-model images: an engine read back from the image of a loaded one answers bit for bit
//! as that one does, for every weight form (f32 and f16 safetensors, q8 and q4 ONNX) and the families'
//! extra tables (rotary, sliding windows, relative positions, ALiBi); an image written for
//! another kernel or `quantized` mode, or damaged, is refused with an error, never a panic.

mod common;
use common::*;
use pollster::block_on;
use serde_json::Value;
use std::path::Path;
use webert::engine::Engine;
use webert::engine::LoadOptions;
use webert::exec::{Quantized, Want};
use webert::model::ModelFiles;

const TEXTS: [&str; 2] = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Packed once, read back many times.",
];

fn options(quantized: Quantized) -> LoadOptions {
    LoadOptions {
        quantized,
        ..LoadOptions::cpu()
    }
}

fn files(dir: &Path, dtype: Option<&str>) -> ModelFiles {
    ModelFiles::from_dir_dtype(dir, dtype).unwrap()
}

/// The hidden states and logits of the texts, batched together, as bits.
fn answers(engine: &Engine) -> Vec<u32> {
    let max = engine.max_len();
    let windows: Vec<_> = (TEXTS.iter())
        .map(|t| engine.encode(t, None, Some(max)).unwrap())
        .collect();
    let out = block_on(engine.run(&windows, Want::Both, &[])).unwrap();
    (out.iter())
        .flat_map(|w| w.hidden.iter().chain(&w.logits))
        .map(|x| x.to_bits())
        .collect()
}

fn image_of(engine: &Engine) -> Vec<u8> {
    let mut image = Vec::new();
    engine
        .write_image(&mut |part| image.extend_from_slice(part))
        .unwrap();
    image
}

/// The image written `max` bytes at a time through a cursor.
fn image_in_chunks(engine: &Engine, max: u64) -> Vec<u8> {
    let mut cursor = engine.image_cursor().unwrap();
    let (mut image, mut calls) = (Vec::new(), 0);
    while !cursor.done() {
        let before = image.len();
        engine
            .write_image_chunk(&mut cursor, max, &mut |part| image.extend_from_slice(part))
            .unwrap();
        assert!(image.len() > before, "a chunk wrote nothing");
        assert!(
            (image.len() - before) as u64 <= max,
            "a chunk past its size"
        );
        calls += 1;
    }
    assert_eq!(image.len() as u64, cursor.len());
    assert!(calls as u64 >= cursor.len().div_ceil(max));
    image
}

/// Loads `dir`, reads its image back, and checks that both answer alike; the image.
fn round_trip(dir: &Path, dtype: Option<&str>, quantized: Quantized) -> Vec<u8> {
    let loaded = block_on(Engine::load(files(dir, dtype), options(quantized))).unwrap();
    let image = image_of(&loaded);
    let back = Engine::from_image(files(dir, dtype), &image[..], options(quantized))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert_eq!(back.backend(), loaded.backend());
    assert_eq!(back.int_kernel(), loaded.int_kernel());
    let (a, b) = (answers(&loaded), answers(&back));
    assert!(!a.is_empty());
    assert!(a == b, "{}: the image's answers differ", dir.display());
    // What it holds is what it was written from: writing it again gives the same bytes.
    assert!(image_of(&back) == image, "{}", dir.display());
    image
}

/// `dir` with its `model.safetensors` in f16 (every value rounded to a half), in a new folder.
fn f16_copy(dir: &Path) -> std::path::PathBuf {
    use safetensors::{tensor::TensorView, Dtype, SafeTensors};
    let name = dir.file_name().unwrap().to_string_lossy();
    let out = root()
        .join("target/test-models")
        .join(format!("{name}-f16-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for f in std::fs::read_dir(dir).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() && f.file_name().unwrap() != "model.safetensors" {
            std::fs::copy(&f, out.join(f.file_name().unwrap())).unwrap();
        }
    }
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    // f32 tensors as halves; others (position ids) as they are.
    let halves: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = (st.tensors().into_iter())
        .map(|(name, t)| match t.dtype() {
            Dtype::F32 => {
                let data = (t.data().chunks_exact(4))
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .flat_map(|x| half::f16::from_f32(x).to_le_bytes())
                    .collect();
                (name, Dtype::F16, t.shape().to_vec(), data)
            }
            other => (name, other, t.shape().to_vec(), t.data().to_vec()),
        })
        .collect();
    let views = halves.iter().map(|(name, dtype, shape, data)| {
        let view = TensorView::new(*dtype, shape.clone(), data).unwrap();
        (name.clone(), view)
    });
    safetensors::serialize_to_file(views, None, &out.join("model.safetensors")).unwrap();
    out
}

#[test]
fn images_answer_as_the_loaded_model_for_every_weight_form() {
    let minilm = model_dir("minilm");
    let f32_image = round_trip(&minilm, Some("fp32"), Quantized::Int);
    // Weights from an f16 file are kept as halves: half the bytes of the f32 image.
    let f16_image = round_trip(&f16_copy(&minilm), Some("fp32"), Quantized::Int);
    assert!(
        f16_image.len() * 100 < f32_image.len() * 51,
        "{} bytes for f16 weights, {} for f32",
        f16_image.len(),
        f32_image.len()
    );
    let q8 = round_trip(&minilm, Some("q8"), Quantized::Int);
    // Its word embeddings, dequantized from one scale's 8-bit codes, are kept as those codes
    // and the 256 values (the f32 table alone is 47 MB).
    assert!(q8.len() < 30_000_000, "{} bytes", q8.len());
    round_trip(&minilm, Some("q8"), Quantized::F32);
    round_trip(&model_dir("pii"), Some("q4"), Quantized::Int);
}

/// Written a piece at a time (as the package streams it into the cache), an image has the same
/// bytes, for chunks of any size: across the header, the padding, palette codes and arrays.
#[test]
fn images_written_in_chunks_are_the_same_bytes() {
    let q8 = block_on(Engine::load(
        files(&model_dir("minilm"), Some("q8")),
        options(Quantized::Int),
    ))
    .unwrap();
    let whole = image_of(&q8);
    for max in [4099, 1 << 16, (1 << 20) + 5] {
        assert!(image_in_chunks(&q8, max) == whole, "chunks of {max}");
    }
    // f32 values, and halves (two bytes a value: chunks that start and end inside one).
    let tiny = root().join("tests/tiny/modernbert-seqcls");
    for dir in [tiny.clone(), f16_copy(&tiny)] {
        let tiny = block_on(Engine::load(files(&dir, None), options(Quantized::Int))).unwrap();
        let whole = image_of(&tiny);
        for max in [1, 3, 8, 1000] {
            assert!(image_in_chunks(&tiny, max) == whole, "chunks of {max}");
        }
    }
    // A cursor belongs to its model: another one (even of the same files) refuses it.
    let mut cursor = q8.image_cursor().unwrap();
    let again = block_on(Engine::load(
        files(&model_dir("minilm"), Some("q8")),
        options(Quantized::Int),
    ))
    .unwrap();
    let err = again
        .write_image_chunk(&mut cursor, 100, &mut |_| {})
        .unwrap_err();
    assert!(err.to_string().contains("another model"), "{err}");
}

#[test]
fn images_answer_as_the_loaded_model_for_each_family() {
    for name in [
        "modernbert-seqcls",
        "deberta-v3-tokcls",
        "mpnet-mlm",
        "jina-v2-base",
        "nomic-bert-ntk-hub",
        "eurobert-seqcls-mean-gqa",
        "albert-qa",
    ] {
        round_trip(&root().join("tests/tiny").join(name), None, Quantized::Int);
    }
}

fn header(image: &[u8]) -> (Value, usize) {
    let len = u32::from_le_bytes(image[8..12].try_into().unwrap()) as usize;
    (serde_json::from_slice(&image[12..12 + len]).unwrap(), len)
}

/// `image` with its header replaced by `h`, the arrays as they were.
fn with_header(image: &[u8], h: &Value) -> Vec<u8> {
    let (_, len) = header(image);
    let mut json = serde_json::to_vec(h).unwrap();
    let arrays = (12 + len).next_multiple_of(8);
    let (magic, size) = (&image[..8], (json.len() as u32).to_le_bytes());
    json.resize((12 + json.len()).next_multiple_of(8) - 12, b' ');
    [magic, &size, &json, &image[arrays..]].concat()
}

fn refused(dir: &Path, dtype: Option<&str>, image: &[u8], quantized: Quantized) -> String {
    match Engine::from_image(files(dir, dtype), image, options(quantized)) {
        Ok(_) => panic!("a bad image was read"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn images_of_another_kernel_mode_or_build_are_refused() {
    let dir = model_dir("minilm");
    let image = round_trip(&dir, Some("q8"), Quantized::Int);
    let e = refused(&dir, Some("q8"), &image, Quantized::F32);
    assert!(e.contains("packed for"), "{e}");
    let scalar = LoadOptions {
        isa: Some("scalar".into()),
        ..options(Quantized::Int)
    };
    if webert::cpu::kernels::select().name != "scalar" {
        let e = Engine::from_image(files(&dir, Some("q8")), &image[..], scalar).err();
        assert!(e.unwrap().to_string().contains("packed for"));
    }
    let (mut h, _) = header(&image);
    h["build"] = "webert 0.0.0 image 0".into();
    let e = refused(&dir, Some("q8"), &with_header(&image, &h), Quantized::Int);
    assert!(e.contains("written by webert 0.0.0"), "{e}");
    let gpu = LoadOptions {
        device: webert::engine::Device::Gpu,
        ..LoadOptions::default()
    };
    assert!(Engine::from_image(files(&dir, Some("q8")), &image[..], gpu).is_err());
}

type Damage = fn(&mut Value);

#[test]
fn damaged_images_are_errors_not_panics() {
    let dir = root().join("tests/tiny/modernbert-seqcls");
    let image = round_trip(&dir, None, Quantized::Int);
    // An array of halves one byte short.
    let halves = f16_copy(&dir);
    let f16_image = round_trip(&halves, None, Quantized::Int);
    let (mut h, _) = header(&f16_image);
    let p = (h["packed"].as_array_mut().unwrap().iter_mut())
        .find(|p| p["F32"]["half"] == true)
        .expect("packed halves");
    let len = &mut p["F32"]["data"]["len"];
    *len = (len.as_u64().unwrap() - 1).into();
    let e = refused(&halves, None, &with_header(&f16_image, &h), Quantized::Int);
    assert!(e.contains("an array of halves"), "{e}");
    // Cut anywhere: the header, an array, the last byte.
    let (_, len) = header(&image);
    for cut in [
        0,
        7,
        11,
        12 + len / 2,
        12 + len + 3,
        image.len() / 2,
        image.len() - 1,
    ] {
        let e = refused(&dir, None, &image[..cut], Quantized::Int);
        assert!(
            e.contains("packed model image") || e.contains("EOF"),
            "{cut}: {e}"
        );
    }
    let (h, _) = header(&image);
    let cases: [(&str, Damage); 5] = [
        ("a tensor's shape", |h| {
            let s = &mut h["tensors"][0]["shape"][0];
            *s = (s.as_u64().unwrap() + 1).into();
        }),
        ("an array past the end", |h| {
            h["tensors"][0]["data"]["at"] = (u32::MAX as u64).into();
        }),
        ("a packed panel's length", |h| {
            let p = (h["packed"].as_array_mut().unwrap().iter_mut())
                .find(|p| !p.is_null())
                .unwrap();
            let data = &mut p.as_object_mut().unwrap().values_mut().next().unwrap()["data"];
            data["len"] = (data["len"].as_u64().unwrap() - 8).into();
        }),
        ("an op's weight", |h| {
            h["plan"]["weight_names"].as_array_mut().unwrap().pop();
        }),
        ("a head's ops", |h| {
            h["plan"]["heads"][0]["ops"]["end"] = 100_000.into();
        }),
    ];
    for (what, damage) in cases {
        let mut bad = h.clone();
        damage(&mut bad);
        let e = refused(&dir, None, &with_header(&image, &bad), Quantized::Int);
        assert!(e.contains("packed model image"), "{what}: {e}");
    }
}

//! Build script: a fingerprint of the sources (`WEBERT_SOURCE_HASH`), which packed-model images
//! carry: an image written by another build's plan or packing code is never read back.

use std::path::Path;

fn hash_dir(dir: &Path, h: &mut u64) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            hash_dir(&path, h);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let name = path.to_string_lossy();
            for &b in name.as_bytes().iter().chain(&bytes) {
                *h = (*h ^ b as u64).wrapping_mul(0x100_0000_01b3); // FNV-1a
            }
        }
    }
}

fn main() {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for dir in ["src", "shaders"] {
        println!("cargo:rerun-if-changed={dir}");
        hash_dir(Path::new(dir), &mut h);
    }
    println!("cargo:rustc-env=WEBERT_SOURCE_HASH={h:016x}");
}

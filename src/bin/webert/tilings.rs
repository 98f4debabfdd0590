//! GEMM tilings timed on the GPU, kept between runs in the file `WEBERT_GPU_TILINGS` names.

use std::path::Path;

/// Reads GEMM tilings timed by an earlier run (`WEBERT_GPU_TILINGS`); a missing file is a
/// first run, an unreadable one is timed anew.
pub fn restore(path: &Path) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            return eprintln!(
                "webert: {}: {e}; GPU tilings are timed anew",
                path.display()
            )
        }
    };
    if let Err(e) = webert::engine::import_gpu_tilings(&text) {
        eprintln!(
            "webert: {}: {e}; GPU tilings are timed anew",
            path.display()
        );
    }
}

/// Keeps the GEMM tilings this run timed, with those it read, for the next run.
pub fn save(path: &Path) {
    if webert::engine::gpu_tilings_timed() == 0 {
        return;
    }
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        // Written whole, then renamed over the old file: never a half-written file.
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, webert::engine::export_gpu_tilings())?;
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = write() {
        eprintln!("webert: {}: GPU tilings not saved: {e}", path.display());
    }
}

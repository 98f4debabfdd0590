//! The face JavaScript sees (www/pkg-src wraps it): task requests as JSON in `calls`, which
//! also builds natively so its tests run everywhere, and the wasm-bindgen exports.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod bindings;
pub mod calls;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod images;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod profiling;
pub mod trained;

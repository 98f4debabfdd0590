# Sourced by the scripts that build wasm: `RUSTFLAGS="-C target-feature=… $wasm_codegen"`.
# Loop strength reduction off: LLVM then folds the GEMM tiles' constant offsets into their
# loads and keeps each A splat next to its FMAs, which lets the relaxed-simd tile be 6x8
# instead of 4x8 without spilling in V8 (src/cpu/relaxed.rs); the cfg tells the code so.
wasm_codegen="-C llvm-args=-disable-lsr --cfg webert_no_lsr"

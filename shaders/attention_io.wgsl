// The attention shaders' buffers (prepended to each): [q|k|v] rows in, per-sequence
// lengths, context rows out, the distance bias table (a dummy when bias_width is 0), and
// DeBERTa's projected relative embeddings and their row per distance (dummies without).
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> lens: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> distance_bias: array<f32>;
@group(0) @binding(5) var<storage, read> pos_key: array<f32>;
@group(0) @binding(6) var<storage, read> pos_query: array<f32>;
@group(0) @binding(7) var<storage, read> rel_index: array<f32>;

// The keys [lo, hi) that query rows first..last see: all of the sequence's, or those within
// a sliding window of one of them.
fn key_range(first: u32, last: u32, len: u32) -> vec2<u32> {
    if (p.has_window == 0u) {
        return vec2<u32>(0u, len);
    }
    let lo = min(first - min(first, p.window), len);
    let hi = min(last + min(p.window, len) + 1u, len);
    return vec2<u32>(lo, max(lo, hi));
}

// Whether query `row` sees key `key` (inside its window, if any).
fn in_window(row: u32, key: u32) -> bool {
    return p.has_window == 0u || max(row, key) - min(row, key) <= p.window;
}

// DeBERTa's content-to-position and position-to-content terms of query `row` (its q at
// qkv[q0..]) and key `key` (its k at qkv[k0..]), before the scale.
fn relative_terms(h: u32, row: u32, key: u32, q0: u32, k0: u32) -> f32 {
    if (p.has_c2p + p.has_p2c == 0u) {
        return 0.0;
    }
    let r = u32(rel_index[p.rel_center + min(row, p.rel_center) - key]);
    let o = r * p.hidden + h * p.head_dim;
    var s = 0.0;
    if (p.has_c2p != 0u) {
        for (var d = 0u; d < p.head_dim; d++) {
            s = fma(qkv[q0 + d], pos_key[o + d], s);
        }
    }
    if (p.has_p2c != 0u) {
        for (var d = 0u; d < p.head_dim; d++) {
            s = fma(qkv[k0 + d], pos_query[o + d], s);
        }
    }
    return s;
}

// What is added to the scaled score of query `row` and key `key` of head `h`.
fn score_bias(h: u32, row: u32, key: u32) -> f32 {
    if (p.bias_width == 0u) {
        return 0.0;
    }
    // Rows past the sequence (computed, never stored) read the last real row's entries.
    return distance_bias[h * p.bias_width + p.bias_center + key - min(row, p.bias_center)];
}

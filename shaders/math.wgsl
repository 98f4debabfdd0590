// Elementary functions computed as the CPU executor computes them (src/cpu/math.rs), so that
// both executors round alike: WGSL's exp may be several ulp off and it has no erf, and the
// integer q8 path turns an ulp upstream into a code on the other side of a rounding step.

// e^x: range reduction to [-ln2/2, ln2/2] and a degree-6 polynomial (rel. err < 2e-7). No
// fma: lavapipe's loses bits in the reduction, and n · ln2_hi is exact without it (ln2_hi has
// 8 trailing zero bits and |n| ≤ 127).
fn exp_poly(v: f32) -> f32 {
    let x = clamp(v, -87.3, 88.0);
    let n = round(x * 1.44269504);
    let r = (x - n * 0.69314575) - n * 1.4286068e-6;
    var e = 0.001388947 * r + 0.008333452;
    e = e * r + 0.04166641;
    e = e * r + 0.16666667;
    e = e * r + 0.5;
    e = e * r + 1.0;
    e = e * r + 1.0;
    return e * bitcast<f32>(u32(i32(n) + 127) << 23u);
}

// erf(x) = x·P(x²)/Q(x²) on [-4, 4] (±1 in f32 beyond), the rational fit of Eigen and XLA.
fn erf(v: f32) -> f32 {
    let x = clamp(v, -4.0, 4.0);
    let x2 = x * x;
    var n = -2.7261423e-10 * x2 + 2.7706814e-8;
    n = n * x2 - 2.101024e-6;
    n = n * x2 - 5.6925064e-5;
    n = n * x2 - 7.3499063e-4;
    n = n * x2 - 2.9546e-3;
    n = n * x2 - 1.6096033e-2;
    var d = -1.4566072e-5 * x2 - 2.1337406e-4;
    d = d * x2 - 1.682827e-3;
    d = d * x2 - 7.3733292e-3;
    d = d * x2 - 1.4264739e-2;
    return n * x / d;
}

// a / b rounded to nearest even, as IEEE division is (WGSL lets `/` be 2.5 ulp off, and a
// code that rounds the other way moves the rest of the forward): a long division of the
// 24-bit significands. For normal a and b; a quotient below 2^-126 gives 0.
fn div_rn(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let sign = (ua ^ ub) & 0x80000000u;
    let eb = i32((ub >> 23u) & 0xffu);
    if (eb == 0 || eb == 255) {
        return a / b;
    }
    var e = i32((ua >> 23u) & 0xffu) - eb + 127;
    if ((ua & 0x7f800000u) == 0u) {
        return a / b; // zero, or too small to be near a code's rounding boundary
    }
    var r = (ua & 0x7fffffu) | 0x800000u;
    let mb = (ub & 0x7fffffu) | 0x800000u;
    if (r < mb) {
        r = r << 1u;
        e -= 1;
    }
    var q = 0u;
    for (var i = 0u; i < 25u; i++) {
        q = q << 1u;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r = r << 1u;
    }
    var m = q >> 1u;
    if ((q & 1u) == 1u && (r != 0u || (m & 1u) == 1u)) {
        m += 1u;
    }
    if (m == 0x1000000u) {
        m = 0x800000u;
        e += 1;
    }
    if (e <= 0) {
        return bitcast<f32>(sign);
    }
    if (e >= 255) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    return bitcast<f32>(sign | (u32(e) << 23u) | (m & 0x7fffffu));
}

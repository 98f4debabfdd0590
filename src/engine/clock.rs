//! A clock for timings that also runs in the browser.

/// Milliseconds since an arbitrary origin. `std::time::Instant` panics on
/// wasm32-unknown-unknown, where this asks `performance.now()` (or `Date.now()`).
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(super) fn now_ms() -> f64 {
    use wasm_bindgen::JsCast;
    let get = |o: &wasm_bindgen::JsValue, k: &str| js_sys::Reflect::get(o, &k.into()).ok();
    let performance = get(&js_sys::global(), "performance");
    let now = performance.as_ref().and_then(|p| {
        let f = get(p, "now")?.dyn_into::<js_sys::Function>().ok()?;
        f.call0(p).ok()?.as_f64()
    });
    now.unwrap_or_else(js_sys::Date::now)
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(super) fn now_ms() -> f64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward() {
        let t = now_ms();
        let mut last = t;
        for _ in 0..1000 {
            let now = now_ms();
            assert!(now >= last, "the clock went back: {last} -> {now}");
            last = now;
        }
        // Node's WASI wakes sleepers on a millisecond timer that may fire a little early, so the
        // bound leaves room for that while still telling milliseconds from seconds or ticks.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let slept = now_ms() - t;
        assert!(
            (15.0..10_000.0).contains(&slept),
            "a 20 ms sleep measured {slept} ms"
        );
    }
}

//! Where a load's time went, for finding what makes loads slow.

/// Milliseconds per phase of [`super::Engine::load`]: reading and checking the files into
/// weights (`parse`), building the plan (`plan`), setting the GPU up (`gpu`), packing the
/// weights for the CPU's kernels (`pack`) and the auto choice's timing of both (`probe`); from
/// a packed-model image, reading it (`image`) in place of plan and pack.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LoadTimes {
    pub parse_ms: f64,
    pub plan_ms: f64,
    pub gpu_ms: f64,
    pub pack_ms: f64,
    pub probe_ms: f64,
    pub image_ms: f64,
}

/// Laps of a clock: each call gives the milliseconds since the one before.
pub(super) struct Laps(f64);

impl Laps {
    pub(super) fn start() -> Self {
        Laps(super::clock::now_ms())
    }

    pub(super) fn lap(&mut self) -> f64 {
        let now = super::clock::now_ms();
        let ms = now - self.0;
        self.0 = now;
        (ms * 10.0).round() / 10.0
    }
}

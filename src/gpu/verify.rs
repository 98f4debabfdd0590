//! Cooperative-matrix GEMMs are an experimental wgpu feature that no adapter in CI offers
//! (lavapipe and SwiftShader lack it). So before a forward first uses them, the device runs one
//! GEMM of the model's own f16 weights on them (whole, and split in two as timed tilings may
//! pick) and on the tiled f16 kernel that CI checks against the CPU. Should they disagree, or
//! the device refuse any of it, cooperative matrices are turned off for this executor and the
//! forward goes on with the tiled kernels. Their pipeline is built here too, inside error
//! scopes: a driver that refuses the shader only turns them off.

use super::buffers::{filled, staging, storage};
use super::gemm_plan::GemmPlan;
use super::gemm_steps::GemmShape;
use super::kernels::Kernel;
use super::pipelines::build;
use super::readback::f32s;
use super::weights::GemmWeights;
use super::GpuExecutor;
use crate::error::Result;
use crate::exec::Dims;

/// Rows of the checked GEMM: one row of 64-row tiles.
const ROWS: usize = 64;
/// The relative L2 distance allowed between the two: both multiply f16 operands into f32 sums
/// (the tiled kernel in 4-term f16 dots); a wrong fragment layout or index is off by ~1.
const TOLERANCE: f64 = 1e-2;

impl GpuExecutor {
    /// Checks cooperative matrices once, before the first forward (of `dims`) that may use them.
    pub(super) async fn check_coop(&mut self, dims: Dims) -> Result<()> {
        if self.ctx.choice.coop.is_none() || self.coop_checked {
            return Ok(());
        }
        self.coop_checked = true;
        if let Some(why) = self.coop_verdict(dims).await? {
            self.ctx.choice.coop = None;
            self.timings
                .push(format!("cooperative matrices off: {why}"));
            self.ctx.coop_failed = Some(why);
        }
        Ok(())
    }

    /// `None` when the device builds the cooperative-matrix GEMM and it agrees with the tiled
    /// one, else why not.
    async fn coop_verdict(&mut self, dims: Dims) -> Result<Option<String>> {
        #[cfg(any(test, feature = "test-hooks"))]
        match self.coop_stand_in {
            Some(StandIn::WrongWeights) => return self.disagreement(dims, None, true).await,
            Some(StandIn::RefusedShader) => return Ok(self.build_coop(Some(REFUSED)).await),
            None => {}
        }
        if let Some(why) = self.build_coop(None).await {
            return Ok(Some(why));
        }
        self.disagreement(dims, Some(Kernel::GemmCoop), false).await
    }

    /// Builds the cooperative-matrix pipeline (tests: from `code` instead) inside error scopes;
    /// why not, where the device refused it.
    async fn build_coop(&mut self, code: Option<&str>) -> Option<String> {
        let d = self.ctx.device.clone();
        let choice = self.ctx.choice;
        let code = code.map_or_else(|| Kernel::GemmCoop.code(&choice), str::to_string);
        let built = async { build(&d, Kernel::GemmCoop.name(), &code) };
        match super::refused(&d, built).await {
            (_, Some(why)) => Some(format!("the device refused their shader: {why}")),
            (pipeline, None) => {
                self.pipelines.insert(Kernel::GemmCoop, pipeline);
                None
            }
        }
    }

    /// Pretends the adapter offers cooperative matrices whose check fails: the check compares a
    /// tiled kernel fed another layer's weights in their place.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn fail_coop_check_for_test(&mut self) {
        self.ctx.choice.coop = Some(32);
        self.coop_stand_in = Some(StandIn::WrongWeights);
    }

    /// Pretends the adapter offers cooperative matrices whose shader the device refuses.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn refuse_coop_shader_for_test(&mut self) {
        self.ctx.choice.coop = Some(32);
        self.coop_stand_in = Some(StandIn::RefusedShader);
    }

    /// The check's verdict on its stand-in (`disagreement` without a kernel).
    #[cfg(any(test, feature = "test-hooks"))]
    pub async fn check_gemm_for_test(&self, dims: Dims, wrong: bool) -> Result<Option<String>> {
        self.disagreement(dims, None, wrong).await
    }

    /// Runs `kernel` (by default the tiled f16 GEMM on 16-row tiles), whole and with its
    /// reduction split in two (the partial sums and the reduce pass, as timing may pick), and
    /// the tiled f16 GEMM on 64-row tiles, over the same activations and the weights of the
    /// first f16 GEMM of a forward of `dims` (`other_weights`: `kernel` gets the next GEMM's of
    /// that shape instead, a wrong answer for tests); `None` when both agree with the tiled one
    /// or there is no such GEMM, else why not.
    pub(super) async fn disagreement(
        &self,
        dims: Dims,
        kernel: Option<Kernel>,
        other_weights: bool,
    ) -> Result<Option<String>> {
        let gemms = self.builder().gemms(dims);
        let Some(g) = gemms.iter().find(|g| g.weights == GemmWeights::F16) else {
            return Ok(None);
        };
        let kernel = kernel.unwrap_or(Kernel::gemm_tiled(g.k, g.weights, true));
        let checked = |split_k| GemmPlan { kernel, split_k };
        let tiled = GemmPlan {
            kernel: Kernel::gemm_tiled(g.k, g.weights, false),
            split_k: 1,
        };
        let same_shape = |o: &&GemmShape| (o.n, o.k, o.weights) == (g.n, g.k, g.weights);
        let source = match other_weights {
            true => gemms.iter().filter(same_shape).nth(1).unwrap_or(g),
            false => g,
        };
        let d = &self.ctx.device;
        let (m, n, k) = (ROWS, g.n, g.k);
        // Activations in [-1, 1) from a fixed sequence: no two rows alike, nothing special.
        let mut state = 0x9e37_79b9_u32;
        let x: Vec<f32> = (0..m * k)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            })
            .collect();
        let x = filled(
            d,
            &self.ctx.queue,
            "check_x",
            wgpu::BufferUsages::STORAGE,
            bytemuck::cast_slice(&x),
        );
        let outs = ["check_whole", "check_split", "check_tiled"].map(|l| storage(d, l, m * n * 4));
        let reads = [(); 3].map(|_| staging(d, m * n * 4));
        let runs = [
            (checked(1), source, &outs[0]),
            (checked(2), source, &outs[1]),
            (tiled, g, &outs[2]),
        ];
        let read = async {
            let steps = self.builder().gemm_steps(m, &x, &runs)?;
            let mut enc = d.create_command_encoder(&Default::default());
            self.encode(&mut enc, &steps.iter().collect::<Vec<_>>())?;
            for (out, read) in outs.iter().zip(&reads) {
                enc.copy_buffer_to_buffer(out, 0, read, 0, (m * n * 4) as u64);
            }
            let reads: Vec<_> = reads.iter().map(|r| (r, m * n * 4)).collect();
            self.submit_and_read(enc, &reads).await
        };
        let (read, refused) = super::refused(d, read).await;
        if let Some(why) = refused {
            return Ok(Some(format!("the device refused their GEMM: {why}")));
        }
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                // A lost device fails the forward as anywhere else; any other error only the check.
                self.ctx.check()?;
                return Ok(Some(format!("their GEMM failed: {e}")));
            }
        };
        let tiled = f32s(&read[2]);
        for (read, how) in read[..2].iter().zip(["", " split in two"]) {
            let distance = relative_distance(&f32s(read), &tiled);
            // NaN (a non-finite value) fails too.
            let agree = distance <= TOLERANCE;
            if !agree {
                let gemm = format!("their {m}x{n}x{k} GEMM{how}");
                return Ok(Some(format!(
                    "{gemm} is {distance:.3} (relative L2) from the tiled kernel's"
                )));
            }
        }
        Ok(None)
    }
}

/// What the coop check meets in place of cooperative matrices no adapter here has (tests).
#[cfg(any(test, feature = "test-hooks"))]
#[derive(Debug, Clone, Copy)]
pub(super) enum StandIn {
    /// The tiled kernel on another layer's weights: a wrong answer.
    WrongWeights,
    /// A shader the device refuses (`REFUSED`).
    RefusedShader,
}

/// WGSL that fails validation, as a driver or wgpu may refuse the cooperative-matrix shader.
#[cfg(any(test, feature = "test-hooks"))]
const REFUSED: &str = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }";

/// ‖a − b‖ / ‖b‖; NaN or infinite where either has a non-finite value or the lengths differ.
fn relative_distance(a: &[f32], b: &[f32]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        diff += (x as f64 - y as f64).powi(2);
        norm += (y as f64).powi(2);
    }
    match a.len() == b.len() {
        true => (diff / norm.max(f64::MIN_POSITIVE)).sqrt(),
        false => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::relative_distance;

    #[test]
    fn the_distance_is_relative_and_fails_on_non_finite_values() {
        let b = [3.0, 4.0];
        assert_eq!(relative_distance(&b, &b), 0.0);
        assert!((relative_distance(&[3.0, 4.5], &b) - 0.1).abs() < 1e-12);
        // Compared as the check compares: anything but a small distance fails.
        let fails = |a: &[f32]| {
            let agree = relative_distance(a, &b) <= super::TOLERANCE;
            !agree
        };
        assert!(fails(&[f32::NAN, 4.0]) && fails(&[f32::INFINITY, 4.0]) && fails(&[3.0]));
        assert!(!fails(&[3.0, 4.01]));
    }
}

//! Adapter and device: the adapter's own limits are requested (large embedding tables need
//! them), and validation errors or device loss are recorded instead of panicking.

use crate::error::{Error, GpuError, GpuErrorKind, Result};
use std::sync::{Arc, Mutex};

/// Settings of the GPU executor; the default takes what the adapter offers. Build literals
/// with `..GpuOptions::DEFAULT` so that new settings keep their automatic choice.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuOptions {
    /// Caps the bytes of one buffer binding below the adapter's limit, so that tests can make
    /// small tables and batches split as large ones do on a real adapter.
    pub max_binding: Option<u64>,
    /// f16 GEMM weights (f32 accumulation): `None` uses them when the adapter has
    /// `shader-f16`; `Some(true)` requires them, `Some(false)` keeps f32.
    pub f16: Option<bool>,
    /// Which kernel variants run (each reachable on any adapter that has its feature).
    pub kernels: KernelOptions,
    /// q4 and q8 weights dequantized to f32/f16 at upload (`Some(true)`) or kept packed (4-bit,
    /// 8-bit codes) and unpacked inside the GEMM (`Some(false)`); `None` packs them on hardware
    /// adapters and dequantizes on software ones, where unpacking costs more than the
    /// bandwidth it saves (docs/performance.md). q8 weights on the integer path (`q8_int`)
    /// stay packed on every adapter unless this is `Some(true)`: that path is a different
    /// arithmetic (onnxruntime's), not a different storage of the same one.
    pub dequantize: Option<bool>,
    /// q8 weights: `None` computes them with integer dot products (`dot4U8Packed`, activations
    /// quantized as `DynamicQuantizeLinear`) where WGSL offers them and `dequantize` is not
    /// `Some(true)`, else in f32 (the dequantized weights); `Some(true)` requires the integer
    /// path, `Some(false)` keeps f32.
    pub q8_int: Option<bool>,
}

impl GpuOptions {
    pub const DEFAULT: GpuOptions = GpuOptions {
        max_binding: None,
        f16: None,
        kernels: KernelOptions::AUTO,
        dequantize: None,
        q8_int: None,
    };

    /// q8 in f32 (the dequantized weights' arithmetic) when the CPU's `quantized` is `F32` and
    /// no GPU option chose otherwise, so both executors compute the same thing.
    pub fn for_quantized(mut self, q: crate::exec::Quantized) -> Self {
        if q == crate::exec::Quantized::F32 {
            self.q8_int.get_or_insert(false);
        }
        self
    }
}

/// Kernel variants; `None` picks by adapter (see `KernelChoice::resolve`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelOptions {
    /// LayerNorm and softmax reductions with subgroup operations (`subgroups`).
    pub subgroups: Option<bool>,
    /// f16 operands (f32 accumulation) in GEMMs and attention; needs f16 weights.
    pub f16_compute: Option<bool>,
    /// Cooperative-matrix (tensor core) GEMMs, with f16 compute.
    pub coop: Option<bool>,
    /// GEMM tiles: `None` chooses per shape and adapter.
    pub tile: Option<TileChoice>,
    /// The kernels for CPU-emulated adapters (`gemm_lanes`, `layer_norm_lanes`,
    /// `attention_lanes`: SIMD lanes read consecutive or equal words, few barriers) instead of
    /// the workgroup-tiled ones; `None` uses them on CPU-emulated adapters only.
    pub lanes: Option<bool>,
    /// GEMM tilings chosen by timing each candidate on the device (`tune.rs`) the first time a
    /// shape runs, instead of by rule; `None` times them on hardware adapters with timestamp
    /// queries; never under a fixed `tile`.
    pub tune: Option<bool>,
}

impl KernelOptions {
    pub const AUTO: KernelOptions = KernelOptions {
        subgroups: None,
        f16_compute: None,
        coop: None,
        tile: None,
        lanes: None,
        tune: None,
    };
}

/// A fixed GEMM tiling for every GEMM: 64- or 16-row tiles, and the reduction split in
/// `split_k` parts (summed by a second pass that applies the epilogue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileChoice {
    pub short: bool,
    pub split_k: u32,
}

impl std::str::FromStr for TileChoice {
    type Err = String;

    /// `64`, `16`, `64:4`, `16:2` (rows, then an optional split of the reduction).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (rows, split) = s.split_once(':').unwrap_or((s, "1"));
        let short = match rows {
            "64" => false,
            "16" => true,
            _ => return Err(format!("tile `{s}`: rows are 64 or 16")),
        };
        match split.parse::<u32>() {
            Ok(split_k @ 1..=64) => Ok(TileChoice { short, split_k }),
            _ => Err(format!("tile `{s}`: split-K is 1 to 64")),
        }
    }
}

/// What the device runs, from the options and what the adapter offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelChoice {
    pub f16_weights: bool,
    pub f16_compute: bool,
    pub subgroups: bool,
    /// Subgroup size of the cooperative-matrix GEMM (its workgroup is four subgroups); `None`
    /// without cooperative matrices.
    pub coop: Option<u32>,
    pub tile: Option<TileChoice>,
    /// A discrete or integrated GPU (not CPU-emulated): small GEMMs get split for occupancy.
    pub hardware: bool,
    /// The lanes kernels (`KernelOptions::lanes`).
    pub lanes: bool,
    /// GEMM tilings by timing (`KernelOptions::tune`).
    pub tune: bool,
}
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub options: GpuOptions,
    pub choice: KernelChoice,
    /// WGSL's `packed_4x8_integer_dot_product` (`dot4U8Packed`) is there.
    pub int_dot: bool,
    /// Why cooperative matrices were turned off after the device offered them (`verify.rs`).
    pub coop_failed: Option<String>,
    /// The first uncaptured validation/out-of-memory error, or the device-lost reason.
    failure: Arc<Mutex<Option<GpuError>>>,
}

impl GpuContext {
    pub async fn new(options: GpuOptions) -> Result<Self> {
        // wgpu panics where JS has neither a window nor a worker scope (Node), so ask first.
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(Error::gpu(
                GpuErrorKind::Unavailable,
                "WebGPU is not available here (no navigator.gpu adapter)",
            ));
        }
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter_options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        };
        let adapter = instance
            .request_adapter(&adapter_options)
            .await
            .map_err(|e| Error::gpu(GpuErrorKind::Unavailable, format!("no GPU adapter: {e}")))?;
        let info = adapter.get_info();
        let int_dot = (instance.wgsl_language_features())
            .contains(wgpu::WgslLanguageFeatures::Packed4x8IntegerDotProduct);
        if options.q8_int == Some(true) && !int_dot {
            let msg = "WGSL's packed_4x8_integer_dot_product is not available here";
            return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
        }
        let limits = adapter.limits();
        // Timestamps are optional: used only to profile when the adapter offers them.
        let mut wanted = wgpu::Features::TIMESTAMP_QUERY;
        let k = options.kernels;
        if options.f16 != Some(false) {
            wanted |= wgpu::Features::SHADER_F16;
        }
        if k.subgroups != Some(false) {
            wanted |= wgpu::Features::SUBGROUP;
        }
        if k.coop != Some(false) && k.f16_compute != Some(false) && options.f16 != Some(false) {
            // The cooperative GEMM names its subgroup by the `subgroup_id` built-in.
            wanted |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SUBGROUP;
        }
        let features = adapter.features() & wanted;
        let coop_shape = coop_subgroup(&adapter, &info);
        let missing = [
            (
                options.f16 == Some(true) || k.f16_compute == Some(true),
                wgpu::Features::SHADER_F16,
                "shader-f16",
            ),
            (
                k.subgroups == Some(true),
                wgpu::Features::SUBGROUP,
                "subgroups",
            ),
            (
                k.coop == Some(true),
                wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
                "cooperative matrices",
            ),
        ];
        for (required, feature, name) in missing {
            if required && !features.contains(feature) {
                let msg = format!("{} has no {name}", info.name);
                return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
            }
        }
        if k.coop == Some(true) && coop_shape.is_none() {
            let msg = format!(
                "{}: cooperative matrices without 16x16x16 f16 (f32 accumulator) on a fixed subgroup size",
                info.name
            );
            return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
        }
        let hardware = info.device_type != wgpu::DeviceType::Cpu;
        let timestamps = features.contains(wgpu::Features::TIMESTAMP_QUERY);
        if k.tune == Some(true) && k.tile.is_none() && !timestamps {
            let msg = format!(
                "{} has no timestamp queries to time GEMM tilings",
                info.name
            );
            return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
        }
        let f16_weights = features.contains(wgpu::Features::SHADER_F16);
        let f16_compute = f16_weights && k.f16_compute.unwrap_or(hardware || k.coop == Some(true));
        let choice = KernelChoice {
            f16_weights,
            f16_compute,
            subgroups: features.contains(wgpu::Features::SUBGROUP) && k.subgroups != Some(false),
            coop: coop_shape.filter(|_| {
                let both =
                    wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SUBGROUP;
                f16_compute && features.contains(both)
            }),
            tile: k.tile,
            hardware,
            lanes: k.lanes.unwrap_or(!hardware) && k.tile.is_none(),
            tune: k.tune.unwrap_or(hardware) && k.tile.is_none() && timestamps,
        };
        let (device, queue, refused) =
            request_device(&adapter, features, &limits)
                .await
                .map_err(|e| {
                    let msg = format!("{}: device creation failed: {e}", info.name);
                    Error::gpu(GpuErrorKind::Unavailable, msg)
                })?;
        let mut choice = choice;
        if let Some(why) = &refused {
            if k.coop == Some(true) {
                let msg = format!("{}: cooperative matrices: {why}", info.name);
                return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
            }
            choice.coop = None;
        }
        let failure = Arc::new(Mutex::new(None));
        let f = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e| {
            let kind = match e {
                wgpu::Error::OutOfMemory { .. } => GpuErrorKind::OutOfMemory,
                wgpu::Error::Validation { .. } => GpuErrorKind::Validation,
                _ => GpuErrorKind::Internal,
            };
            let mut slot = f.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| GpuError {
                kind,
                msg: e.to_string(),
            });
        }));
        let f = failure.clone();
        device.set_device_lost_callback(move |reason, msg| {
            let mut slot = f.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| GpuError {
                kind: GpuErrorKind::DeviceLost,
                msg: format!("device lost ({reason:?}): {msg}"),
            });
        });
        Ok(GpuContext {
            device,
            queue,
            info,
            limits,
            options,
            choice,
            int_dot,
            coop_failed: refused,
            failure,
        })
    }

    /// Fails once the device reported an error or was lost; it is not used again after that.
    pub fn check(&self) -> Result<()> {
        match self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            Some(e) => Err(Error::Gpu(e.clone())),
            None => Ok(()),
        }
    }

    /// A CPU-emulated adapter (lavapipe, SwiftShader, WARP): slower than the CPU executor.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    pub fn has_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The most bytes one buffer may hold and bind.
    pub fn max_binding(&self) -> u64 {
        let l = &self.limits;
        let max = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
        self.options.max_binding.map_or(max, |cap| cap.min(max))
    }

    /// GEMM weights are stored as f16.
    pub fn f16(&self) -> bool {
        self.choice.f16_weights
    }

    /// Quantized weights are uploaded dequantized, except q8 weights on the integer path
    /// (`q8_int`), which are always packed.
    pub fn dequantize(&self) -> bool {
        self.options
            .dequantize
            .unwrap_or_else(|| self.is_software())
    }

    /// q8 weights are computed with integer dot products, as onnxruntime computes them. On
    /// software adapters too: dequantizing them there (faster) would compute q8 in f32, a
    /// different answer (docs/quantization.md, "Which q8 arithmetic the GPU runs").
    pub fn q8_int(&self) -> bool {
        self.int_dot
            && match self.options.q8_int {
                Some(int) => int,
                None => self.options.dequantize != Some(true),
            }
    }

    /// What tells this adapter and driver apart from others, for caches of timings.
    pub fn identity(&self) -> String {
        let i = &self.info;
        let ids = format!("{:04x}:{:04x}", i.vendor, i.device);
        format!(
            "{:?} {} {ids} {} {}",
            i.backend, i.name, i.driver, i.driver_info
        )
    }

    pub fn name(&self) -> String {
        let name = match self.info.name.as_str() {
            "" => "unnamed adapter", // browsers may withhold the description
            n => n,
        };
        let c = &self.choice;
        let f16 = match (c.f16_weights, c.f16_compute) {
            (true, true) => ", f16 weights, f16 compute",
            (true, false) => ", f16 weights",
            _ => "",
        };
        let sg = if c.subgroups { ", subgroups" } else { "" };
        let coop = match (c.coop, &self.coop_failed) {
            (Some(_), _) => ", cooperative matrices",
            (None, Some(_)) => ", cooperative matrices off: failed their check",
            (None, None) => "",
        };
        let tune = if c.tune { ", timed GEMM tiles" } else { "" };
        format!("{name} ({:?}{f16}{sg}{coop}{tune})", self.info.backend)
    }
}

/// A device with `features` and `limits`. Experimental features (cooperative matrices) are
/// opted into as wgpu requires; should the device still refuse them, it is made without them,
/// and why they are off comes back beside it.
pub(super) async fn request_device(
    adapter: &wgpu::Adapter,
    features: wgpu::Features,
    limits: &wgpu::Limits,
) -> std::result::Result<(wgpu::Device, wgpu::Queue, Option<String>), wgpu::RequestDeviceError> {
    let experimental = features & wgpu::Features::all_experimental_mask();
    let desc = |features| wgpu::DeviceDescriptor {
        label: Some("webert"),
        required_features: features,
        required_limits: limits.clone(),
        // SAFETY: wgpu's opt-in for features it calls experimental, which it may implement with
        // bugs. The only one asked for is cooperative matrices, and their GEMM is checked on the
        // device against the tiled kernel before a forward uses it (`verify.rs`).
        experimental_features: match experimental.is_empty() {
            true => wgpu::ExperimentalFeatures::disabled(),
            false => unsafe { wgpu::ExperimentalFeatures::enabled() },
        },
        ..Default::default()
    };
    match adapter.request_device(&desc(features)).await {
        Ok((device, queue)) => Ok((device, queue, None)),
        Err(e) if !experimental.is_empty() => {
            let (device, queue) = adapter
                .request_device(&desc(features - experimental))
                .await?;
            let why = format!("the device refused them: {e}");
            Ok((device, queue, Some(why)))
        }
        Err(e) => Err(e),
    }
}

/// The subgroup size for the cooperative-matrix GEMM: the adapter lists 16x16x16 with f16
/// operands and an f32 accumulator and runs one fixed subgroup size (the shader's workgroup
/// is four subgroups, each owning a 32x32 quarter of the tile).
fn coop_subgroup(adapter: &wgpu::Adapter, info: &wgpu::AdapterInfo) -> Option<u32> {
    if !adapter
        .features()
        .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    {
        return None;
    }
    let f16 = wgpu::CooperativeScalarType::F16;
    let f32 = wgpu::CooperativeScalarType::F32;
    let has = adapter.cooperative_matrix_properties().iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == f16 && p.cr_type == f32
    });
    let size = info.subgroup_min_size;
    (has && size == info.subgroup_max_size && (8..=128).contains(&size)).then_some(size)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// An experimental feature the adapter lacks (no adapter here has cooperative matrices)
    /// makes the device refuse them; the device is then made without them, saying why.
    #[test]
    fn a_device_that_refuses_cooperative_matrices_is_made_without_them() {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let options = wgpu::RequestAdapterOptions::default();
        let Ok(adapter) = pollster::block_on(instance.request_adapter(&options)) else {
            let required = std::env::var_os("CI").is_some()
                || std::env::var_os("WEBERT_REQUIRE_GPU").is_some();
            assert!(!required, "no GPU adapter");
            return eprintln!("skipped: no GPU adapter");
        };
        let coop = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        if adapter.features().contains(coop) {
            return eprintln!("skipped: this adapter has cooperative matrices");
        }
        let limits = adapter.limits();
        let features = coop | (adapter.features() & wgpu::Features::TIMESTAMP_QUERY);
        let (device, _, why) =
            pollster::block_on(request_device(&adapter, features, &limits)).unwrap();
        let why = why.expect("a device refusing cooperative matrices says so");
        assert!(why.starts_with("the device refused them: "), "{why}");
        assert!(!device.features().contains(coop));
        assert_eq!(features - coop, device.features() & features);
        // Without experimental features nothing is retried or said.
        let plain = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (_, _, why) = pollster::block_on(request_device(&adapter, plain, &limits)).unwrap();
        assert_eq!(why, None);
    }
}

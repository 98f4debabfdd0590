//! Adapter and device: the adapter's own limits are requested (large embedding tables need
//! them), and validation errors or device loss are recorded instead of panicking.

use crate::error::{Error, GpuError, GpuErrorKind, Result};
use std::sync::{Arc, Mutex};

/// Settings of the GPU executor; the default takes what the adapter offers.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuOptions {
    /// Caps the bytes of one buffer binding below the adapter's limit, so that tests can make
    /// small tables and batches split as large ones do on a real adapter.
    pub max_binding: Option<u64>,
    /// f16 GEMM weights (f32 accumulation): `None` uses them when the adapter has
    /// `shader-f16`; `Some(true)` requires them, `Some(false)` keeps f32.
    pub f16: Option<bool>,
    /// q4 and q8 weights dequantized to f32/f16 at upload (`Some(true)`) or kept packed (4-bit,
    /// 8-bit codes) and unpacked inside the GEMM (`Some(false)`); `None` packs them on hardware
    /// adapters and dequantizes on software ones, where unpacking costs more than the
    /// bandwidth it saves (docs/performance.md).
    pub dequantize: Option<bool>,
    /// q8 weights: `None` computes them with integer dot products (`dot4U8Packed`, activations
    /// quantized as `DynamicQuantizeLinear`) where WGSL offers them, else in f32 from the packed
    /// codes; `Some(true)` requires the integer path, `Some(false)` keeps f32.
    pub q8_int: Option<bool>,
}

impl GpuOptions {
    /// q8 in f32 (the dequantized weights' arithmetic) when the CPU's `quantized` is `F32` and
    /// no GPU option chose otherwise, so both executors compute the same thing.
    pub fn for_quantized(mut self, q: crate::exec::Quantized) -> Self {
        if q == crate::exec::Quantized::F32 {
            self.q8_int.get_or_insert(false);
        }
        self
    }
}

pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub options: GpuOptions,
    /// WGSL's `packed_4x8_integer_dot_product` (`dot4U8Packed`) is there.
    pub int_dot: bool,
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
        if options.f16 != Some(false) {
            wanted |= wgpu::Features::SHADER_F16;
        }
        let features = adapter.features() & wanted;
        if options.f16 == Some(true) && !features.contains(wgpu::Features::SHADER_F16) {
            let msg = format!("{} has no shader-f16", info.name);
            return Err(Error::gpu(GpuErrorKind::Unavailable, msg));
        }
        let desc = wgpu::DeviceDescriptor {
            label: Some("webert"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = adapter.request_device(&desc).await.map_err(|e| {
            let msg = format!("{}: device creation failed: {e}", info.name);
            Error::gpu(GpuErrorKind::Unavailable, msg)
        })?;
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
            int_dot,
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
        self.device.features().contains(wgpu::Features::SHADER_F16)
    }

    /// Quantized weights are uploaded dequantized.
    pub fn dequantize(&self) -> bool {
        self.options
            .dequantize
            .unwrap_or_else(|| self.is_software())
    }

    /// q8 weights are computed with integer dot products.
    pub fn q8_int(&self) -> bool {
        !self.dequantize() && self.int_dot && self.options.q8_int != Some(false)
    }

    pub fn name(&self) -> String {
        let name = match self.info.name.as_str() {
            "" => "unnamed adapter", // browsers may withhold the description
            n => n,
        };
        let f16 = if self.f16() { ", f16 weights" } else { "" };
        format!("{name} ({:?}{f16})", self.info.backend)
    }
}

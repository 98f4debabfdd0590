//! Adapter and device: the adapter's own limits are requested (large embedding tables need
//! them), and validation errors or device loss are recorded instead of panicking.

use crate::error::{Error, Result};
use std::sync::{Arc, Mutex};

pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    /// The first uncaptured validation/out-of-memory error, or the device-lost reason.
    failure: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    pub async fn new() -> Result<Self> {
        // wgpu panics where JS has neither a window nor a worker scope (Node), so ask first.
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(Error::Gpu(
                "WebGPU is not available here (no navigator.gpu adapter)".into(),
            ));
        }
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        };
        let adapter = instance
            .request_adapter(&options)
            .await
            .map_err(|e| Error::Gpu(format!("no GPU adapter: {e}")))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        // Timestamps are optional: used only to profile when the adapter offers them.
        let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let desc = wgpu::DeviceDescriptor {
            label: Some("webert"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = adapter
            .request_device(&desc)
            .await
            .map_err(|e| Error::Gpu(format!("{}: device creation failed: {e}", info.name)))?;
        let failure = Arc::new(Mutex::new(None));
        let f = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e| {
            let mut slot = f.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| e.to_string());
        }));
        let f = failure.clone();
        device.set_device_lost_callback(move |reason, msg| {
            let mut slot = f.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| format!("device lost ({reason:?}): {msg}"));
        });
        Ok(GpuContext {
            device,
            queue,
            info,
            limits,
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
            Some(msg) => Err(Error::Gpu(msg.clone())),
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

    pub fn name(&self) -> String {
        let name = match self.info.name.as_str() {
            "" => "unnamed adapter", // browsers may withhold the description
            n => n,
        };
        format!("{name} ({:?})", self.info.backend)
    }
}

//! Awaiting `map_async` without blocking: the browser resolves it from its event loop; native
//! callers poll the device first.

use crate::error::{Error, GpuErrorKind};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

type Slot = Arc<Mutex<(Option<Result<(), wgpu::BufferAsyncError>>, Option<Waker>)>>;

pub struct MapFuture(Slot);

impl Future for MapFuture {
    type Output = Result<(), wgpu::BufferAsyncError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match s.0.take() {
            Some(r) => Poll::Ready(r),
            None => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Starts mapping the whole buffer for reading.
pub fn map_read(buffer: &wgpu::Buffer) -> MapFuture {
    let slot: Slot = Arc::new(Mutex::new((None, None)));
    let s = slot.clone();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let mut g = s.lock().unwrap_or_else(|p| p.into_inner());
        g.0 = Some(r);
        if let Some(w) = g.1.take() {
            w.wake();
        }
    });
    MapFuture(slot)
}

/// The first `bytes` of a buffer mapped for reading; unmaps it.
pub fn read_bytes(buffer: &wgpu::Buffer, bytes: usize) -> crate::Result<Vec<u8>> {
    let out = match buffer.get_mapped_range(..) {
        Ok(view) if view.len() >= bytes => Ok(view[..bytes].to_vec()),
        Ok(view) => Err(format!("{} bytes mapped, {bytes} expected", view.len())),
        Err(e) => Err(e.to_string()),
    };
    buffer.unmap();
    out.map_err(|e| Error::gpu(GpuErrorKind::Internal, format!("reading results back: {e}")))
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    (bytes.chunks_exact(4))
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

//! `shaders/math.wgsl` run on the local adapter (lavapipe in CI): the exactly rounded division
//! the q8 quantizer relies on, and the elementary functions both executors share.

use crate::model::activation::erf_series;
use wgpu::util::DeviceExt;

const KERNEL: &str = "
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec3<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < arrayLength(&a)) {
        out[i] = vec3<f32>(div_rn(a[i], b[i]), exp_poly(a[i]), erf(a[i]));
    }
}
";

/// `(div_rn(a, b), exp_poly(a), erf(a))` for each pair, or `None` without an adapter
/// (an error where `CI` or `WEBERT_REQUIRE_GPU` is set).
fn run(a: &[f32], b: &[f32]) -> Option<Vec<[f32; 3]>> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
    else {
        let required =
            std::env::var_os("CI").is_some() || std::env::var_os("WEBERT_REQUIRE_GPU").is_some();
        assert!(!required, "no GPU adapter");
        eprintln!("skipped: no GPU adapter");
        return None;
    };
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let code = format!("{}{KERNEL}", include_str!("../../shaders/math.wgsl"));
    let pipeline = super::pipelines::build(&device, "math", &code);
    let input = |v: &[f32]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::cast_slice(v),
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let (a_buf, b_buf) = (input(a), input(b));
    let size = (a.len() * 16) as u64;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[&a_buf, &b_buf, &out]
            .iter()
            .enumerate()
            .map(|(i, buf)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: buf.as_entire_binding(),
            })
            .collect::<Vec<_>>(),
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(a.len().div_ceil(64) as u32, 1, 1);
    }
    enc.copy_buffer_to_buffer(&out, 0, &read, 0, size);
    queue.submit([enc.finish()]);
    read.slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let bytes = read.slice(..).get_mapped_range().unwrap().to_vec();
    let floats: &[f32] = bytemuck::cast_slice(&bytes);
    Some(floats.chunks(4).map(|c| [c[0], c[1], c[2]]).collect())
}

/// Pairs whose quotients lie within an ulp or two of a code's rounding boundary (the cases
/// `code_quotient` sends to `div_rn`), and a spread of ordinary ones.
fn pairs() -> (Vec<f32>, Vec<f32>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..4096 {
        let scale = f32::from_bits(0x3a00_0000 + (next() % 0x0200_0000) as u32);
        let half = (next() % 256) as f32 - 127.5;
        let x = half * scale;
        for step in -2i32..=2 {
            a.push(f32::from_bits((x.to_bits() as i32 + step) as u32));
            b.push(scale);
        }
        a.push(f32::from_bits(next() as u32 & 0xbfff_ffff));
        b.push(f32::from_bits(0x3000_0000 + (next() % 0x1800_0000) as u32));
    }
    a.extend([0.0, -0.0, 1.0, -1.0, 3.0, 255.0]);
    b.extend([0.5, 0.5, 3.0, 3.0, 1.0, 255.0]);
    (a, b)
}

#[test]
fn div_rn_rounds_every_quotient_as_ieee_division() {
    let (a, b) = pairs();
    let Some(got) = run(&a, &b) else { return };
    let wrong: Vec<_> = (a.iter().zip(&b).zip(&got))
        .filter(|((a, b), _)| a.is_normal() && (**a / **b).is_normal())
        .filter(|((a, b), g)| (**a / **b).to_bits() != g[0].to_bits())
        .take(5)
        .map(|((a, b), g)| format!("{a:e} / {b:e}: {:e}, want {:e}", g[0], a / b))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn exp_and_erf_are_accurate() {
    let a: Vec<f32> = (0..2000).map(|i| -86.0 + i as f32 * 0.0869).collect();
    let b = vec![1f32; a.len()];
    let Some(got) = run(&a, &b) else { return };
    for (x, g) in a.iter().zip(&got) {
        let want = (*x as f64).exp();
        assert!(
            ((g[1] as f64 - want) / want).abs() < 4e-7,
            "exp({x}) = {}, want {want}",
            g[1]
        );
        if x.abs() <= 4.5 {
            let want = erf_series((*x as f64).clamp(-4.0, 4.0));
            assert!((g[2] as f64 - want).abs() < 1e-6, "erf({x}) = {}", g[2]);
        }
    }
}

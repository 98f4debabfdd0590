import { $ } from './dom.js';

// `?device=cpu|webgpu|auto` preselects the device switch.
const wanted = new URLSearchParams(location.search).get('device');
if (['auto', 'webgpu', 'cpu'].includes(wanted)) $('#device').value = wanted;
export const device = () => $('#device').value;
// `?quantized=f32` computes q4 models on dequantized f32 weights (default: integer kernels).
export const quantized = new URLSearchParams(location.search).get('quantized') === 'f32' ? 'f32' : 'int';

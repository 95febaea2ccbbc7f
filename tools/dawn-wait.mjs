// How Dawn's Node binding (the `webgpu` package) resolves its promises, measured: after requestDevice, the
// process's CPU use while nothing is pending (a permanent poll would show as about one core); then, for a
// few round trips (a 256-byte copy and its mapAsync, an empty submit and onSubmittedWorkDone, error scopes
// popped in turn or together, and a bare setImmediate for scale), the latency back to back and after
// 200 ms idle. The findings are in docs/gpu.md ("The wait in Node"). No qgemm code: Dawn alone.
// `node tools/dawn-wait.mjs` (on a machine without a GPU, with VK_ICD_FILENAMES pointing at SwiftShader).

import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const gpu = create(['enable-dawn-features=allow_unsafe_apis']);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];
// 1. idle CPU after requestDevice
let u0 = process.cpuUsage();
let t0 = performance.now();
await sleep(1000);
let u = process.cpuUsage(u0);
console.log('idle after requestDevice: cores', ((u.user + u.system) / 1000 / (performance.now() - t0)).toFixed(3));
const src = device.createBuffer({ size: 256, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
const dst = device.createBuffer({ size: 256, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
async function roundTrip() {
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(src, 0, dst, 0, 256);
  const t = performance.now();
  device.queue.submit([e.finish()]);
  await dst.mapAsync(GPUMapMode.READ);
  dst.getMappedRange();
  dst.unmap();
  return performance.now() - t;
}
async function done() {
  const t = performance.now();
  device.queue.submit([]);
  await device.queue.onSubmittedWorkDone();
  return performance.now() - t;
}
async function scopes() {
  const t = performance.now();
  device.pushErrorScope('validation');
  await device.popErrorScope();
  return performance.now() - t;
}
async function scopes2seq() {
  const t = performance.now();
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  await device.popErrorScope();
  await device.popErrorScope();
  return performance.now() - t;
}
async function scopes2par() {
  const t = performance.now();
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  await Promise.all([device.popErrorScope(), device.popErrorScope()]);
  return performance.now() - t;
}
async function immediate() {
  const t = performance.now();
  await new Promise((r) => setImmediate(r));
  return performance.now() - t;
}
for (const [name, f] of [
  ['setImmediate', immediate],
  ['copy+mapAsync', roundTrip],
  ['submit+onSubmittedWorkDone', done],
  ['push+pop 1 scope', scopes],
  ['2 scopes, pops awaited in turn', scopes2seq],
  ['2 scopes, pops awaited together', scopes2par],
]) {
  for (let i = 0; i < 20; i++) await f();
  const xs = [];
  for (let i = 0; i < 300; i++) xs.push(await f());
  const ys = [];
  for (let i = 0; i < 15; i++) {
    await sleep(200);
    ys.push(await f());
  }
  console.log(
    `${name}: back-to-back median ${med(xs).toFixed(4)} p95 ${p95(xs).toFixed(4)} ms; after 200 ms idle median ${med(ys).toFixed(4)} max ${Math.max(...ys).toFixed(4)} ms`,
  );
}
// 3. While a long GPU job runs and a mapAsync waits on it: the main thread's own CPU time (Node >= 23.9,
// process.threadCpuUsage), against the wait's wall time. A poll by setImmediate keeps that thread busy.
if (process.threadCpuUsage) {
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read_write> x: array<u32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
        var a = id.x; for (var i = 0u; i < 20000u; i++) { a = a * 1664525u + 1013904223u; } x[id.x] = a; }`,
  });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const storage = device.createBuffer({ size: 4096 * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 4096 * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: storage } }] });
  for (let round = 0; round < 3; round++) {
    const e = device.createCommandEncoder();
    const pass = e.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(64);
    pass.end();
    e.copyBufferToBuffer(storage, 0, read, 0, 4096 * 4);
    device.queue.submit([e.finish()]);
    const c0 = process.threadCpuUsage();
    const w0 = performance.now();
    await read.mapAsync(GPUMapMode.READ);
    const wall = performance.now() - w0;
    const c = process.threadCpuUsage(c0);
    read.unmap();
    // For scale, the same thread spinning on setImmediate alone for as long (what a poll would cost).
    const s0 = process.threadCpuUsage();
    const end = performance.now() + wall;
    while (performance.now() < end) await new Promise((r) => setImmediate(r));
    const spin = process.threadCpuUsage(s0);
    console.log(
      `long job: mapAsync waited ${wall.toFixed(1)} ms; main thread CPU meanwhile ${((c.user + c.system) / 1000).toFixed(1)} ms, against ${((spin.user + spin.system) / 1000).toFixed(1)} ms for a setImmediate spin as long`,
    );
  }
}
u0 = process.cpuUsage();
t0 = performance.now();
await sleep(1000);
u = process.cpuUsage(u0);
console.log('idle after work: cores', ((u.user + u.system) / 1000 / (performance.now() - t0)).toFixed(3));
process.exit(0);

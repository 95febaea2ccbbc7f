// Browser tier of Chrome's WebGPU flags (tools/chromium.ts WEBGPU_FLAGS, the one place they are written
// down; the benchmark's Chrome runtime launches with them and records them). A page of headless Chromium
// launched with them must see what the adapter offers:
//   - the features of the page's adapter, read from it (never assumed), can all be requested on a device;
//   - `chromium-experimental-subgroup-matrix` (the subgroup-matrix kernels) is there exactly when the same
//     adapter offers it to Dawn in Node (src/gpu/dawn.ts, with the same allow_unsafe_apis toggle): on
//     SwiftShader both read it absent;
//   - timestamp queries are unquantized: a compute pass's timestamp delta is not a multiple of the
//     quantum that Chrome (100 µs) or Dawn (65536 ns on SwiftShader) would round it to. This checks the
//     outcome, not which flag brings it: Chromium 156 on SwiftShader was also seen unquantized with
//     --enable-unsafe-webgpu alone.
// No page bundle is needed: a blank page on the loopback server. In CI a missing Chromium fails; locally
// it skips with a notice.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireDevice, type AcquiredDevice } from '../../src/gpu/acquire.ts';
import {
  chromiumArgs,
  chromiumPath,
  INSTALL_HINT,
  launchChromium,
  readAdapter,
  serveStatic,
  WEBGPU_FLAGS,
  wantSwiftShader,
  type Browser,
  type Page,
  type StaticServer,
} from '../../tools/chromium.ts';

const CI = process.env.CI === 'true';
const SUBGROUP_MATRIX = 'chromium-experimental-subgroup-matrix';

const chromium = chromiumPath();
if (!chromium) {
  if (CI) throw new Error(`the browser tests must run in CI, but Chromium is missing: \`${INSTALL_HINT}\``);
  console.warn(`\n[browser test] SKIPPING the Chrome flags test: Chromium not found. Install: \`${INSTALL_HINT}\`\n`);
}

describe.skipIf(!chromium)("Chrome's WebGPU flags", () => {
  let site: string;
  let server: StaticServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    site = mkdtempSync(join(tmpdir(), 'qgemm-flags-test-'));
    writeFileSync(
      join(site, 'index.html'),
      '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head><body></body></html>',
    );
    server = await serveStatic(site);
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(server.url, { waitUntil: 'load' });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (site) rmSync(site, { recursive: true, force: true });
  });

  it('launches with the WebGPU flags, in one place', () => {
    const swiftshader = wantSwiftShader();
    const args = chromiumArgs({ swiftshader, userDataDir: '/tmp/x' });
    for (const flag of WEBGPU_FLAGS.common) expect(args).toContain(flag);
    for (const flag of swiftshader ? WEBGPU_FLAGS.swiftshader : WEBGPU_FLAGS.hardware) expect(args).toContain(flag);
    expect(args).toContain('--enable-dawn-features=allow_unsafe_apis');
    expect(browser.process()?.spawnargs).toEqual(expect.arrayContaining([...WEBGPU_FLAGS.common]));
  });

  it("sees the adapter's features: every one can be requested, subgroup matrices as Dawn in Node reads them", async () => {
    const adapter = await readAdapter(page);
    expect(adapter, 'navigator.gpu gave no adapter').not.toBeNull();
    // Every feature the page's adapter lists is usable: a device asked for all of them has them.
    const deviceFeatures = await page.evaluate(async () => {
      const a = await (navigator as Navigator & { gpu: GPU }).gpu.requestAdapter();
      const device = await a!.requestDevice({ requiredFeatures: [...a!.features] as GPUFeatureName[] });
      const out = [...device.features].map(String).sort();
      device.destroy();
      return out;
    });
    expect(deviceFeatures).toEqual(expect.arrayContaining(adapter!.features));
    expect(adapter!.features).toContain('timestamp-query');
    // The same adapter through Dawn in Node (the same toggles): subgroup matrices offered in both or in neither.
    let node: AcquiredDevice | null = null;
    try {
      node = await acquireDevice({ allowSoftware: wantSwiftShader() });
      const inNode = [...node.adapter!.features].map(String);
      const inPage = adapter!.features.includes(SUBGROUP_MATRIX);
      console.log(
        `[browser test] page adapter ${adapter!.vendor} ${adapter!.architecture}: ${adapter!.features.length} features, ` +
          `${SUBGROUP_MATRIX} ${inPage ? 'offered' : 'absent'} (Dawn in Node, ${node.summary.architecture}: ${inNode.includes(SUBGROUP_MATRIX) ? 'offered' : 'absent'})`,
      );
      if (node.summary.architecture === adapter!.architecture) expect(inPage).toBe(inNode.includes(SUBGROUP_MATRIX));
      // On SwiftShader, read from both adapters: no subgroup matrices.
      if (adapter!.architecture === 'swiftshader') expect(inPage).toBe(false);
    } finally {
      node?.device.destroy();
    }
  });

  it('reads unquantized timestamps', async () => {
    const deltas = await page.evaluate(async () => {
      const a = await (navigator as Navigator & { gpu: GPU }).gpu.requestAdapter();
      const device = await a!.requestDevice({ requiredFeatures: ['timestamp-query'] });
      const module = device.createShaderModule({
        code: '@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3u) { var v = i.x; for (var j = 0u; j < 2000u; j++) { v = v * 1664525u + 1013904223u; } x[i.x] = v; }',
      });
      const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
      const buffer = device.createBuffer({ size: 64 * 64 * 4, usage: GPUBufferUsage.STORAGE });
      const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] });
      const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
      const resolve = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      const read = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const out: number[] = [];
      for (let run = 0; run < 4; run++) {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, bind);
        pass.dispatchWorkgroups(64);
        pass.end();
        encoder.resolveQuerySet(querySet, 0, 2, resolve, 0);
        encoder.copyBufferToBuffer(resolve, 0, read, 0, 16);
        device.queue.submit([encoder.finish()]);
        await read.mapAsync(GPUMapMode.READ);
        const t = new BigUint64Array(read.getMappedRange().slice(0));
        read.unmap();
        out.push(Number(t[1] - t[0]));
      }
      device.destroy();
      return out;
    });
    console.log(`[browser test] compute-pass timestamp deltas (ns): ${deltas.join(', ')}`);
    expect(deltas.every((d) => d > 0)).toBe(true);
    // Quantized timestamps would all be multiples of 65536 ns (Dawn on SwiftShader) or 100 µs (Chrome).
    expect(deltas.some((d) => d % 65536 !== 0 && d % 100_000 !== 0)).toBe(true);
  });
});

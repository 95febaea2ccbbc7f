// Starts the implementations a run asks for (impls x backends x runtimes x modes) on the chosen adapter,
// and records why each one that cannot start is missing: every cell of it goes to `skipped` with the
// reason, and a peer's cells also become rows with medianMs null and that reason in `error`, so that a
// peer that cannot run here (onnxruntime's WebGPU EP without an adapter, say) says why instead of
// vanishing from the results.

import { SWIFTSHADER_ICD } from '../src/gpu/dawn.ts';
import type { AdapterChoice } from './environment.ts';
import { startChrome, type ChromeSession } from './impls/chrome.ts';
import { chromeProfile } from '../tools/chromium.ts';
import { naiveJs } from './impls/naive.ts';
import { onnxruntimeNode, onnxruntimeNodeNBits4 } from './impls/onnxruntime.ts';
import { onnxruntimeWebgpu } from './impls/onnxruntime-webgpu.ts';
import { qgemmCpuNode, qgemmWebgpuNode } from './impls/qgemm-node.ts';
import { tfjsWebgpuNode } from './impls/tfjs-node.ts';
import {
  convolutionRows,
  ORT_WEBGPU_IMPLS,
  rowKey,
  type BackendName,
  type ImplName,
  type Mode,
  type RhsBits,
  type RowId,
  type Runner,
  type Runtime,
} from './impls/types.ts';
import type { Shape } from './shapes.ts';

export interface StartOptions {
  shapes: Shape[];
  impls: readonly ImplName[];
  runtimes: readonly Runtime[];
  backends: readonly BackendName[];
  modes: readonly Mode[];
  /** qgemm WebGPU `resident` rows run once per bit width here (default [8]); the other modes use 8. */
  rhsBits?: readonly RhsBits[];
  seed: number;
  dawnPath?: string;
}

export interface Unavailable extends RowId {
  reason: string;
  /** It would have run the convolution layers too (convolutionRows), so their cells are skipped with the reason. */
  convolution?: boolean;
}

export interface Started {
  runners: Runner[];
  chrome: ChromeSession | null;
  unavailable: Unavailable[];
  notes: string[];
}

export async function startRunners(
  opts: StartOptions,
  choice: AdapterChoice,
  slug: string,
  computes: string,
  progress: (line: string) => void,
): Promise<Started> {
  const runners: Runner[] = [];
  const unavailable: Unavailable[] = [];
  const notes: string[] = [];
  const wants = (impl: ImplName, backend: BackendName, runtime: Runtime) =>
    opts.impls.includes(impl) && opts.backends.includes(backend) && opts.runtimes.includes(runtime);
  const gpuModes = opts.modes;
  const missing = (id: RowId, reason: string) => {
    notes.push(`${rowKey(id)}: ${reason}`);
    progress(`skipping ${rowKey(id)}: ${reason}`);
    unavailable.push({ ...id, reason, ...(convolutionRows(id) ? { convolution: true } : {}) });
  };
  const start = async (ids: RowId[], make: () => Promise<Runner | Runner[]> | Runner | Runner[]) => {
    try {
      const made = await make();
      runners.push(...(Array.isArray(made) ? made : [made]));
    } catch (e) {
      for (const id of ids) missing(id, `could not start: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const hasGpu = choice.ctx !== null;
  const noGpu = choice.kind === 'none' ? 'no WebGPU adapter' : null;
  const node = (impl: ImplName, mode: Mode, backend: BackendName = 'webgpu'): RowId => ({ impl, backend, runtime: 'node', mode });

  if (wants('qgemm', 'webgpu', 'node')) {
    for (const mode of gpuModes) {
      for (const rhsBits of mode === 'resident' ? (opts.rhsBits ?? [8]) : [8 as const]) {
        const id = { ...node('qgemm', mode), rhsBits };
        if (hasGpu) await start([id], () => qgemmWebgpuNode(choice.ctx!, slug, computes, mode, rhsBits));
        else missing(id, noGpu ?? 'no WebGPU adapter');
      }
    }
  }
  if (wants('tfjs-webgpu-f32', 'webgpu', 'node') && gpuModes.length) {
    const ids = gpuModes.map((mode) => node('tfjs-webgpu-f32', mode));
    if (hasGpu)
      await start(ids, () =>
        tfjsWebgpuNode({ allowSoftware: choice.kind === 'swiftshader', dawnPath: opts.dawnPath, adapter: slug, modes: gpuModes }),
      );
    else for (const id of ids) missing(id, 'no WebGPU adapter');
  }
  for (const impl of ORT_WEBGPU_IMPLS) {
    if (!wants(impl, 'webgpu', 'node')) continue;
    const id = node(impl, 'resident');
    if (!gpuModes.includes('resident')) continue; // weights as initializers: a resident call only
    // onnxruntime's Dawn reads VK_ICD_FILENAMES when it makes its instance: on SwiftShader, point it there too.
    if (choice.kind === 'swiftshader' && !process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES)
      process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    if (choice.kind === 'none') missing(id, 'no WebGPU adapter for onnxruntime either (no GPU and no SwiftShader)');
    else await start([id], () => onnxruntimeWebgpu(impl, slug));
  }
  // CPU rows: always `call`; `resident` (weights packed once, outside the timing) too where it is asked for.
  const cpuModes = (['call', 'resident'] as const).filter((m) => m === 'call' || opts.modes.includes(m));
  for (const mode of cpuModes) {
    for (const rhsBits of mode === 'resident' ? (opts.rhsBits ?? [8]) : [8 as const]) {
      if (wants('qgemm', 'cpu', 'node'))
        await start([{ ...node('qgemm', mode, 'cpu'), rhsBits }], () => qgemmCpuNode(computes, mode, rhsBits));
    }
    if (wants('onnxruntime-node-matmulinteger', 'cpu', 'node'))
      await start([node('onnxruntime-node-matmulinteger', mode, 'cpu')], () => onnxruntimeNode(mode));
  }
  // onnxruntime's 4-bit weights on its CPU EP: weights are initializers, so resident only, with --rhs-bits 4.
  if (wants('onnxruntime-node-matmulnbits4', 'cpu', 'node') && cpuModes.includes('resident') && opts.rhsBits?.includes(4))
    await start([node('onnxruntime-node-matmulnbits4', 'resident', 'cpu')], () => onnxruntimeNodeNBits4());
  if (wants('naive-js', 'cpu', 'node')) await start([node('naive-js', 'call', 'cpu')], () => naiveJs());

  // Chrome: the same modes as Node (onnxruntime's WebGPU EP resident only; CPU rows call and resident).
  let chrome: ChromeSession | null = null;
  const chromeRows: RowId[] = [];
  const chromeId = (impl: ImplName, backend: BackendName, mode: Mode): RowId => ({ impl, backend, runtime: 'chrome', mode });
  for (const mode of gpuModes) {
    if (wants('qgemm', 'webgpu', 'chrome'))
      for (const rhsBits of mode === 'resident' ? (opts.rhsBits ?? [8]) : [8 as const])
        chromeRows.push({ ...chromeId('qgemm', 'webgpu', mode), rhsBits });
    if (wants('tfjs-webgpu-f32', 'webgpu', 'chrome')) chromeRows.push(chromeId('tfjs-webgpu-f32', 'webgpu', mode));
  }
  if (gpuModes.includes('resident'))
    for (const impl of ORT_WEBGPU_IMPLS) if (wants(impl, 'webgpu', 'chrome')) chromeRows.push(chromeId(impl, 'webgpu', 'resident'));
  for (const mode of cpuModes) {
    if (wants('qgemm', 'cpu', 'chrome')) chromeRows.push(chromeId('qgemm', 'cpu', mode));
    if (wants('onnxruntime-web-matmulinteger', 'cpu', 'chrome')) chromeRows.push(chromeId('onnxruntime-web-matmulinteger', 'cpu', mode));
  }
  if (chromeRows.length) {
    // QGEMM_CHROMIUM_ADAPTER names Chrome's profile whatever Node's adapter is (tools/chromium.ts chromeProfile):
    // a hardware attempt the probe found runs where Dawn in Node found none.
    if (choice.kind === 'none' && !process.env.QGEMM_CHROMIUM_ADAPTER) {
      for (const id of chromeRows) missing(id, 'no WebGPU adapter (hardware or SwiftShader) for Chromium');
    } else {
      progress(
        `starting headless Chromium (${chromeProfile(choice.kind === 'swiftshader') === 'swiftshader' ? 'SwiftShader' : 'hardware adapter'})`,
      );
      try {
        chrome = await startChrome({
          swiftshader: choice.kind === 'swiftshader',
          seed: opts.seed,
          rows: chromeRows,
          computes,
          log: progress,
        });
        runners.push(...chrome.runners);
        for (const note of chrome.notes) notes.push(`chrome: ${note}`);
        for (const id of chromeRows)
          if (!chrome.runners.some((r) => rowKey(r) === rowKey(id))) missing(id, chrome.notes.join('; ') || 'did not start');
      } catch (e) {
        for (const id of chromeRows) missing(id, `Chromium: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  }
  return { runners, chrome, unavailable, notes };
}

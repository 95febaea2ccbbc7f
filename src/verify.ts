// `qgemm verify` and verifyDevice(): an exactness check of every GEMM kernel on the user's own adapter
// (or CPU), for drivers this project never saw. Each kernel the adapter supports is forced in turn over
// one fixed suite, pack -> gemm -> output end to end, and compared bit for bit with the normative
// reference (src/reference/gemm.ts): the self-test problems (src/scheduler/self-test.ts) plus a small
// deterministic sweep (every operand type, storage order, zero-point form and stage kind; odd shapes;
// shapes with several 64-tiles and at least two 64-byte k steps; less-than-8-bit operands): 17 problems,
// the largest 64 x 64 x 40000; on WebGPU also 3 convolution layers whose lhs is the NHWC input (a
// PatchOperand: the dot4-tiled kernels gather it, the others get it packed in their pass), checked
// against the reference over the layer's im2col rows. On SwiftShader most of the time is pipeline compilation (seconds per
// kernel; more on a loaded machine), and the emulated subgroup-matrix kernel's 40000-deep problem.
//
// On WebGPU the list also holds the emulated subgroup-matrix kernel (src/kernels/sgmat/emulation.ts,
// 'sgmat-64x64-emulated'), which any adapter runs: it checks the real kernel's indexing and staging with
// plain-WGSL builtins, and is never chosen by 'auto'; and its 4-bit rhs variant 'sgmat-64x64-u4-emulated'
// (nibble staging; the suite's less-than-8-bit problems). A kernel that needs a self-test and fails it is
// disabled by the context and reported here with all its problems as mismatches.

import { InputError, QgemmError } from './errors.ts';
import { acquireDevice } from './gpu/acquire.ts';
import { describeAdapter } from './gpu/adapter.ts';
import { createGpuContextWith, GpuContext } from './scheduler/context.ts';
import { gemm } from './api.ts';
import { readyCpuCaps } from './kernels/cpu-caps.ts';
import { cpuRunStats, prepackCpu } from './kernels/cpu-wasm/kernel.ts';
import { CPU_KERNELS, GPU_KERNELS } from './kernels/registry.ts';
import { bestConfig, configLabel, type SgmatConfig } from './kernels/sgmat/config.ts';
import { EMULATED_CONFIGS, sgmatEmulatedKernel } from './kernels/sgmat/emulation.ts';
import type { GpuGemmKernel } from './kernels/types.ts';
import { differences, referenceGemm } from './reference/gemm.ts';
import { normalizeProblem } from './problem/problem.ts';
import type { GemmProblem, GemmResult } from './types.ts';
import { brief } from './problem/echo.ts';
import { checkKnownKeys } from './problem/check.ts';
import { type ConvVerifyProblem, verifyConvProblems, verifyPrepackedProblems, verifyProblems } from './verify-problems.ts';

export { verifyConvProblems, verifyPrepackedProblems, verifyProblems };

/** `qgemm verify` found a kernel whose results differ from the reference (exit code 1). */
export class VerifyMismatchError extends QgemmError {
  override name = 'VerifyMismatchError';
}

/** One kernel's line of the report. */
export interface VerifyRow {
  kernel: string;
  /** What the kernel ran with on this adapter ('' where nothing to say): a subgroup-matrix fragment configuration. */
  configuration: string;
  /** Problems of the suite this kernel can run (and ran). */
  problems: number;
  /** Problems whose result differs from the reference in any element (or that threw). */
  mismatches: number;
  /** Wall time of the kernel's problems, pipeline compilation included, in milliseconds. */
  ms: number;
  /** The first failure, in one line ('' when none); for a kernel that did not run, why. */
  detail: string;
  /** False for a kernel asked for that cannot run on this backend, adapter or CPU (`detail` says why). */
  ran: boolean;
}

export interface VerifyReport {
  backend: 'webgpu' | 'cpu';
  /** The adapter (webgpu) or the CPU features (cpu). */
  device: string;
  rows: VerifyRow[];
  /** True when there is a row, every row ran and none has a mismatch: never for a check of nothing. */
  ok: boolean;
}

export interface VerifyOptions {
  /** Default 'webgpu' (software adapters included). */
  backend?: 'webgpu' | 'cpu' | undefined;
  /** Run on this device instead of acquiring one. */
  device?: GPUDevice | undefined;
  /**
   * Only these kernel ids, at least one (default: every kernel the adapter or CPU supports). One that
   * cannot run here is a row that did not run, with the reason, and the report is not ok.
   */
  kernels?: readonly string[] | undefined;
  /** Called once the device is known, before the first kernel (progress): the report's backend and device. */
  onStart?: ((start: { backend: 'webgpu' | 'cpu'; device: string }) => void) | undefined;
  /** Called after each kernel (progress). */
  onRow?: ((row: VerifyRow) => void) | undefined;
  /** Test hook: extra GPU kernels to verify, beside the registry's. */
  extraKernels?: readonly GpuGemmKernel[] | undefined;
}

/**
 * The prepacked suite on the CPU (`prepackCpu`, then `gemm` twice: its plan made, then run again), as
 * kernel `kernel`'s row (the one prepackCpu packs 8-bit weights for), naming the drivers that ran. It
 * takes the fixed suite's own problem objects, whose references the other rows computed already.
 */
async function verifyPrepacked(kernel: string, suite: readonly GemmProblem[]): Promise<VerifyRow> {
  const drivers = new Set<string>();
  const row = await verifyProblemsWith(
    verifyPrepackedProblems(suite),
    () => true,
    async (p) => {
      const packed = await prepackCpu(p.rhs, p.bitDepth);
      try {
        const first = await gemm({ ...p, rhs: packed }, { backend: 'cpu' });
        drivers.add(cpuRunStats().lastDriver);
        const again = await gemm({ ...p, rhs: packed }, { backend: 'cpu' });
        const differs = differences(again, first);
        if (differs) throw new Error(`the plan run again differs from its first call: ${differs}`);
        return { result: first };
      } finally {
        packed.destroy();
      }
    },
    null,
  );
  return { kernel, configuration: `prepacked rhs: ${[...drivers].sort().join(', ')}`, ...row, ran: true };
}

/** The reference result of each problem, computed once (several kernels check the same problems). */
const references = new WeakMap<GemmProblem, GemmResult>();
function reference(p: GemmProblem): GemmResult {
  let r = references.get(p);
  if (!r) references.set(p, (r = referenceGemm(p)));
  return r;
}

const shapeOf = (p: GemmProblem) => `${p.lhs.rows}x${p.rhs.cols}x${p.lhs.cols}`;

/**
 * Runs `run` over every problem `can` accepts and counts mismatches. `stopAtFirst` ends at the first
 * mismatch (the mutation test's use). Exported for the tests, which run it on other kernels.
 */
async function verifyProblemsWith(
  problems: readonly GemmProblem[],
  can: (p: GemmProblem) => boolean,
  run: (p: GemmProblem) => Promise<{ result: GemmResult; ranWith?: string }>,
  expectKernel: string | null,
  stopAtFirst = false,
): Promise<Omit<VerifyRow, 'kernel' | 'configuration' | 'ran'>> {
  const t0 = performance.now();
  let count = 0;
  let mismatches = 0;
  let detail = '';
  for (const [i, p] of problems.entries()) {
    if (!can(p)) continue;
    count++;
    let why: string;
    try {
      const { result, ranWith } = await run(p);
      why =
        expectKernel && ranWith !== expectKernel
          ? `ran ${ranWith} instead (${expectKernel} disabled: failed its self-test)`
          : differences(result, reference(p));
    } catch (e) {
      why = `threw ${(e as Error).message.split('\n')[0]}`;
    }
    if (why) {
      mismatches++;
      detail ||= `problem ${i} (${shapeOf(p)}): ${why}`;
      if (stopAtFirst) break;
    }
  }
  return { problems: count, mismatches, ms: performance.now() - t0, detail };
}

/** The shape the registry's supports() sees for p. */
function gemmShape(p: GemmProblem) {
  return {
    M: p.lhs.rows,
    N: p.rhs.cols,
    K: p.lhs.cols,
    dstType: 'int32' as const,
    dstOrder: p.dstOrder ?? 'row-major',
    bitDepth: p.bitDepth,
  };
}

/** One GPU kernel over `problems` on `device`, forced (with `kernels` as the registry's list). */
export async function verifyGpuKernel(
  device: GPUDevice,
  kernel: GpuGemmKernel,
  problems: readonly GemmProblem[],
  opts: { kernels?: readonly GpuGemmKernel[]; configuration?: string; stopAtFirst?: boolean; conv?: readonly ConvVerifyProblem[] } = {},
): Promise<VerifyRow> {
  const warnings: string[] = [];
  const ctx = await createGpuContextWith(opts.kernels ?? [kernel, ...GPU_KERNELS], {
    device,
    kernel: kernel.id,
    warn: (m) => warnings.push(m),
  });
  try {
    const row = await verifyProblemsWith(
      problems,
      (p) => kernel.supports(ctx.caps, gemmShape(p)),
      async (p) => ({ result: await ctx.gemm(p), ranWith: ctx.lastRun.kernel ?? '' }),
      kernel.id,
      opts.stopAtFirst,
    );
    // Convolution layers: the lhs given as the NHWC input (gathered by the kernel or packed in its pass),
    // checked against the reference over the im2col rows.
    const conv = opts.conv ?? [];
    if (conv.length && !(opts.stopAtFirst && row.mismatches)) {
      const patches = new Map(conv.map((c) => [c.gemm, c.patches]));
      const more = await verifyProblemsWith(
        conv.map((c) => c.gemm),
        (p) => kernel.supports(ctx.caps, gemmShape(p)),
        async (p) => ({ result: await ctx.gemm({ ...p, lhs: patches.get(p)! }), ranWith: ctx.lastRun.kernel ?? '' }),
        kernel.id,
        opts.stopAtFirst,
      );
      row.detail ||= more.detail && `convolution ${more.detail}`;
      row.problems += more.problems;
      row.mismatches += more.mismatches;
      row.ms += more.ms;
    }
    if (warnings.length && !row.detail) row.detail = warnings[0];
    return { kernel: kernel.id, configuration: opts.configuration ?? '', ...row, ran: true };
  } finally {
    ctx.destroy();
  }
}

/** The keys of VerifyOptions, every one of them: the compiler checks the list. */
const VERIFY_OPTIONS: Record<keyof VerifyOptions, true> = {
  backend: true,
  device: true,
  kernels: true,
  onStart: true,
  onRow: true,
  extraKernels: true,
};

/** The options of verifyDevice checked as the caller wrote them: the backend and the kernel ids. */
function checkOptions(opts: VerifyOptions, known: ReadonlySet<string>): 'webgpu' | 'cpu' {
  const backend: unknown = opts.backend ?? 'webgpu';
  if (backend !== 'webgpu' && backend !== 'cpu') throw new InputError('backend', `expected "webgpu" or "cpu", got ${brief(backend)}`);
  if (opts.kernels !== undefined) {
    if (!Array.isArray(opts.kernels)) throw new InputError('kernels', `expected an array of kernel ids, got ${brief(opts.kernels)}`);
    if (opts.kernels.length === 0) throw new InputError('kernels', 'expected at least one kernel id (leave it out to check them all)');
    for (const [i, id] of (opts.kernels as unknown[]).entries()) {
      if (!known.has(id as string)) {
        throw new InputError(`kernels[${i}]`, `unknown kernel ${brief(id)}; known kernels: ${[...known].join(', ')}`);
      }
    }
  }
  return backend;
}

/** A kernel asked for that cannot run here, as a row that did not run. */
const notRun = (kernel: string, why: string): VerifyRow => ({
  kernel,
  configuration: '',
  problems: 0,
  mismatches: 0,
  ms: 0,
  detail: `not run: ${why}`,
  ran: false,
});

/** The report: every kernel asked for that has no row of its own gets one that did not run, saying why. */
function finish(
  backend: 'webgpu' | 'cpu',
  device: string,
  rows: VerifyRow[],
  opts: VerifyOptions,
  why: (id: string) => string,
): VerifyReport {
  for (const id of opts.kernels ?? []) {
    if (rows.some((r) => r.kernel === id)) continue;
    const row = notRun(id, why(id));
    rows.push(row);
    opts.onRow?.(row);
  }
  return { backend, device, rows, ok: rows.length > 0 && rows.every((r) => r.ran && r.mismatches === 0) };
}

/** Checks every kernel on this adapter (or CPU) over the fixed suite; the same data `qgemm verify` prints. */
export async function verifyDevice(opts: VerifyOptions = {}): Promise<VerifyReport> {
  if (!opts || typeof opts !== 'object' || Array.isArray(opts)) throw new InputError('options', `expected an object, got ${brief(opts)}`);
  checkKnownKeys('', opts, Object.keys(VERIFY_OPTIONS)); // a misspelt `kernel` would check every kernel
  const gpuIds = new Set(
    [...GPU_KERNELS, ...(opts.extraKernels ?? [])].map((k) => k.id).concat('sgmat-64x64-emulated', 'sgmat-64x64-u4-emulated'),
  );
  const cpuIds = new Set(CPU_KERNELS.map((k) => k.id));
  const backend = checkOptions(opts, new Set([...gpuIds, ...cpuIds]));
  const problems = verifyProblems();
  const rows: VerifyRow[] = [];
  const wanted = (id: string) => !opts.kernels || opts.kernels.includes(id);
  const push = (row: VerifyRow) => {
    rows.push(row);
    opts.onRow?.(row);
  };
  if (backend === 'cpu') {
    const caps = await readyCpuCaps();
    const features = [caps.wasmSimd && 'wasm-simd', caps.relaxedSimd && 'relaxed-simd', caps.sharedMemory && `${caps.threads} threads`];
    const device = `CPU (${features.filter(Boolean).join(', ') || 'JavaScript only'})`;
    opts.onStart?.({ backend, device });
    for (const k of CPU_KERNELS) {
      if (!wanted(k.id) || !problems.some((p) => k.supports(caps, normalizeProblem(p)))) continue;
      const row = await verifyProblemsWith(
        problems,
        (p) => k.supports(caps, normalizeProblem(p)),
        async (p) => ({ result: await k.run(normalizeProblem(p), {}) }),
        null,
      );
      push({ kernel: k.id, configuration: '', ...row, ran: true });
    }
    // The few-row path of a prepacked rhs (its own kernels: byte lanes, 4-bit, dot7), on the kernel
    // prepackCpu packs for.
    const packedFor = caps.relaxedSimd ? 'cpu-wasm-relaxed' : 'cpu-wasm-simd';
    if (caps.wasmSimd && wanted(packedFor)) push(await verifyPrepacked(packedFor, problems));
    return finish(backend, device, rows, opts, (id) =>
      gpuIds.has(id)
        ? 'a WebGPU kernel (verify it with backend "webgpu")'
        : id === 'cpu-wasm-relaxed'
          ? 'needs WebAssembly relaxed SIMD, which this runtime does not offer'
          : `this CPU does not run it (${device})`,
    );
  }
  const acquired = await acquireDevice({ allowSoftware: true, device: opts.device });
  const device = describeAdapter(acquired.summary);
  opts.onStart?.({ backend, device });
  const probe = await GpuContext.create({ device: acquired.device });
  const caps = probe.caps;
  probe.destroy();
  // The emulated subgroup-matrix kernel, at the configuration the real one uses here (NVIDIA's 16x16x32 where there is none).
  const real = bestConfig(caps);
  const emulatedConfig: SgmatConfig = real ?? EMULATED_CONFIGS[0];
  const emulated = sgmatEmulatedKernel(emulatedConfig);
  const emulatedU4 = sgmatEmulatedKernel(emulatedConfig, { rhsBits: 4 });
  const kernels = [...GPU_KERNELS, emulated, emulatedU4, ...(opts.extraKernels ?? [])];
  const conv = verifyConvProblems();
  for (const k of kernels) {
    if (!wanted(k.id)) continue;
    if (!problems.some((p) => k.supports(caps, gemmShape(p)))) continue;
    const configuration =
      k === emulated || k === emulatedU4
        ? `${configLabel(emulatedConfig)}, emulated builtins`
        : k.id.startsWith('sgmat-64x64') && real
          ? configLabel(real)
          : '';
    push(await verifyGpuKernel(acquired.device, k, problems, { kernels: [k, ...GPU_KERNELS], configuration, conv }));
  }
  if (!opts.device) acquired.device.destroy();
  return finish(backend, device, rows, opts, (id) =>
    cpuIds.has(id) ? 'a CPU kernel (verify it with backend "cpu")' : `this adapter lacks what it needs (${device})`,
  );
}

/** The report as the CLI's table: kernel | configuration | problems | mismatches | time. */
export function formatVerifyReport(r: VerifyReport): string {
  const head = ['kernel', 'configuration', 'problems', 'mismatches', 'time'];
  const body = r.rows.map((x) => [
    x.kernel,
    x.configuration || (x.ran ? '-' : 'not run'),
    String(x.problems),
    x.ran ? String(x.mismatches) : '-',
    x.ran ? `${(x.ms / 1000).toFixed(2)} s` : '-',
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(width[i]))
      .join(' | ')
      .trimEnd();
  const out = [`${r.backend} on ${r.device}`, line(head), width.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)];
  for (const x of r.rows) if (x.detail) out.push(`${x.kernel}: ${x.detail}`);
  out.push(verifyVerdict(r));
  return out.join('\n');
}

/** The report's last line: every kernel exact, or how many differ and how many did not run. */
export function verifyVerdict(r: VerifyReport): string {
  // A kernel checked in two ways (the CPU kernel's prepacked rhs) is two rows: counted as rows, named with their configuration.
  const kernels = new Set(r.rows.map((x) => x.kernel)).size;
  const what = kernels === r.rows.length ? 'kernels' : 'rows';
  const name = (x: VerifyRow) => (x.configuration ? `${x.kernel} (${x.configuration})` : x.kernel);
  if (r.ok) return what === 'kernels' ? `all ${kernels} kernels exact` : `all ${r.rows.length} rows of ${kernels} kernels exact`;
  const differ = r.rows.filter((x) => x.mismatches > 0);
  const notRun = r.rows.filter((x) => !x.ran);
  const parts = [
    differ.length && `${differ.length} of ${r.rows.length} ${what} differ from the reference: ${differ.map(name).join(', ')}`,
    notRun.length && `${notRun.length} of ${r.rows.length} ${what} asked for did not run here: ${notRun.map(name).join(', ')}`,
  ].filter(Boolean);
  return `${differ.length ? 'MISMATCH' : 'NOT VERIFIED'}: ${parts.join('; ') || 'no kernel was checked'}`;
}

/** One kernel's progress line, as `qgemm verify` prints it when the kernel is done. */
export function formatVerifyRow(x: VerifyRow): string {
  if (!x.ran) return `${x.kernel}: ${x.detail}`;
  const config = x.configuration ? ` (${x.configuration})` : '';
  return `${x.kernel}${config}: ${x.problems} problems, ${x.mismatches} mismatches, ${(x.ms / 1000).toFixed(2)} s`;
}

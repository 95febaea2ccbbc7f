// `qgemm verify` and verifyDevice(): an exactness check of every GEMM kernel on the user's own adapter
// (or CPU), for drivers this project never saw. Each kernel the adapter supports is forced in turn over
// one fixed suite, pack -> gemm -> output end to end, and compared bit for bit with the normative
// reference (src/reference/gemm.ts): the self-test problems (src/scheduler/self-test.ts) plus a small
// deterministic sweep (every operand type, storage order, zero-point form and stage kind; odd shapes;
// shapes with several 64-tiles and at least two 64-byte k steps; less-than-8-bit operands): 16 problems,
// the largest 64 x 64 x 40000. On SwiftShader most of the time is pipeline compilation (seconds per
// kernel; more on a loaded machine), and the emulated subgroup-matrix kernel's 40000-deep problem.
//
// On WebGPU the list also holds the emulated subgroup-matrix kernel (src/kernels/sgmat/emulation.ts,
// 'sgmat-64x64-emulated'), which any adapter runs: it checks the real kernel's indexing and staging with
// plain-WGSL builtins, and is never chosen by 'auto'. A kernel that needs a self-test and fails it is
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
import { selfTestProblems } from './scheduler/self-test.ts';
import type { GpuGemmKernel } from './kernels/types.ts';
import { referenceGemm } from './reference/gemm.ts';
import { normalizeProblem } from './spec/problem.ts';
import type { GemmProblem, GemmResult, Operand, OutputStage } from './types.ts';
import { brief } from './spec/echo.ts';

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
  /** The first failure, in one line ('' when none). */
  detail: string;
}

export interface VerifyReport {
  backend: 'webgpu' | 'cpu';
  /** The adapter (webgpu) or the CPU features (cpu). */
  device: string;
  rows: VerifyRow[];
  /** True when every row has 0 mismatches. */
  ok: boolean;
}

export interface VerifyOptions {
  /** Default 'webgpu' (software adapters included). */
  backend?: 'webgpu' | 'cpu';
  /** Run on this device instead of acquiring one. */
  device?: GPUDevice;
  /** Only these kernel ids (default: every kernel the adapter or CPU supports). */
  kernels?: string[];
  /** Called after each kernel (progress). */
  onRow?: (row: VerifyRow) => void;
  /** Test hook: extra GPU kernels to verify, beside the registry's. */
  extraKernels?: readonly GpuGemmKernel[];
}

/** Deterministic operand bytes (an LCG; edge values at both ends). */
function operand(rows: number, cols: number, signed: boolean, order: Operand['order'], seed: number): Operand {
  const n = rows * cols;
  const data = signed ? new Int8Array(n) : new Uint8Array(n);
  let s = (seed * 2654435761) >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s >>> 24;
  }
  for (let i = 0; i < Math.min(n, 4); i++) data[i] = signed ? (i % 2 ? 127 : -128) : i % 2 ? 255 : 0;
  return { data, rows, cols, order };
}

const ramp = (n: number, f: (i: number) => number) => Int32Array.from({ length: n }, (_, i) => f(i));

/** Output pipelines cycled through by the sweep: none (raw int32 results) every other problem, then each stage kind. */
function pipeline(i: number, M: number, N: number): OutputStage[] {
  const kinds: OutputStage[][] = [
    [],
    [{ type: 'bias', axis: 'col', values: ramp(N, (j) => j * 977 - 30000) }],
    [],
    [
      { type: 'quantizeDownInt32ToUint8Scale', offset: ramp(M, (j) => j * 13 - 500), multiplier: 3, shift: 7, axis: 'row' },
      { type: 'truncatingCast', to: 'uint8' },
    ],
    [],
    [
      { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1518500250, shift: 11, offsetAfterShift: 7 },
      { type: 'clamp', min: -20000, max: 20000 },
      { type: 'saturatingCast', to: 'int16' },
    ],
    [],
    [
      {
        type: 'scaleInt32ByFixedPointAndExponent',
        multiplier: ramp(N, (j) => 1073741824 + j * 7919),
        exponent: ramp(N, (j) => -6 - (j % 4)),
        offsetAfterShift: -3,
        rounding: 'single',
        axis: 'col',
      },
      { type: 'saturatingCast', to: 'int8' },
    ],
    [],
    [
      { type: 'tanh', realZeroAsInt32: 100, realAmplitudeAsInt32: 50000 },
      { type: 'saturatingCast', to: 'uint8' },
    ],
  ];
  return kinds[i % kinds.length];
}

/** The sweep's shapes (M, N, K): odd edges, several 64-tiles, two or more 64-byte k steps. */
const SWEEP: [number, number, number][] = [
  [1, 1, 1],
  [5, 4, 3],
  [17, 33, 65],
  [64, 64, 128],
  [65, 130, 130],
  [130, 65, 200],
  [33, 129, 257],
  [128, 192, 320],
  [63, 65, 192],
  [3, 200, 130],
];

/** The fixed suite: the self-test problems, then the sweep (and two less-than-8-bit problems). */
export function verifyProblems(): GemmProblem[] {
  const sweep = SWEEP.map(
    ([M, N, K], i): GemmProblem => ({
      lhs: operand(M, K, i % 2 === 1, i % 3 === 0 ? 'col-major' : 'row-major', 2 * i + 1),
      rhs: operand(K, N, (i >> 1) % 2 === 1, i % 4 < 2 ? 'col-major' : 'row-major', 2 * i + 2),
      lhsZeroPoint: i % 3 === 1 ? ramp(M, (j) => (j % 9) - 4) : i === 4 ? -2147483648 : 3 - i,
      rhsZeroPoint: i % 3 === 2 ? ramp(N, (j) => (j % 7) - 3) : 128 + i,
      pipeline: pipeline(i, M, N),
      dstOrder: i % 4 === 3 ? 'col-major' : 'row-major',
    }),
  );
  const lowBit: GemmProblem[] = [
    { ...sweep[4], pipeline: [], bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } },
    { ...sweep[6], pipeline: [], bitDepth: { lhs: 5, rhs: 3, rounding: 'probabilistic-xorshift' } },
  ];
  return [...selfTestProblems(), ...sweep, ...lowBit];
}

/**
 * The prepacked suite (the CPU's few-row path, `prepackCpu` + `gemm`): every problem of the fixed suite
 * (`suite`) whose rhs prepackCpu stores (8 bits, or at most 4), then a few lhs rows against prepacked 8-bit and
 * 4-bit weights, for the few-row kernels (byte lanes, widening, 4-bit, dot7 and relaxed 8-bit shapes):
 * 1, 2, 3, 5, 7 and 9 rows, K = 275 (8 blocks of 8 quads, then 5 quads, the last one partial), per-channel zero points,
 * the sweep's non-empty pipelines in turn (per-column bias, per-row offsets, a fixed-point scale, per-column
 * exponents).
 */
export function verifyPrepackedProblems(suite: readonly GemmProblem[] = verifyProblems()): GemmProblem[] {
  const [N, K] = [130, 275];
  const fewRows = [1, 2, 3, 5, 7, 9].flatMap((M, i): GemmProblem[] =>
    [undefined, { lhs: 8, rhs: 4, rounding: 'probabilistic-addmod' } as const].map((bitDepth, b) => ({
      lhs: operand(M, K, (i + b) % 2 === 1, i % 2 ? 'col-major' : 'row-major', 101 + 2 * i + b),
      rhs: operand(K, N, i % 3 === 2, b ? 'row-major' : 'col-major', 201 + 2 * i + b),
      lhsZeroPoint: b ? 7 - i : ramp(M, (j) => j * 5 - 9),
      rhsZeroPoint: ramp(N, (j) => (j % 11) - 5 + (b ? 8 : 128)),
      pipeline: pipeline(1 + 2 * ((2 * i + b) % 4), M, N),
      ...(bitDepth ? { bitDepth } : {}),
    })),
  );
  return [...suite.filter((p) => !p.bitDepth || p.bitDepth.rhs <= 4), ...fewRows];
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
        const differs = compare(again, first);
        if (differs) throw new Error(`the plan run again differs from its first call: ${differs}`);
        return { result: first };
      } finally {
        packed.destroy();
      }
    },
    null,
  );
  return { kernel, configuration: `prepacked rhs: ${[...drivers].sort().join(', ')}`, ...row };
}

/** The reference result of each problem, computed once (several kernels check the same problems). */
const references = new WeakMap<GemmProblem, GemmResult>();
function reference(p: GemmProblem): GemmResult {
  let r = references.get(p);
  if (!r) references.set(p, (r = referenceGemm(p)));
  return r;
}

/** Element-wise comparison with the reference: '' when equal, else one line. */
function compare(got: GemmResult, want: GemmResult): string {
  if (got.dtype !== want.dtype || got.data.length !== want.data.length) {
    return `got ${got.dtype}[${got.data.length}], want ${want.dtype}[${want.data.length}]`;
  }
  let bad = 0;
  let first = -1;
  for (let j = 0; j < want.data.length; j++) {
    if (got.data[j] !== want.data[j]) {
      bad++;
      if (first < 0) first = j;
    }
  }
  return bad ? `${bad} of ${want.data.length} elements differ (first at ${first}: ${got.data[first]} instead of ${want.data[first]})` : '';
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
): Promise<Omit<VerifyRow, 'kernel' | 'configuration'>> {
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
          : compare(result, reference(p));
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
  opts: { kernels?: readonly GpuGemmKernel[]; configuration?: string; stopAtFirst?: boolean } = {},
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
    if (warnings.length && !row.detail) row.detail = warnings[0];
    return { kernel: kernel.id, configuration: opts.configuration ?? '', ...row };
  } finally {
    ctx.destroy();
  }
}

/** Checks every kernel on this adapter (or CPU) over the fixed suite; the same data `qgemm verify` prints. */
export async function verifyDevice(opts: VerifyOptions = {}): Promise<VerifyReport> {
  const backend = opts.backend ?? 'webgpu';
  const problems = verifyProblems();
  const rows: VerifyRow[] = [];
  const wanted = (id: string) => !opts.kernels || opts.kernels.includes(id);
  const known = new Set([...GPU_KERNELS, ...CPU_KERNELS, ...(opts.extraKernels ?? [])].map((k) => k.id).concat('sgmat-64x64-emulated'));
  for (const id of opts.kernels ?? []) {
    if (!known.has(id)) throw new InputError('kernel', `unknown kernel ${brief(id)}; known kernels: ${[...known].join(', ')}`);
  }
  const push = (row: VerifyRow) => {
    rows.push(row);
    opts.onRow?.(row);
  };
  if (backend === 'cpu') {
    const caps = await readyCpuCaps();
    for (const k of CPU_KERNELS) {
      if (!wanted(k.id) || !problems.some((p) => k.supports(caps, normalizeProblem(p)))) continue;
      const row = await verifyProblemsWith(
        problems,
        (p) => k.supports(caps, normalizeProblem(p)),
        async (p) => ({ result: await k.run(normalizeProblem(p), {}) }),
        null,
      );
      push({ kernel: k.id, configuration: '', ...row });
    }
    // The few-row path of a prepacked rhs (its own kernels: byte lanes, 4-bit, dot7), on the kernel
    // prepackCpu packs for.
    const packedFor = caps.relaxedSimd ? 'cpu-wasm-relaxed' : 'cpu-wasm-simd';
    if (caps.wasmSimd && wanted(packedFor)) push(await verifyPrepacked(packedFor, problems));
    const features = [caps.wasmSimd && 'wasm-simd', caps.relaxedSimd && 'relaxed-simd', caps.sharedMemory && `${caps.threads} threads`];
    return {
      backend,
      device: `CPU (${features.filter(Boolean).join(', ') || 'JavaScript only'})`,
      rows,
      ok: rows.every((r) => r.mismatches === 0),
    };
  }
  const acquired = await acquireDevice({ allowSoftware: true, device: opts.device });
  const probe = await GpuContext.create({ device: acquired.device });
  const caps = probe.caps;
  probe.destroy();
  // The emulated subgroup-matrix kernel, at the configuration the real one uses here (NVIDIA's 16x16x32 where there is none).
  const real = bestConfig(caps);
  const emulatedConfig: SgmatConfig = real ?? EMULATED_CONFIGS[0];
  const emulated = sgmatEmulatedKernel(emulatedConfig);
  const kernels = [...GPU_KERNELS, emulated, ...(opts.extraKernels ?? [])];
  for (const k of kernels) {
    if (!wanted(k.id)) continue;
    if (!problems.some((p) => k.supports(caps, gemmShape(p)))) continue;
    const configuration =
      k.id === 'sgmat-64x64' && real ? configLabel(real) : k === emulated ? `${configLabel(emulatedConfig)}, emulated builtins` : '';
    push(await verifyGpuKernel(acquired.device, k, problems, { kernels: [k, ...GPU_KERNELS], configuration }));
  }
  if (!opts.device) acquired.device.destroy();
  return { backend, device: describeAdapter(acquired.summary), rows, ok: rows.every((r) => r.mismatches === 0) };
}

/** The report as the CLI's table: kernel | configuration | problems | mismatches | time. */
export function formatVerifyReport(r: VerifyReport): string {
  const head = ['kernel', 'configuration', 'problems', 'mismatches', 'time'];
  const body = r.rows.map((x) => [
    x.kernel,
    x.configuration || '-',
    String(x.problems),
    String(x.mismatches),
    `${(x.ms / 1000).toFixed(2)} s`,
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(width[i]))
      .join(' | ')
      .trimEnd();
  const out = [`${r.backend} on ${r.device}`, line(head), width.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)];
  for (const x of r.rows) if (x.detail) out.push(`${x.kernel}: ${x.detail}`);
  out.push(
    r.ok
      ? `all ${r.rows.length} kernels exact`
      : `MISMATCH: ${r.rows.filter((x) => x.mismatches).length} of ${r.rows.length} kernels differ from the reference`,
  );
  return out.join('\n');
}

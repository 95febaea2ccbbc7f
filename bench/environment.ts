// Where the benchmark runs: the machine (CPU model, cores, memory, OS, Node), the repository root (for
// dist/browser and bench/results, whether we run from bench/*.ts or from the bundled dist/node/bench.js),
// and the adapter, chosen so:
//   1. a hardware WebGPU adapter if there is one (Dawn in Node; --dawn PATH for a bare dawn.node);
//   2. otherwise SwiftShader, if Debian's chromium (which ships it) is installed;
//   3. otherwise the CPU path alone, and the output says so.

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../src/errors.ts';
import { INSTALL_HINT, SWIFTSHADER_ICD } from '../src/gpu/dawn.ts';
import { describeAdapter, type AdapterSummary } from '../src/gpu/adapter.ts';
import { isHardwareAdapterAvailable } from '../src/gpu/acquire.ts';
import { createGpuContextTuningFirst, type GpuContext } from '../src/scheduler/context.ts';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  hostname: string;
  /**
   * Linux: the CPU's family/model and the vector extensions that decide the CPU peers' kernels (AVX2,
   * AVX-512, VNNI), from /proc/cpuinfo; null elsewhere. A host without VNNI and one with it give
   * onnxruntime's integer GEMMs speeds 2-3x apart, while WebAssembly SIMD stays 128-bit.
   */
  isa: string | null;
}

const ISA_FLAGS = ['avx2', 'avx512f', 'avx512_vnni', 'avx_vnni', 'avx512_bf16', 'amx_int8'];

function isaInfo(): string | null {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '?';
    const flags = new Set(field('flags').split(/\s+/));
    return `family ${field('cpu family')} model ${field('model')}; ${ISA_FLAGS.map((f) => `${f} ${flags.has(f) ? 'yes' : 'no'}`).join(', ')}`;
  } catch {
    return null;
  }
}

export function machineInfo(): Machine {
  const cpus = os.cpus();
  return {
    cpu: (cpus[0]?.model ?? 'unknown CPU').trim(),
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    hostname: os.hostname(),
    isa: isaInfo(),
  };
}

export const describeMachine = (m: Machine): string => `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB${m.isa ? ` (${m.isa})` : ''}`;

/** The repository root: the nearest folder up from this file (or the cwd) whose package.json is qgemm-webgpu's. */
export function repoRoot(): string {
  const starts = [dirname(fileURLToPath(import.meta.url)), process.cwd()];
  for (const start of starts) {
    let dir = resolve(start);
    for (;;) {
      const pkg = join(dir, 'package.json');
      if (existsSync(pkg)) {
        try {
          if (JSON.parse(readFileSync(pkg, 'utf8')).name === 'qgemm-webgpu') return dir;
        } catch {
          /* not ours */
        }
      }
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return process.cwd();
}

/** require() anchored at the repository root (packages that must stay out of the bundle: native addons). */
export function rootRequire(): NodeJS.Require {
  return createRequire(join(repoRoot(), 'package.json'));
}

export type AdapterKind = 'hardware' | 'swiftshader' | 'none';

export interface AdapterChoice {
  kind: AdapterKind;
  /** The adapter of the Node (Dawn) runs; null for 'none'. */
  summary: AdapterSummary | null;
  /** A context made with timestamps where offered; null for 'none'. */
  ctx: GpuContext | null;
  /** One sentence for the output. */
  note: string;
}

/** Short adapter name for rows and file names: 'swiftshader', 'nvidia-hopper', ... */
export function adapterSlug(s: Pick<AdapterSummary, 'vendor' | 'architecture' | 'description'> | null): string {
  if (!s) return 'cpu-only';
  const raw = /swiftshader/i.test(`${s.architecture} ${s.description}`)
    ? 'swiftshader'
    : [s.vendor, s.architecture].filter(Boolean).join('-') || s.description || 'unknown';
  return (
    raw
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'unknown'
  );
}

export interface ChooseOptions {
  dawnPath?: string;
  /** A tuning table (`qgemm tune`, --tuning FILE) for the context: qgemm's rows run its choices. */
  tuning?: unknown;
  /** What the report calls that table (the path given). */
  tuningName?: string | undefined;
  /** Skip WebGPU entirely, and why (no --backends webgpu, or no implementation selected runs on it). */
  cpuOnly?: false | string;
  log?: (line: string) => void;
}

export async function chooseAdapter(opts: ChooseOptions): Promise<AdapterChoice> {
  const none = (note: string): AdapterChoice => {
    // A Dawn named with --dawn is for a GPU run: without an adapter through it the run is the user's to fix.
    if (opts.dawnPath) throw new InputError('--dawn', `${opts.dawnPath} gave no WebGPU adapter: ${note.replace(/: CPU path only$/, '')}`);
    return { kind: 'none', summary: null, ctx: null, note };
  };
  if (opts.cpuOnly) return { kind: 'none', summary: null, ctx: null, note: `WebGPU not requested (${opts.cpuOnly}): CPU path only` };
  let hardware = false;
  try {
    hardware = await isHardwareAdapterAvailable({ dawnPath: opts.dawnPath });
  } catch (e) {
    if (e instanceof InputError) throw e; // a bad QGEMM_DAWN_TOGGLES is the user's to fix, not "no GPU"
    return none(`no WebGPU in Node (${(e as Error).message.split('\n')[0]}): CPU path only`);
  }
  // A --tuning table serves before one committed for the adapter: the run measures the table it was given.
  const create = async (allowSoftware: boolean) =>
    createGpuContextTuningFirst({
      allowSoftware,
      timestamps: true,
      ...(opts.dawnPath ? { dawnPath: opts.dawnPath } : {}),
      ...(opts.tuning === undefined ? {} : { tuning: opts.tuning, tuningName: opts.tuningName }),
    });
  if (hardware) {
    const ctx = await create(false);
    return { kind: 'hardware', summary: ctx.summary, ctx, note: `hardware adapter: ${describeAdapter(ctx.summary)}` };
  }
  if (!existsSync(SWIFTSHADER_ICD)) {
    return none(`no hardware WebGPU adapter and no SwiftShader (${SWIFTSHADER_ICD} missing; Debian: \`${INSTALL_HINT}\`): CPU path only`);
  }
  try {
    const ctx = await create(true);
    return {
      kind: 'swiftshader',
      summary: ctx.summary,
      ctx,
      note: `no hardware WebGPU adapter: SwiftShader, a CPU emulation of a GPU (${describeAdapter(ctx.summary)}); its numbers are for ratios against peers on the same adapter, not for GPU speed`,
    };
  } catch (e) {
    if (e instanceof InputError) throw e; // a --tuning table of another adapter, a bad toggle: not "no GPU"
    return none(`no hardware WebGPU adapter, and SwiftShader failed (${(e as Error).message.split('\n')[0]}): CPU path only`);
  }
}

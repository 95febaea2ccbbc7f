// The `qgemm` command line: `qgemm run SPEC.json` executes one operation of the JSON spec contract,
// `qgemm gemm --lhs A.npy --rhs B.npy --out C.npy ...` does the same GEMM from flags, `qgemm info` shows
// the WebGPU adapter. Bad input prints one line naming the field and exits 2, with no output file
// (results go to a temporary file that is renamed into place); a GPU failure exits 1.

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { InputError, QgemmError } from '../errors.ts';
import { serializeNpy, type NpyArray } from '../io/npy.ts';
import { ELEMENTWISE_OPS } from '../elementwise/plan.ts';
import { runOp, describeDevice, type Backend } from '../api.ts';
import type { GemmResult } from '../types.ts';
import { isElementwiseOp, parseElementwiseSpec } from './elementwise-spec.ts';
import { isObject, parseGemmSpec, type ReadFile } from './spec.ts';

const USAGE = `usage:
  qgemm run SPEC.json [--backend cpu|webgpu|auto]
  qgemm gemm --lhs A.npy --rhs B.npy --out C.npy [--lhs-zero-point INT|Z.npy] [--rhs-zero-point INT|Z.npy]
             [--pipeline JSON|@stages.json] [--bit-depth L,R[,ROUNDING]] [--backend cpu|webgpu|auto]
  qgemm info        show the WebGPU adapter that --backend webgpu would use
Exit codes: 0 ok, 1 failure of the machine (GPU, I/O), 2 bad input.`;

const readFile: ReadFile = (path) => readFileSync(path);

function backendOf(v: string | undefined): Backend {
  const b = v ?? 'cpu';
  if (b !== 'cpu' && b !== 'webgpu' && b !== 'auto') throw new InputError('--backend', `expected cpu, webgpu or auto, got ${JSON.stringify(b)}`);
  return b;
}

/** Writes the .npy next to its final path, then renames: a failure never leaves a partial file. */
export function writeNpyAtomic(path: string, arr: NpyArray): void {
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  try {
    writeFileSync(tmp, serializeNpy(arr));
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    // A path that cannot be written is bad input (exit 2); a full or failing disk is not (exit 1).
    const code = (e as { code?: string }).code ?? '';
    if (['ENOENT', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'EROFS', 'ENAMETOOLONG'].includes(code)) {
      throw new InputError('out', `cannot write ${path} (${code})`);
    }
    throw e;
  }
}

function toNpy(r: GemmResult): NpyArray {
  if (r.order !== 'row-major') throw new Error('internal: CLI results are row-major');
  return { dtype: r.dtype, shape: [r.rows, r.cols], fortranOrder: false, data: r.data };
}

async function cmdRun(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { backend: { type: 'string' } }, allowPositionals: true });
  if (positionals.length !== 1) throw new InputError('SPEC', 'expected exactly one spec file: qgemm run SPEC.json');
  const backend = backendOf(values.backend);
  const specPath = resolve(positionals[0]);
  let text: string;
  try {
    text = readFileSync(specPath, 'utf8');
  } catch (e) {
    throw new InputError('SPEC', `cannot read ${specPath} (${(e as { code?: string }).code ?? (e as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError('SPEC', `${specPath} is not valid JSON: ${(e as Error).message}`);
  }
  if (!isObject(json)) throw new InputError('SPEC', 'expected a JSON object');
  const baseDir = dirname(specPath);
  const op = json.op;
  if (op === 'gemm') {
    const spec = parseGemmSpec(json, baseDir, readFile);
    const result = await runOp({ op: 'gemm', problem: spec.problem }, backend);
    writeNpyAtomic(spec.out, toNpy(result));
  } else if (isElementwiseOp(op)) {
    const spec = parseElementwiseSpec(json, baseDir, readFile);
    const result = await runOp({ op: 'elementwise', problem: spec.problem }, backend);
    writeNpyAtomic(spec.out, { dtype: result.dtype, shape: result.shape, fortranOrder: false, data: result.data });
  } else {
    throw new InputError('op', `unknown op ${JSON.stringify(op)} (expected one of: gemm, ${ELEMENTWISE_OPS.join(', ')})`);
  }
}

function parseJsonFlag(flag: string, v: string): unknown {
  let text = v;
  if (v.startsWith('@')) {
    try {
      text = readFileSync(v.slice(1), 'utf8');
    } catch (e) {
      throw new InputError(flag, `cannot read ${v.slice(1)} (${(e as { code?: string }).code ?? (e as Error).message})`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InputError(flag, `not valid JSON: ${(e as Error).message}`);
  }
}

async function cmdGemm(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      lhs: { type: 'string' },
      rhs: { type: 'string' },
      out: { type: 'string' },
      'lhs-zero-point': { type: 'string' },
      'rhs-zero-point': { type: 'string' },
      pipeline: { type: 'string' },
      'bit-depth': { type: 'string' },
      backend: { type: 'string' },
    },
  });
  const backend = backendOf(values.backend);
  for (const f of ['lhs', 'rhs', 'out'] as const) if (!values[f]) throw new InputError(`--${f}`, 'required');
  const zeroPoint = (v: string | undefined) => (v !== undefined && /^-?\d+$/.test(v) ? Number(v) : v);
  const spec: Record<string, unknown> = {
    op: 'gemm',
    lhs: values.lhs,
    rhs: values.rhs,
    out: values.out,
    lhsZeroPoint: zeroPoint(values['lhs-zero-point']),
    rhsZeroPoint: zeroPoint(values['rhs-zero-point']),
    pipeline: values.pipeline === undefined ? [] : parseJsonFlag('--pipeline', values.pipeline),
  };
  if (values['bit-depth']) {
    const [lhs, rhs, rounding] = values['bit-depth'].split(',');
    spec.bitDepth = { lhs: Number(lhs), rhs: Number(rhs), rounding: rounding ?? 'default' };
  }
  const parsed = parseGemmSpec(spec, process.cwd(), readFile);
  const result = await runOp({ op: 'gemm', problem: parsed.problem }, backend);
  writeNpyAtomic(parsed.out, toNpy(result));
}

async function cmdInfo(): Promise<void> {
  process.stdout.write(`${JSON.stringify(await describeDevice(), null, 2)}\n`);
}

/**
 * The Vulkan loader and SwiftShader print an error per instance when XDG_RUNTIME_DIR is unset (as in
 * containers and CI); give them a private one so the CLI's stderr stays the CLI's.
 */
function quietVulkan(): void {
  if (process.env.XDG_RUNTIME_DIR) return;
  const dir = join(tmpdir(), `qgemm-runtime-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = dir;
  } catch {
    // cosmetic only
  }
}

/** Runs the CLI; returns the exit code. Never throws. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  quietVulkan();
  try {
    switch (command) {
      case 'run':
        await cmdRun(rest);
        return 0;
      case 'gemm':
        await cmdGemm(rest);
        return 0;
      case 'info':
        await cmdInfo();
        return 0;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new InputError('command', `unknown command ${JSON.stringify(command)} (see qgemm --help)`);
    }
  } catch (e) {
    const err = e as Error & { code?: string };
    if (e instanceof InputError) {
      process.stderr.write(`qgemm: error: ${err.message.replace(/\s*\n\s*/g, ' ')}\n`);
      return 2;
    }
    if (err.code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`qgemm: error: ${err.message.split('\n')[0]}\n`);
      return 2;
    }
    const kind = e instanceof QgemmError ? err.name : 'internal error';
    process.stderr.write(`qgemm: ${kind}: ${err.message.split('\n')[0]}\n`);
    if (process.env.QGEMM_DEBUG) process.stderr.write(`${err.stack}\n`);
    return 1;
  }
}

// Shared fixtures of the CLI test files: a fresh folder with valid operands A [2,3] and B [3,4], a
// spec writer, stdout/stderr capture around `main`, the one-line bad-input contract, and the real
// `bin/qgemm.mjs` (dist/node rebuilt first when it is missing or older than src/).

import { execFileSync, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { serializeNpy, type NpyArray, type NpyData, type NpyDtype } from '../../src/io/npy.ts';
import { newest } from '../browser/freshness.ts';

export const REPO = resolve(import.meta.dirname, '../..');
export const BIN = join(REPO, 'bin', 'qgemm.mjs');

export function npy(dtype: NpyDtype, shape: number[], data: NpyData, fortranOrder = false): Uint8Array {
  return serializeNpy({ dtype, shape, fortranOrder, data } as NpyArray);
}

export const M = 2;
export const K = 3;
export const N = 4;
export const A = () =>
  npy(
    'uint8',
    [M, K],
    Uint8Array.from({ length: M * K }, (_, i) => i + 1),
  );
export const B = () =>
  npy(
    'uint8',
    [K, N],
    Uint8Array.from({ length: K * N }, (_, i) => 2 * i + 1),
  );

export type Files = Record<string, Uint8Array | string | null>;

let root: string | null = null;
let caseNo = 0;
/** A fresh folder holding A.npy, B.npy and `files` (removed by cleanup()). */
export function freshDir(files: Files = {}): string {
  root ??= mkdtempSync(join(tmpdir(), 'qgemm-cli-'));
  const dir = join(root, `c${caseNo++}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries({ 'A.npy': A(), 'B.npy': B(), ...files })) {
    if (content !== null) writeFileSync(join(dir, name), content);
  }
  return dir;
}

export function cleanup(): void {
  if (root) rmSync(root, { recursive: true, force: true });
  root = null;
}

/** Writes spec.json (the base gemm spec, `patch` over it) into `dir`; returns its path. */
export function writeSpecIn(dir: string, patch: Record<string, unknown> = {}, text?: string): string {
  const specPath = join(dir, 'spec.json');
  writeFileSync(specPath, text ?? JSON.stringify({ op: 'gemm', lhs: 'A.npy', rhs: 'B.npy', out: 'C.npy', ...patch }));
  return specPath;
}

/** Runs `main` in-process, capturing what it writes. */
export async function runMain(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Exit `code`, exactly one stderr line `qgemm: error: FIELD: ...` (or `qgemm: KIND: ...` for exit 1), no stack. */
export function expectOneLine(r: { code: number | null; err: string }, code: 1 | 2, field: string): string {
  const lines = r.err.split('\n');
  expect(lines.pop(), `stderr must end with a newline: ${JSON.stringify(r.err.slice(0, 300))}`).toBe('');
  expect(lines, `stderr must be one line: ${JSON.stringify(r.err.slice(0, 300))}`).toHaveLength(1);
  const prefix = code === 2 ? `qgemm: error: ${escapeRe(field)}(\\[\\d+\\])?: \\S` : `qgemm: ${escapeRe(field)}: \\S`;
  expect(lines[0]).toMatch(new RegExp(`^${prefix}`));
  expect(lines[0].length, 'the line is cut, never an unbounded echo').toBeLessThan(1100);
  expect(r.err).not.toMatch(/^\s+at /m);
  expect(r.code, r.err).toBe(code);
  return lines[0];
}

/** No output file and no temporary file were left in `dir`. */
export function expectNothingWritten(dir: string, out = join(dir, 'C.npy')): void {
  expect(existsSync(out), `${out} must not exist`).toBe(false);
  expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
}

/** Builds dist/node when it is missing or older than src/ (the real binary runs the bundle). */
export function ensureBuilt(): void {
  const cli = join(REPO, 'dist/node/cli.js');
  if (!existsSync(cli) || statSync(cli).mtimeMs < newest([join(REPO, 'src'), join(REPO, 'shaders')])) {
    execFileSync('npx', ['vite', 'build', '--logLevel', 'error'], { cwd: REPO, stdio: 'pipe' });
  }
}

/** The real `bin/qgemm.mjs`. */
export function runBin(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  opts: SpawnSyncOptions = {},
): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
    env: { ...process.env, ...env },
    ...opts,
  });
  return { code: r.status, out: String(r.stdout), err: String(r.stderr) };
}

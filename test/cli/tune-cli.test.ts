// `qgemm tune` through the real binary (bin/qgemm.mjs, dist/node rebuilt first when stale), on the WebGPU
// adapter (SwiftShader in CI): a 30 s budget writes a tuning table for this adapter, `qgemm info --tuning`
// names it, and a GpuContext created with it runs its kernel at its shape. Bad input is exit 2 with one
// line naming the flag and nothing written: a budget of 0, an unknown shape class, --backend cpu, a
// malformed table, a table of another adapter.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parseTuningTable } from '../../src/kernels/tuning.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { diffResults } from '../support/compare.ts';
import fc from 'fast-check';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';
import { cleanup, ensureBuilt, expectNothingWritten, expectOneLine, freshDir, runBin } from './support.ts';

vi.setConfig({ testTimeout: 900_000, hookTimeout: 300_000 });
const gpu = await getGpu();
afterAll(() => {
  cleanup();
  return releaseGpu();
});

describe('qgemm tune: bad input is exit 2, one line naming the flag, nothing written', () => {
  it.each([
    [['--budget', '0'], '--budget'],
    [['--budget', 'soon'], '--budget'],
    [['--classes', 'square,prefill'], '--classes'],
    [['--backend', 'cpu'], '--backend'],
  ])('%j', (args, field) => {
    ensureBuilt();
    const dir = freshDir();
    const r = runBin(['tune', ...args, '--out', 't.json'], dir);
    expectOneLine(r, 2, field);
    expect(existsSync(join(dir, 't.json'))).toBe(false);
  });
});

describe.skipIf(!gpu)('qgemm tune --budget 30s on this adapter', () => {
  it('writes a table for this adapter; info names it; a GpuContext created with it runs its kernel', async () => {
    ensureBuilt();
    const dir = freshDir();
    const r = runBin(
      ['tune', '--backend', 'webgpu', '--budget', '30s', '--classes', 'square', '--out', 't.json'],
      dir,
      {},
      { timeout: 900_000 },
    );
    console.log(`[tune cli] ${r.out}${r.err.split('\n').slice(-6).join('\n')}`);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/entries -> t\.json/);
    const table = parseTuningTable(JSON.parse(readFileSync(join(dir, 't.json'), 'utf8')));
    expect(table.adapter.device).toBe(gpu!.summary.device);
    expect(table.entries.length).toBeGreaterThan(0);

    const info = runBin(['info', '--tuning', 't.json'], dir);
    expect(info.code, info.err).toBe(0);
    expect(info.out).toMatch(/tuning table: table t\.json, \d+ entr/);
    expect(runBin(['info'], dir).out).toMatch(/tuning table: none \(the registry's rules\)/);

    const ctx = await GpuContext.create({ device: gpu!.device, tuning: table });
    const e = table.entries[0];
    const p = fc.sample(arbProblemOfShape(e.shape.M, e.shape.N, e.shape.K), { numRuns: 1, seed: 5 })[0];
    expect(diffResults(await ctx.gemm(p), referenceGemm(p))).toBeNull();
    expect(ctx.lastRun.kernel).toBe(e.id);
    ctx.destroy();
  });

  it('--tuning with a malformed table or one of another adapter: exit 2 naming the field', () => {
    ensureBuilt();
    const dir = freshDir();
    writeFileSync(join(dir, 'bad.json'), '{"format": "qgemm-tuning-1", "adapter": {}');
    expectOneLine(runBin(['info', '--tuning', 'bad.json'], dir), 2, '--tuning');
    const other = {
      format: 'qgemm-tuning-1',
      adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
      entries: [],
    };
    writeFileSync(join(dir, 'other.json'), JSON.stringify(other));
    expectOneLine(runBin(['info', '--tuning', 'other.json'], dir), 2, 'tuning.adapter');
    // gemm takes --tuning into its context too: the other adapter's table is refused, and C.npy is not written.
    const gemm = runBin(
      ['gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--backend', 'webgpu', '--tuning', 'other.json'],
      dir,
    );
    expectOneLine(gemm, 2, 'tuning.adapter');
    expectNothingWritten(dir);
  });
});

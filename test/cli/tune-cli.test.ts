// `qgemm tune` through the real binary (bin/qgemm.mjs, dist/node rebuilt first when stale), on the WebGPU
// adapter (SwiftShader in CI): a 30 s budget writes a tuning table for this adapter, `qgemm info --tuning`
// names it, a GpuContext created with it runs its kernel at its shape, and a re-tune seeded from it
// (--seed) measures the seed's kernels first. Bad input is exit 2 with one line naming the flag and
// nothing written: a budget of 0, an unknown shape class, --backend cpu, a malformed table, a table of
// another adapter (--tuning or --seed).

import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parseTuningTable, tuningAdapter } from '../../src/kernels/tuning.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { diffResults } from '../support/compare.ts';
import fc from 'fast-check';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';
import { cleanup, ensureBuilt, expectNothingWritten, expectOneLine, freshDir, npy, runBin } from './support.ts';

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
    [['--budget', `${'9'.repeat(400)}h`], '--budget'], // digits past a double: Infinity, refused by the flag's name
    [['--classes', 'square,prefill'], '--classes'],
    [['--classes', 'decode-u4,decode-u4'], '--classes'],
    [['--backend', 'cpu'], '--backend'],
  ])('%j', (args, field) => {
    ensureBuilt();
    const dir = freshDir();
    const r = runBin(['tune', ...args, '--out', 't.json'], dir);
    expectOneLine(r, 2, field);
    expect(existsSync(join(dir, 't.json'))).toBe(false);
  });
  it('a path flag that names no file is refused as the operands are: empty, a trailing slash, not UTF-8', () => {
    ensureBuilt();
    const dir = freshDir();
    expect(expectOneLine(runBin(['tune', '--backend', 'webgpu', '--out', ''], dir), 2, '--out')).toMatch(/expected a file path/);
    expect(expectOneLine(runBin(['tune', '--backend', 'webgpu', '--out', 'p/'], dir), 2, '--out')).toMatch(/ends with a slash/);
    const seed = runBin(['tune', '--backend', 'webgpu', '--seed', 'T\uFFFD.json', '--out', 't.json'], dir);
    expect(expectOneLine(seed, 2, '--seed')).toMatch(/is not valid UTF-8/);
    expect(readdirSync(dir).sort()).toEqual(['A.npy', 'B.npy']);
  });
  it('a budget below 1 s: exit 2 naming --budget in one line, before any sweep, the table already there intact', () => {
    ensureBuilt();
    const dir = freshDir({ 'T.json': '{"kept": true}' });
    const line = expectOneLine(runBin(['tune', '--backend', 'webgpu', '--budget', '1ms', '--out', 'T.json'], dir), 2, '--budget');
    expect(line).toMatch(/at least 1 s/);
    expect(readFileSync(join(dir, 'T.json'), 'utf8')).toBe('{"kept": true}');
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

    // A re-tune from that table (--seed) measures each shape's seed kernel right after the rules' one and
    // records it beside the new winner; the seed file itself is never the output.
    const again = runBin(
      ['tune', '--budget', '30s', '--classes', 'square', '--seed', 't.json', '--out', 't2.json'],
      dir,
      {},
      { timeout: 900_000 },
    );
    expect(again.code, again.err).toBe(0);
    const retuned = parseTuningTable(JSON.parse(readFileSync(join(dir, 't2.json'), 'utf8')));
    for (const x of retuned.entries) {
      const before = table.entries.find((y) => JSON.stringify(y.shape) === JSON.stringify(x.shape));
      if (!before) continue;
      expect(x.seedId).toBe(before.id);
      if ((x.tried ?? 0) >= 2) expect(x.seedMs).toBeGreaterThan(0);
    }
    expectOneLine(runBin(['tune', '--seed', 't.json', '--out', 't.json'], dir), 2, '--out');
  });

  it('--seed with a malformed table or one of another adapter: exit 2 naming the field, nothing written', () => {
    ensureBuilt();
    const other = {
      format: 'qgemm-tuning-1',
      adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
      entries: [],
    };
    const dir = freshDir({ 'bad.json': '{"format": "qgemm-tuning-1"', 'other.json': JSON.stringify(other) });
    expectOneLine(runBin(['tune', '--budget', '2s', '--seed', 'bad.json', '--out', 't.json'], dir), 2, '--seed');
    expectOneLine(runBin(['tune', '--budget', '2s', '--seed', 'other.json', '--out', 't.json'], dir), 2, '--seed.adapter');
    expect(existsSync(join(dir, 't.json'))).toBe(false);
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
    expectOneLine(runBin(['info', '--tuning', 'other.json'], dir), 2, '--tuning.adapter');
    // gemm takes --tuning into its context too: the other adapter's table is refused, and C.npy is not written.
    const gemm = runBin(
      ['gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 'C.npy', '--backend', 'webgpu', '--tuning', 'other.json'],
      dir,
    );
    expectOneLine(gemm, 2, '--tuning.adapter');
    expectNothingWritten(dir);
  });

  it('an output that is the --tuning file is refused, in gemm and in run: exit 2, the table intact', () => {
    ensureBuilt();
    const other = {
      format: 'qgemm-tuning-1',
      adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
      entries: [],
    };
    const text = JSON.stringify(other);
    const spec = { op: 'gemm', lhs: 'A.npy', rhs: 'B.npy', out: 't.json' };
    const dir = freshDir({ 't.json': text, 'spec.json': JSON.stringify(spec) });
    const gemm = runBin(['gemm', '--lhs', 'A.npy', '--rhs', 'B.npy', '--out', 't.json', '--tuning', 't.json'], dir);
    expectOneLine(gemm, 2, '--out');
    expect(gemm.err).toMatch(/same file as --tuning/);
    const run = runBin(['run', 'spec.json', '--tuning', 't.json'], dir);
    expectOneLine(run, 2, 'out');
    expect(run.err).toMatch(/same file as --tuning/);
    expect(readFileSync(join(dir, 't.json'), 'utf8')).toBe(text);
  });

  // `qgemm run` takes --tuning into the context of every op, not only gemm's.
  const layerFiles = () => ({
    'a.npy': npy('uint8', [3], Uint8Array.of(1, 2, 3)),
    'b.npy': npy('uint8', [3], Uint8Array.of(4, 5, 6)),
    'x.npy': npy(
      'int8',
      [1, 5, 5, 3],
      Int8Array.from({ length: 75 }, (_, i) => ((i * 37) % 251) - 125),
    ),
    'w.npy': npy(
      'int8',
      [4, 3, 3, 3],
      Int8Array.from({ length: 108 }, (_, i) => ((i * 53) % 255) - 127),
    ),
    'fcx.npy': npy(
      'int8',
      [2, 12],
      Int8Array.from({ length: 24 }, (_, i) => ((i * 41) % 255) - 127),
    ),
    'fcw.npy': npy(
      'int8',
      [5, 12],
      Int8Array.from({ length: 60 }, (_, i) => ((i * 23) % 255) - 127),
    ),
  });
  const conv = {
    op: 'conv2d',
    input: { data: 'x.npy', scale: 0.02, zeroPoint: -3 },
    filter: { data: 'w.npy', scale: 0.01 },
    output: { scale: 0.05, zeroPoint: 4 },
    padding: 'SAME',
    stride: [2, 2],
    out: 'y.npy',
  };
  const fcLayer = { weights: { data: 'fcw.npy', scale: 0.004 }, output: { scale: 0.05, zeroPoint: -1 } };
  const specs: [string, Record<string, unknown>][] = [
    ['conv2d', conv],
    ['fullyConnected', { op: 'fullyConnected', input: { data: 'fcx.npy', scale: 0.02, zeroPoint: 0 }, ...fcLayer, out: 'y.npy' }],
    [
      'sequential',
      {
        op: 'sequential',
        input: { data: 'fcx.npy', scale: 0.02, zeroPoint: 0 },
        layers: [{ op: 'fullyConnected', ...fcLayer }],
        out: 'y.npy',
      },
    ],
    [
      'add',
      {
        op: 'add',
        a: { data: 'a.npy', scale: 0.5, zeroPoint: 0 },
        b: { data: 'b.npy', scale: 0.25, zeroPoint: 0 },
        output: { scale: 1, zeroPoint: 0 },
        out: 'y.npy',
      },
    ],
  ];
  it.each(specs)('run %s with --tuning of another adapter: exit 2 naming the field, nothing written', (_, spec) => {
    ensureBuilt();
    const dir = freshDir({ ...layerFiles(), 'spec.json': JSON.stringify(spec) });
    const other = {
      format: 'qgemm-tuning-1',
      adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
      entries: [],
    };
    writeFileSync(join(dir, 'other.json'), JSON.stringify(other));
    expectOneLine(runBin(['run', 'spec.json', '--backend', 'webgpu', '--tuning', 'other.json'], dir), 2, '--tuning.adapter');
    expectNothingWritten(dir, join(dir, 'y.npy'));
  });

  it.skipIf(!gpu)("run conv2d with --tuning of this adapter: the table's kernel serves the layer's GEMM", () => {
    ensureBuilt();
    const dir = freshDir({ ...layerFiles(), 'spec.json': JSON.stringify(conv), 'cpu.json': JSON.stringify({ ...conv, out: 'cpu.npy' }) });
    // The layer's GEMM is 9 x 4 x 27 (3 x 3 outputs at stride 2); the entry names a tiling the rules never choose.
    const table = {
      format: 'qgemm-tuning-1',
      adapter: tuningAdapter(gpu!.summary),
      entries: [
        {
          class: 'conv',
          shape: { M: 9, N: 4, K: 27 },
          kernel: { family: 'dot4-tiled', dot4: gpu!.hasDot4 ? 'native' : 'emulated', tileM: 32, tileN: 64, tileKW: 8 },
        },
      ],
    };
    writeFileSync(join(dir, 't.json'), JSON.stringify(table));
    const tuned = runBin(['run', 'spec.json', '--backend', 'webgpu', '--tuning', 't.json', '-v'], dir);
    expect(tuned.code, tuned.err).toBe(0);
    expect(tuned.err).toMatch(/conv2d ran on webgpu, kernel dot4-32x64-kw8, /);
    const want = readFileSync(join(dir, 'y.npy'));
    const cpu = runBin(['run', 'cpu.json', '--backend', 'cpu'], dir);
    expect(cpu.code, cpu.err).toBe(0);
    expect(Buffer.compare(readFileSync(join(dir, 'cpu.npy')), want)).toBe(0);
  });
});

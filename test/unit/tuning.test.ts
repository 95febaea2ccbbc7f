// Unit tier for tuning tables and kernel configurations (src/kernels/tuning.ts, src/kernels/kernel-configs.ts,
// src/cli/tune.ts): a malformed table, an unknown shape class or kernel family, a bad tiling, a budget of 0
// and a table of another adapter are InputErrors naming the field; the order committed table > the
// user's > the rules; an entry serves shapes within a factor of 2 (the nearest wins) of its own rhs bits
// (a 'decode-u4' entry a rhs of at most 4 bits, the others an 8-bit one); configurations map to kernel ids
// (the registry's ids for the defaults, '-u4' for the sgmat tilings at 4-bit rhs) and every candidate
// builds; the 4-bit class's candidates read nibble rhs only.

import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { parseBudget, parseClasses } from '../../src/cli/tune.ts';
import { candidateConfigs, configDistance, type KernelConfig, kernelOf, parseKernelConfig } from '../../src/kernels/kernel-configs.ts';
import { describeTuning, parseTuningTable, resolveTuning, TUNING_FORMAT, type TuningTable, tunedKernel } from '../../src/kernels/tuning.ts';
import { h100Caps } from '../support/caps.ts';
import { selectGemmKernel } from '../../src/kernels/registry.ts';
import { candidates, searchPick, tune } from '../../src/tune.ts';

const adapter = { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: 'NVIDIA: 580.159.04' };
const table = (over: Partial<TuningTable> = {}): TuningTable => ({
  format: TUNING_FORMAT,
  adapter,
  entries: [
    {
      class: 'square',
      shape: { M: 1024, N: 1024, K: 1024 },
      kernel: { family: 'sgmat', tileM: 128, tileN: 128, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 },
    },
    {
      class: 'decode',
      shape: { M: 16, N: 1024, K: 1024 },
      kernel: { family: 'dot4-tiled', dot4: 'native', tileM: 32, tileN: 64, tileKW: 8 },
    },
    { class: 'square', shape: { M: 256, N: 256, K: 256 }, kernel: { family: 'registry', id: 'dot4-64x64' } },
  ],
  ...over,
});
const shape = (M: number, N: number, K: number, rhsBits = 8) => ({
  M,
  N,
  K,
  dstType: 'uint8' as const,
  dstOrder: 'row-major' as const,
  ...(rhsBits === 8 ? {} : { bitDepth: { lhs: 8, rhs: rhsBits, rounding: 'nearest' as const } }),
});
const fieldOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).message.split(':')[0];
  }
  throw new Error('expected an InputError');
};

describe('tuning tables', () => {
  it('a malformed table is an InputError naming the field', () => {
    expect(fieldOf(() => parseTuningTable('x'))).toBe('tuning');
    expect(fieldOf(() => parseTuningTable({ ...table(), format: 'v0' }))).toBe('tuning.format');
    expect(fieldOf(() => parseTuningTable({ ...table(), adapter: { ...adapter, device: 3 } }))).toBe('tuning.adapter.device');
    expect(fieldOf(() => parseTuningTable({ ...table(), entries: {} }))).toBe('tuning.entries');
    expect(fieldOf(() => parseTuningTable({ ...table(), created: 5 }))).toBe('tuning.created'); // describeTuning slices it
    expect(fieldOf(() => parseTuningTable({ ...table(), method: {} }))).toBe('tuning.method');
    const bad = (i: number, e: object) => {
      const t = table();
      (t.entries as unknown[])[i] = { ...t.entries[i], ...e };
      return () => parseTuningTable(t);
    };
    expect(fieldOf(bad(1, { class: 'prefill' }))).toBe('tuning.entries[1].class');
    expect(fieldOf(bad(0, { shape: { M: 0, N: 1, K: 1 } }))).toBe('tuning.entries[0].shape.M');
    expect(fieldOf(bad(0, { gpuMs: -1 }))).toBe('tuning.entries[0].gpuMs');
    expect(fieldOf(bad(0, { kernel: { family: 'cutlass' } }))).toBe('tuning.entries[0].kernel.family');
    expect(fieldOf(bad(0, { kernel: { ...table().entries[0].kernel, tileM: 96 } }))).toBe('tuning.entries[0].kernel.tileM');
    expect(fieldOf(bad(2, { kernel: { family: 'registry', id: 'nope' } }))).toBe('tuning.entries[2].kernel.id');
    expect(fieldOf(bad(1, { kernel: { family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 4 } }))).toBe(
      'tuning.entries[1].kernel.tileKW',
    );
    // A misspelt key anywhere is refused, not passed over for its default.
    expect(fieldOf(() => parseTuningTable({ ...table(), entires: [] }))).toBe('tuning.entires');
    expect(fieldOf(() => parseTuningTable({ ...table(), adapter: { ...adapter, driver: 'x' } }))).toBe('tuning.adapter.driver');
    expect(fieldOf(bad(0, { gpuMS: 1 }))).toBe('tuning.entries[0].gpuMS');
    expect(fieldOf(bad(0, { shape: { M: 1, N: 1, K: 1, B: 2 } }))).toBe('tuning.entries[0].shape.B');
    expect(fieldOf(bad(0, { rulesId: 7 }))).toBe('tuning.entries[0].rulesId');
    expect(fieldOf(bad(0, { kernel: { ...table().entries[0].kernel, bufers: 2 } }))).toBe('tuning.entries[0].kernel.bufers');
    expect(fieldOf(bad(0, { kernel: { family: 'registry', id: 'gemv', tileM: 64 } }))).toBe('tuning.entries[0].kernel.tileM');
    const tiled = { family: 'dot4-tiled', dot4: 'native', tileM: 32, tileN: 32, tileKW: 8 };
    expect(fieldOf(bad(1, { kernel: { ...tiled, vecwords: 1 } }))).toBe('tuning.entries[1].kernel.vecwords');
    expect(fieldOf(bad(1, { kernel: { ...tiled, threadm: 8 } }))).toBe('tuning.entries[1].kernel.threadm');
    expect(fieldOf(bad(1, { kernel: { family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 8, tilekw: 4 } }))).toBe(
      'tuning.entries[1].kernel.tilekw',
    );
    // values JSON cannot print (a BigInt, a cycle) are echoed, not a TypeError of the message
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(fieldOf(bad(0, { shape: { M: 16n, N: 1, K: 1 } }))).toBe('tuning.entries[0].shape.M');
    expect(fieldOf(bad(1, { kernel: { ...tiled, tileM: 32n } }))).toBe('tuning.entries[1].kernel.tileM');
    expect(fieldOf(() => parseTuningTable({ ...table(), format: cycle }))).toBe('tuning.format');
    expect(parseTuningTable(JSON.parse(JSON.stringify(table())))).toEqual(table());
  });

  it('the committed H200 table (src/kernels/tuned/nvidia-h200.json) parses and serves the adapter Dawn reports for that GPU', () => {
    const h200 = { vendor: 'nvidia', architecture: '', device: 'nvidia-h200', description: 'NVIDIA: 580.159.04 580.159.4.0' };
    const c = resolveTuning(h200);
    expect([c.source, c.name]).toEqual(['committed', 'nvidia-h200.json']);
    expect(c.kernelFor(shape(4096, 4096, 4096))?.id).toBe('sgmat-256x128-w4x2-k64-b1');
    expect(c.kernelFor(shape(1, 4096, 4096))?.id).toBe('gemv-workgroup');
    expect(c.kernelFor(shape(128, 11008, 11008, 4))?.id).toBe('sgmat-64x64-u4');
    // Another GPU of the vendor is not served by it.
    expect(resolveTuning({ ...h200, device: 'nvidia-h100' }).source).toBe('rules');
  });

  it('a table of another adapter is refused; committed tables come first, then the user table, then the rules', () => {
    const other = { ...adapter, device: 'nvidia-a100' };
    expect(fieldOf(() => resolveTuning(other, { table: table() }, { committed: {} }))).toBe('tuning.adapter');
    expect(resolveTuning(adapter, undefined, { committed: {} }).source).toBe('rules');
    const user = resolveTuning(adapter, { table: table(), name: 't.json' }, { committed: {} });
    expect([user.source, user.name]).toEqual(['user', 't.json']);
    const warnings: string[] = [];
    const committed = resolveTuning(
      { ...adapter, description: 'another driver' },
      { table: table() },
      { committed: { './tuned/h100.json': table({ entries: [] }) }, warn: (m) => warnings.push(m) },
    );
    expect([committed.source, committed.name, committed.table?.entries.length]).toEqual(['committed', 'h100.json', 0]);
    expect(warnings).toHaveLength(1);
    expect(() => resolveTuning(adapter, undefined, { committed: { './tuned/bad.json': { format: 'x' } } })).toThrow(/bad\.json\.format/);
  });

  it("the bench's --tuning (passedFirst) takes the table passed before a committed one, which serves the shapes its entries are nearer to", () => {
    const committed = { './tuned/h100.json': table() };
    const fresh = table({ entries: [{ ...table().entries[0], kernel: { family: 'registry', id: 'sgmat-64x64-sk' } }] });
    const warnings: string[] = [];
    const first = resolveTuning(
      adapter,
      { table: fresh, name: 'fresh.json' },
      { committed, passedFirst: true, warn: (m) => warnings.push(m) },
    );
    expect([first.source, first.name, first.table?.entries.length, first.under?.name, warnings]).toEqual([
      'user',
      'fresh.json',
      1,
      'h100.json',
      [],
    ]);
    expect(first.kernelFor(shape(1024, 1024, 1024))?.id).toBe('sgmat-64x64-sk'); // the fresh table's entry
    expect(first.kernelFor(shape(16, 1024, 1024))?.id).toBe('dot4-32x64-kw8'); // the committed table's, where the fresh one has none
    expect(first.kernelFor(shape(1, 64, 64))).toBeNull(); // neither: the rules
    expect(first.kernels.map((k) => k.id).sort()).toEqual(['dot4-32x64-kw8', 'dot4-64x64', 'sgmat-128x128-w4x2-k64-b2', 'sgmat-64x64-sk']);
    expect(describeTuning(first)).toBe('table fresh.json, 1 entries; the committed table h100.json where its entry is nearer');
    // A shape the fresh table reaches only from a factor of 2 away goes to the committed table's own entry.
    const cut = table({
      entries: [{ ...table().entries[0], shape: { M: 2048, N: 2048, K: 2048 }, kernel: { family: 'registry', id: 'sgmat-64x64-sk' } }],
    });
    const near = resolveTuning(adapter, { table: cut }, { committed, passedFirst: true });
    expect(near.kernelFor(shape(1024, 1024, 1024))?.id).toBe('sgmat-128x128-w4x2-k64-b2'); // the committed entry, exact
    expect(near.kernelFor(shape(2048, 2048, 2048))?.id).toBe('sgmat-64x64-sk'); // the fresh entry, exact
    const tie = table({ entries: [{ ...table().entries[0], kernel: { family: 'registry', id: 'sgmat-64x64-sk' } }] });
    expect(resolveTuning(adapter, { table: tie }, { committed, passedFirst: true }).kernelFor(shape(1024, 1024, 1024))?.id).toBe(
      'sgmat-64x64-sk',
    ); // a tie: the fresh table
    // Without a committed table for the adapter, the table passed alone; without a table passed, the committed one.
    expect(resolveTuning(adapter, { table: fresh }, { committed: {}, passedFirst: true }).under).toBeUndefined();
    expect(resolveTuning(adapter, undefined, { committed, passedFirst: true }).source).toBe('committed');
    const other = { ...adapter, device: 'nvidia-a100' };
    expect(fieldOf(() => resolveTuning(other, { table: table() }, { committed, passedFirst: true }))).toBe('tuning.adapter');
  });

  it('an entry serves shapes within a factor of 2 of its own, the nearest first, 8-bit rhs only', () => {
    const t = table();
    expect(tunedKernel(t, shape(1024, 1024, 1024))?.id).toBe('sgmat-128x128-w4x2-k64-b2');
    expect(tunedKernel(t, shape(2048, 600, 1500))?.id).toBe('sgmat-128x128-w4x2-k64-b2');
    expect(tunedKernel(t, shape(4096, 4096, 4096))).toBeNull();
    expect(tunedKernel(t, shape(16, 1024, 1024))?.id).toBe('dot4-32x64-kw8');
    expect(tunedKernel(t, shape(1, 1024, 1024))).toBeNull();
    expect(tunedKernel(t, shape(400, 300, 256))?.id).toBe('dot4-64x64');
    expect(tunedKernel(t, shape(1024, 1024, 1024, 4))).toBeNull();
  });

  it("a 'decode-u4' entry (rhsBits 4) serves a rhs of at most 4 bits only, the others 8 bits only", () => {
    const u4 = {
      class: 'decode-u4' as const,
      shape: { M: 128, N: 11008, K: 11008 },
      rhsBits: 4 as const,
      kernel: {
        family: 'sgmat' as const,
        tileM: 128,
        tileN: 128,
        sgRows: 4,
        sgCols: 2,
        kStep: 64,
        buffers: 2 as const,
        rhsBits: 4 as const,
      },
    };
    const eight = { ...u4, class: 'decode' as const, rhsBits: undefined, kernel: { family: 'registry' as const, id: 'sgmat-64x64' } };
    const t = parseTuningTable(JSON.parse(JSON.stringify(table({ entries: [eight, u4] }))));
    expect(t.entries[1]).toEqual(u4);
    for (const bits of [4, 3, 1]) expect(tunedKernel(t, shape(128, 11008, 11008, bits))?.id).toBe('sgmat-128x128-w4x2-k64-b2-u4');
    expect(tunedKernel(t, shape(128, 11008, 11008))?.id).toBe('sgmat-64x64');
    expect(tunedKernel(t, shape(128, 11008, 11008, 6))).toBeNull();
    expect(tunedKernel(table({ entries: [eight] }), shape(128, 11008, 11008, 4))).toBeNull();
    expect(tunedKernel(t, shape(128, 11008, 11008, 4))?.rhsPackFormat).toBe('u4k8-r128');
    // Through the registry, as a context passes it: a 4-bit rhs asked for, or prepacked in nibbles.
    const tuned = resolveTuning(adapter, { table: t }, { committed: {} });
    const h100 = h100Caps();
    expect(selectGemmKernel(h100, shape(128, 11008, 11008, 4), { tuned }).id).toBe('sgmat-128x128-w4x2-k64-b2-u4');
    expect(selectGemmKernel(h100, shape(128, 11008, 11008, 4), { tuned, rhsPackFormat: 'u4k8-r128' }).id).toBe(
      'sgmat-128x128-w4x2-k64-b2-u4',
    );
    expect(selectGemmKernel(h100, shape(128, 11008, 11008, 4), { tuned, rhsPackFormat: 'u4k8-r64' }).id).toBe('sgmat-64x64-u4');
    expect(selectGemmKernel(h100, shape(128, 11008, 11008), { tuned }).id).toBe('sgmat-64x64');
    // The class and the bits agree, or the entry is refused.
    const bad = (e: object) => () => parseTuningTable({ ...table(), entries: [{ ...u4, ...e }] });
    expect(fieldOf(bad({ rhsBits: undefined }))).toBe('tuning.entries[0].rhsBits');
    expect(fieldOf(bad({ rhsBits: 2 }))).toBe('tuning.entries[0].rhsBits');
    expect(fieldOf(bad({ class: 'square' }))).toBe('tuning.entries[0].rhsBits');
    expect(fieldOf(bad({ kernel: { ...u4.kernel, rhsBits: 3 } }))).toBe('tuning.entries[0].kernel.rhsBits');
  });
});

describe("tune()'s options", () => {
  it('a bad budget, class list, candidate count, clock or heater is an InputError naming it, before any device is acquired', async () => {
    for (const [opts, field] of [
      [{ budgetMs: 0 }, 'budgetMs'],
      [{ budgetMs: 999 }, 'budgetMs'], // below the first configuration's warm-up and batches (1 s)
      [{ classes: [] }, 'classes'],
      [{ classes: ['squares'] }, 'classes'],
      [{ maxCandidates: 0 }, 'maxCandidates'],
      [{ maxCandidates: -2 }, 'maxCandidates'],
      [{ maxCandidates: Number.NaN }, 'maxCandidates'],
      [{ maxCandidates: 1.5 }, 'maxCandidates'],
      [{ classes: 5 }, 'classes'], // was a TypeError
      [{ classes: 'square' }, 'classes'], // was spread into letters
      [{ budget: 1 }, 'budget'], // a misspelt budgetMs: was the default 5 minutes
      [{ onProgress: 3 }, 'onProgress'],
      [{ device: {} }, 'device'],
      [{ seed: { format: 'qgemm-tuning-0' } }, 'seed.format'], // a seed table is checked like a --tuning one
      [{ seed: table({ entries: [{ class: 'square', shape: { M: 0, N: 1, K: 1 } }] } as never) }, 'seed.entries[0].shape.M'],
      [{ classes: ['decode-u4', 'decode-u4'] }, 'classes'], // each shape measured twice, two entries for one shape
      [{ classes: [1n] }, 'classes'], // was a TypeError of the message
      [{ clock: 5 }, 'clock'], // was a TypeError
      [{ clock: { now: () => Number.NaN } }, 'clock'], // was a sweep that never ended
      [{ clock: { now: () => 'x' } }, 'clock'],
      [
        {
          clock: {
            now: () => {
              throw new Error('no time');
            },
          },
        },
        'clock',
      ],
      [{ heater: 'yes' }, 'heater'],
      [5, 'options'],
    ] as const) {
      await expect(tune(opts as never), field).rejects.toMatchObject({ name: 'InputError', field });
    }
    // a value of the wrong type is echoed as what it is: "5000" read as the valid budget 5000 contradicted itself
    await expect(tune({ budgetMs: '5000' } as never)).rejects.toThrow('got "5000"');
    await expect(tune({ maxCandidates: '3' } as never)).rejects.toThrow('got "3"');
  });
});

describe('kernel configurations', () => {
  it('the defaults keep the registry ids; others name every parameter', () => {
    expect(kernelOf({ family: 'sgmat', tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2 }).id).toBe('sgmat-64x64');
    expect(kernelOf({ family: 'sgmat', tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2, splitK: 0 }).id).toBe(
      'sgmat-64x64-sk',
    );
    expect(kernelOf({ family: 'sgmat', tileM: 256, tileN: 128, sgRows: 4, sgCols: 2, kStep: 32, buffers: 1, splitK: 4 }).id).toBe(
      'sgmat-256x128-w4x2-k32-b1-s4',
    );
    expect(
      fieldOf(() =>
        parseKernelConfig({ family: 'sgmat', tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2, splitK: 3 }, 'k'),
      ),
    ).toBe('k.splitK');
    // Direct rhs loads read 8-bit rows: with a 4-bit rhs, an InputError naming the field, not a kernel that fails to build.
    const direct4 = { family: 'sgmat', tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2, rhsDirect: true, rhsBits: 4 };
    expect(fieldOf(() => parseKernelConfig(direct4, 'k'))).toBe('k.rhsDirect');
    expect(kernelOf({ family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 8 }).id).toBe('dot4-128x128');
    expect(kernelOf({ family: 'dot4-wide', dot4: 'native', threadsX: 8, threadsY: 16, tileKW: 8 }).id).toBe('dot4-128x64-r8-kw8');
    expect(kernelOf({ family: 'dot4-tiled', dot4: 'emulated', tileM: 64, tileN: 64, tileKW: 16 }).id).toBe('dot4-64x64-emulated');
    // The global load width: 4 words (vec4<u32>) keeps the registry's ids; 1 and 2 are named.
    expect(kernelOf({ family: 'dot4-tiled', dot4: 'emulated', tileM: 64, tileN: 64, tileKW: 16, vecWords: 4 }).id).toBe(
      'dot4-64x64-emulated',
    );
    expect(kernelOf({ family: 'dot4-tiled', dot4: 'emulated', tileM: 64, tileN: 64, tileKW: 16, vecWords: 1 }).id).toBe(
      'dot4-64x64-kw16-v1-emulated',
    );
    expect(kernelOf({ family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 8, vecWords: 2 }).id).toBe(
      'dot4-128x128-r8-kw8-v2',
    );
    // dot4-wide's thread tile: 8 x 8 keeps the ids; others are named, and must load 4 or 8 words a stage.
    const wide = { family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 16 } as const;
    expect(kernelOf({ ...wide, threadM: 4, threadN: 8 }).id).toBe('dot4-64x128-r4x8-kw16');
    expect(kernelOf({ ...wide, threadM: 4, threadN: 4, vecWords: 1 }).id).toBe('dot4-64x64-r4x4-kw16-v1');
    expect(kernelOf({ ...wide, tileKW: 8, threadM: 8, threadN: 8 }).id).toBe('dot4-128x128');
    expect(kernelOf({ ...wide, threadM: 8, threadN: 4 }).packFormat).toBe('u8k4-r128');
    expect(fieldOf(() => parseKernelConfig({ ...wide, threadM: 2 }, 'k'))).toBe('k.threadM');
    expect(fieldOf(() => parseKernelConfig({ ...wide, tileKW: 8, threadM: 4 }, 'k'))).toBe('k.tileKW');
    expect(parseKernelConfig({ ...wide, threadM: 4, threadN: 8 }, 'k')).toEqual({ ...wide, threadM: 4, threadN: 8 });
    expect(
      kernelOf({ family: 'dot4-tiled', dot4: 'native', tileM: 64, tileN: 32, tileKW: 8, threadM: 8, threadN: 4, vecWords: 2 }).id,
    ).toBe('dot4-64x32-kw8-t8x4-v2');
    expect(kernelOf({ family: 'dot4-tiled', dot4: 'native', tileM: 32, tileN: 32, tileKW: 16, threadM: 4, threadN: 4 }).id).toBe(
      'dot4-32x32',
    );
    expect(
      fieldOf(() => parseKernelConfig({ family: 'dot4-tiled', dot4: 'native', tileM: 64, tileN: 64, tileKW: 8, threadN: 16 }, 'k')),
    ).toBe('k.threadN');
    for (const tiling of [
      { family: 'dot4-tiled', tileM: 64, tileN: 64 },
      { family: 'dot4-wide', threadsX: 16, threadsY: 16 },
    ])
      expect(fieldOf(() => parseKernelConfig({ ...tiling, dot4: 'native', tileKW: 8, vecWords: 3 }, 'k'))).toBe('k.vecWords');
    expect(kernelOf({ family: 'registry', id: 'dot4-32x32' }).needsSelfTest).toBe(true);
    expect(
      fieldOf(() => parseKernelConfig({ family: 'sgmat', tileM: 128, tileN: 128, sgRows: 8, sgCols: 2, kStep: 64, buffers: 2 }, 'k')),
    ).toBe('k.sgRows');
    // 4 x 4 subgroups (16, 512 invocations at 32 each): a tiling of the family.
    const grid16 = { family: 'sgmat', tileM: 256, tileN: 128, sgRows: 4, sgCols: 4, kStep: 64, buffers: 1 } as const;
    expect(parseKernelConfig(grid16, 'k')).toEqual(grid16);
    expect(kernelOf(grid16).id).toBe('sgmat-256x128-w4x4-k64-b1');
  });

  it('every candidate of an H100-like adapter builds a kernel with a distinct id', () => {
    const caps = h100Caps();
    const configs = candidateConfigs(caps);
    const ids = configs.map((c) => kernelOf(c).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('sgmat-128x128-w4x2-k64-b2');
    expect(ids.filter((id) => id.startsWith('sgmat-')).length).toBeGreaterThan(40);
    for (const c of configs) expect(parseKernelConfig(JSON.parse(JSON.stringify(c)), 'k')).toEqual(c);
    // The tuner's order: the rules' kernel, then the families in turn; skinny kernels first at small M,
    // the largest subgroup-matrix tiles first where the shape fills them.
    const order = (M: number, N: number, K: number) => {
      const s = shape(M, N, K);
      return candidates(caps, s, selectGemmKernel(caps, s, { force: '' })).map((k) => k.id);
    };
    const decode = order(16, 1024, 1024);
    expect(decode[0]).toBe(selectGemmKernel(caps, shape(16, 1024, 1024), { force: '' }).id);
    expect(decode.slice(0, 8).filter((id) => /^(gemv|splitk)/.test(id)).length).toBeGreaterThanOrEqual(1);
    const big = order(4096, 4096, 4096);
    expect(big[0]).toBe('sgmat-64x64');
    expect(big.find((id) => id.startsWith('sgmat-') && id !== 'sgmat-64x64')).toMatch(/^sgmat-(256x128|128x256)-/);
    // Split-K tilings: every tiling with slices that fill the GPU, fixed counts at the default; first at
    // M <= 128, after every one-pass tiling above.
    expect(ids).toEqual(expect.arrayContaining(['sgmat-256x128-w4x2-k64-b1', 'sgmat-128x128-w4x2-k64-b2-sk', 'sgmat-64x64-s4']));
    expect(decode.find((id) => id.startsWith('sgmat-') && id !== 'sgmat-64x64-sk')).toMatch(/-(sk|s\d+)$/);
    const split = big.filter((id) => id.startsWith('sgmat-') && id !== 'sgmat-64x64-sk').map((id) => /-(sk|s\d+)$/.test(id));
    expect(split.indexOf(true)).toBe(split.lastIndexOf(false) + 1);
    expect(new Set(big).size).toBe(big.length);
    // Every tiling at 4-bit rhs too ('-u4'); none of them among an 8-bit shape's candidates.
    expect(ids).toEqual(expect.arrayContaining(['sgmat-256x128-w4x2-k64-b1-u4', 'sgmat-128x128-w4x2-k64-b2-sk-u4', 'sgmat-64x64-s4-u4']));
    expect(big.some((id) => id.endsWith('-u4'))).toBe(false);
  });

  it("the 4-bit class's candidates read a nibble rhs: gemv-u4, split-K u4 and the sgmat '-u4' tilings", () => {
    const caps = h100Caps();
    for (const [M, N] of [
      [1, 11008],
      [16, 11008],
      [128, 11008],
      [128, 4096],
    ]) {
      const s = shape(M, N, N, 4);
      const rules = selectGemmKernel(caps, s, { force: '', rhsPackFormat: 'u4k8-r128' });
      const list = candidates(caps, s, rules);
      expect(list[0]).toBe(rules);
      expect(list.map((k) => k.rhsPackFormat?.slice(0, 4))).toEqual(list.map(() => 'u4k8'));
      const ids = list.map((k) => k.id);
      expect(ids).toEqual(expect.arrayContaining(['gemv-u4', 'splitk-u4-32x32', 'sgmat-64x64-u4', 'sgmat-128x128-w4x2-k64-b2-u4']));
      expect(ids.filter((id) => id.startsWith('sgmat-')).length).toBeGreaterThan(40);
    }
    expect(selectGemmKernel(caps, shape(128, 11008, 11008, 4), { rhsPackFormat: 'u4k8-r128' }).id).toBe('sgmat-64x64-u4');
  });
});

describe('qgemm tune flags', () => {
  it('--budget takes 30s, 5m, 90 (seconds), 1h; 0 and garbage are InputErrors naming --budget', () => {
    expect([
      parseBudget('--budget', '30s'),
      parseBudget('--budget', '5m'),
      parseBudget('--budget', '90'),
      parseBudget('--budget', '1.5m'),
    ]).toEqual([30000, 300000, 90000, 90000]);
    expect(fieldOf(() => parseBudget('--budget', '0'))).toBe('--budget');
    expect(fieldOf(() => parseBudget('--budget', '0s'))).toBe('--budget');
    expect(fieldOf(() => parseBudget('--budget', 'soon'))).toBe('--budget');
    expect(parseClasses('--classes', 'square, decode')).toEqual(['square', 'decode']);
    expect(fieldOf(() => parseClasses('--classes', 'square,prefill'))).toBe('--classes');
    expect(parseClasses('--classes', 'decode-u4,conv')).toEqual(['decode-u4', 'conv']);
  });
});

describe("the tuner's search", () => {
  const sg = (over: Partial<Record<string, unknown>> = {}): KernelConfig =>
    ({ family: 'sgmat', tileM: 64, tileN: 64, sgRows: 2, sgCols: 2, kStep: 64, buffers: 2, ...over }) as KernelConfig;
  it('configDistance counts the parameters two configurations differ in; a registry kernel is its family default', () => {
    expect(configDistance({ family: 'registry', id: 'sgmat-64x64' }, sg())).toBe(0);
    expect(configDistance({ family: 'registry', id: 'sgmat-64x64-sk' }, sg())).toBe(1); // splitK 0 against 1
    expect(configDistance({ family: 'registry', id: 'sgmat-64x64-u4' }, sg({ rhsBits: 4, kStep: 32 }))).toBe(1);
    expect(configDistance(sg({ splitK: 1 }), sg())).toBe(0); // an absent parameter is its default
    expect(configDistance(sg({ tileM: 256, tileN: 128, sgRows: 4 }), sg({ tileM: 256, tileN: 128, sgRows: 4, buffers: 1 }))).toBe(1);
    expect(configDistance(sg({ rhsDirect: true }), sg())).toBe(1);
    const d4 = { family: 'dot4-tiled', dot4: 'native', tileM: 64, tileN: 64, tileKW: 16 } as const;
    expect(configDistance({ family: 'registry', id: 'dot4-64x64' }, d4)).toBe(0);
    expect(configDistance(d4, { ...d4, threadM: 4, vecWords: 2 })).toBe(1);
    expect(
      configDistance(
        { family: 'registry', id: 'dot4-128x128' },
        { family: 'dot4-wide', dot4: 'native', threadsX: 16, threadsY: 16, tileKW: 16 },
      ),
    ).toBe(1);
    expect(configDistance({ family: 'registry', id: 'gemv' }, { family: 'registry', id: 'gemv-workgroup' })).toBe(Infinity);
    expect(configDistance({ family: 'registry', id: 'gemv' }, { family: 'registry', id: 'gemv' })).toBe(0);
    expect(configDistance(sg(), d4)).toBe(Infinity);
  });

  it("a seed's kernel comes right after the rules' kernel; the search then turns to the fastest one's neighbours", () => {
    const caps = h100Caps();
    const s = shape(4096, 4096, 4096);
    const rules = selectGemmKernel(caps, s, { force: '' });
    const seed = sg({ tileM: 256, tileN: 128, sgRows: 4, buffers: 1 });
    const list = candidates(caps, s, rules, seed);
    expect(list.map((k) => k.id).slice(0, 2)).toEqual(['sgmat-64x64', 'sgmat-256x128-w4x2-k64-b1']);
    expect(new Set(list.map((k) => k.id)).size).toBe(list.length);
    expect(candidates(caps, s, rules, { family: 'registry', id: 'sgmat-64x64' }).map((k) => k.id)).toEqual(
      candidates(caps, s, rules).map((k) => k.id),
    ); // a seed that is the rules' kernel changes nothing

    const configs = new Map(candidateConfigs(caps).map((c) => [kernelOf(c).id, c]));
    const configOf = (id: string): KernelConfig => configs.get(id) ?? { family: 'registry', id };
    const left = list.slice(1).map((k) => ({ id: k.id }));
    const measured: { candidate: { id: string }; m: { ms: number } }[] = [{ candidate: { id: 'sgmat-64x64' }, m: { ms: 4.5 } }];
    const take = (pick: ReturnType<typeof searchPick>) => {
      const [c] = left.splice(pick(left, measured), 1);
      return c.id;
    };
    const pick = searchPick(configOf, 'sgmat-256x128-w4x2-k64-b1');
    expect(take(pick)).toBe('sgmat-256x128-w4x2-k64-b1');
    measured.push({ candidate: { id: 'sgmat-256x128-w4x2-k64-b1' }, m: { ms: 1.27 } });
    // Two of every three picks: the untried configuration nearest the fastest (one parameter away).
    const next = [take(pick), take(pick)];
    for (const id of next) expect(configDistance(configOf(id), seed)).toBe(1);
    // The third: the next in the candidates' order, whatever its family.
    const inOrder = left[0].id;
    expect(configDistance(configOf(inOrder), seed)).toBeGreaterThan(1);
    expect(take(pick)).toBe(inOrder);

    // Without a seed, neighbours and the candidates' order take turns.
    const plain = searchPick(configOf, undefined);
    const rest = [...left];
    const first = plain(rest, measured);
    expect(configDistance(configOf(rest[first].id), seed)).toBe(1);
    expect(plain(rest, measured)).toBe(0);
  });
});

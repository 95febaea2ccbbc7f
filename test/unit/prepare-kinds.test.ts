// The scheduler's preparation policy (src/scheduler/resources.ts prepare): a kernel is compiled for the
// stage kinds of an output program (src/epilogue/epilogue.ts epilogueOverrides), a preparation whose kinds
// include a later program's serves it, and after SPECIALISED_PER_KERNEL sets the kernel is compiled once for
// every kind. A fake kernel records what it was asked to compile; no device is needed.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_STAGE_KINDS } from '../../src/epilogue/epilogue.ts';
import type { AdapterSummary } from '../../src/gpu/adapter.ts';
import type { AdapterCaps } from '../../src/gpu/caps.ts';
import type { GpuGemmKernel, PreparedGemmKernel } from '../../src/kernels/types.ts';
import { DeviceResources } from '../../src/scheduler/resources.ts';
import { STAGE_OP } from '../../src/problem/stages/pipeline.ts';

const bit = (...ops: number[]) => ops.reduce((m, op) => m | (1 << op), 0);

function fakeKernel(fail: (kinds: number) => boolean = () => false) {
  const compiled: number[] = [];
  const kernel = {
    id: 'fake',
    prepare: async (_device: GPUDevice, _caps: AdapterCaps, kinds: number): Promise<PreparedGemmKernel> => {
      compiled.push(kinds >>> 0);
      if (fail(kinds)) throw new Error('does not compile');
      return { encode: () => {} };
    },
  } as unknown as GpuGemmKernel;
  return { kernel, compiled };
}

const resources = () =>
  new DeviceResources({ lost: new Promise(() => {}) } as unknown as GPUDevice, {} as AdapterSummary, {} as AdapterCaps, false);

describe('DeviceResources.prepare: pipelines per set of stage kinds', () => {
  const { clamp, tanh, bias, exponentDouble } = STAGE_OP;

  it('compiles a program’s own kinds, reuses a preparation that includes them, then compiles every kind once', async () => {
    const r = resources();
    const { kernel, compiled } = fakeKernel();
    const scale = await r.prepare(kernel, bit(exponentDouble, clamp));
    expect(await r.prepare(kernel, bit(clamp))).toBe(scale); // a subset: no compile
    expect(await r.prepare(kernel, 0)).toBe(scale);
    const withTanh = await r.prepare(kernel, bit(tanh, clamp));
    expect(withTanh).not.toBe(scale);
    const all = await r.prepare(kernel, bit(bias)); // a third set: the whole interpreter
    expect(await r.prepare(kernel, bit(bias, tanh, exponentDouble))).toBe(all);
    expect(compiled).toEqual([bit(exponentDouble, clamp), bit(tanh, clamp), ALL_STAGE_KINDS >>> 0]);
  });

  it('keeps one preparation per kernel and set, shared by concurrent calls', async () => {
    const r = resources();
    const { kernel, compiled } = fakeKernel();
    const [a, b] = await Promise.all([r.prepare(kernel, bit(bias)), r.prepare(kernel, bit(bias))]);
    expect(a).toBe(b);
    expect(compiled).toEqual([bit(bias)]);
  });

  it('does not keep a failure: the next call compiles again', async () => {
    const r = resources();
    let failing = true;
    const { kernel, compiled } = fakeKernel(() => failing);
    await expect(r.prepare(kernel, bit(tanh))).rejects.toThrow('does not compile');
    failing = false;
    await r.prepare(kernel, bit(tanh));
    expect(compiled).toEqual([bit(tanh), bit(tanh)]);
  });

  it('the self-test’s preparation (every kind) serves every later program', async () => {
    const r = resources();
    const { kernel, compiled } = fakeKernel();
    const all = await r.prepare(kernel, ALL_STAGE_KINDS);
    expect(await r.prepare(kernel, bit(tanh, bias, clamp))).toBe(all);
    expect(compiled).toEqual([ALL_STAGE_KINDS >>> 0]);
  });
});

describe('epilogue.wgsl: every op is guarded by its STAGE_KINDS bit', () => {
  it('each `case STAGE_<OP>` of the interpreter opens with `if (stageIn(STAGE_<OP>))`, and every op has a case', () => {
    const wgsl = readFileSync(new URL('../../src/epilogue/epilogue.wgsl', import.meta.url), 'utf8');
    const cases = [...wgsl.matchAll(/case (STAGE_\w+): \{\s*(.*)/g)].map(([, op, first]) => ({ op, first: first.trim() }));
    for (const { op, first } of cases) expect(first, op).toBe(`if (stageIn(${op})) {`);
    const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
    expect(cases.map((c) => c.op).sort()).toEqual(
      Object.keys(STAGE_OP)
        .map((name) => `STAGE_${snake(name)}`)
        .sort(),
    );
  });
});

describe('DeviceResources.destroy', () => {
  it('frees the plans it holds (a chain plan: its pool)', () => {
    const r = resources();
    const freed: string[] = [];
    const builder = { pool: { destroy: () => freed.push('pool') }, uniforms: { destroy() {} }, staging: { destroy() {} }, commands: [] };
    r.plans.chains.add({ input: [], rhs: [], builders: [builder as never], call: {} as never });
    r.destroy(false);
    expect(freed).toEqual(['pool']);
  });
});

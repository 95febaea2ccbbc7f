// The comparisons of the report: this project against each peer on the same shapes, same runtime and
// same mode (what stays on the GPU between calls), and the same case of the decode loop (back to back,
// or after a pause), as wall-time and GPU-time speed-ups per shape and their geometric means. `speedup`
// = peer wall median / ours, `gpuSpeedup` = peer GPU median / ours (null where either side has no GPU
// time); > 1 means qgemm is faster.

import { rowKey, type RowId } from './impls/types.ts';
import type { AdapterKind } from './environment.ts';
import { shapeKey, type ConvLayer } from './shapes.ts';

export interface Comparison {
  ours: RowId;
  peer: RowId;
  /** Per shape; a convolution layer's entry carries its `conv`. */
  shapes: { m: number; n: number; k: number; conv?: ConvLayer; speedup: number; gpuSpeedup: number | null }[];
  /** Geometric mean of the wall-time speed-ups. */
  geomean: number | null;
  /** Geometric mean of the GPU-time speed-ups over the shapes where both sides have GPU time; null where none has. */
  gpuGeomean: number | null;
}

/** What compare() reads of a row. */
export interface ComparableRow extends RowId {
  m: number;
  n: number;
  k: number;
  conv?: ConvLayer;
  medianMs: number | null;
  gpuMedianMs: number | null;
  verified: boolean | null;
}

const id = (impl: RowId['impl'], backend: RowId['backend'], runtime: RowId['runtime'], mode: RowId['mode']): RowId => ({
  impl,
  backend,
  runtime,
  mode,
});
const QGEMM_NODE = (mode: RowId['mode']) => id('qgemm', 'webgpu', 'node', mode);
/** qgemm resident with 4-bit weights (--rhs-bits 4): its own series (rowKey .../resident/rhs4). */
const QGEMM_RHS4: RowId = { ...QGEMM_NODE('resident'), rhsBits: 4 };
/** The same series' after-pause rows (the decode loop's single calls, each after a pause). */
const paused = (r: RowId): RowId => ({ ...r, loop: 'after-pause' });
/** The CPU path's resident rows with 4-bit weights (prepackCpu with a bitDepth). */
const QGEMM_CPU_RHS4: RowId = { ...id('qgemm', 'cpu', 'node', 'resident'), rhsBits: 4 };

/** The pairs compared: same runtime and mode; the CPU path against the CPU libraries. */
export const PAIRS: { ours: RowId; peer: RowId }[] = [
  ...(['resident', 'call', 'device'] as const).map((mode) => ({
    ours: QGEMM_NODE(mode),
    peer: id('tfjs-webgpu-f32', 'webgpu', 'node', mode),
  })),
  ...(['onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4', 'onnxruntime-webgpu-matmul-f32'] as const).map((impl) => ({
    ours: QGEMM_NODE('resident'),
    peer: id(impl, 'webgpu', 'node', 'resident'),
  })),
  // 4-bit weights: against the same bit width of onnxruntime, tfjs f32, and qgemm's own 8-bit weights
  // (the speed-up that storing two values per byte buys).
  ...(['onnxruntime-webgpu-matmulnbits4', 'tfjs-webgpu-f32'] as const).map((impl) => ({
    ours: QGEMM_RHS4,
    peer: id(impl, 'webgpu', 'node', 'resident'),
  })),
  { ours: QGEMM_RHS4, peer: QGEMM_NODE('resident') },
  // The decode loop's after-pause rows (resident): against the peers' after-pause rows.
  ...(
    ['tfjs-webgpu-f32', 'onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4', 'onnxruntime-webgpu-matmul-f32'] as const
  ).map((impl) => ({
    ours: paused(QGEMM_NODE('resident')),
    peer: paused(id(impl, 'webgpu', 'node', 'resident')),
  })),
  { ours: paused(QGEMM_RHS4), peer: paused(id('onnxruntime-webgpu-matmulnbits4', 'webgpu', 'node', 'resident')) },
  // Chrome: the same pairs in the page; onnxruntime-web's WebGPU EP against qgemm resident, its WASM EP
  // against qgemm's CPU path.
  ...(['resident', 'call', 'device'] as const).map((mode) => ({
    ours: id('qgemm', 'webgpu', 'chrome', mode),
    peer: id('tfjs-webgpu-f32', 'webgpu', 'chrome', mode),
  })),
  ...(['onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4', 'onnxruntime-webgpu-matmul-f32'] as const).map((impl) => ({
    ours: id('qgemm', 'webgpu', 'chrome', 'resident'),
    peer: id(impl, 'webgpu', 'chrome', 'resident'),
  })),
  {
    ours: { ...id('qgemm', 'webgpu', 'chrome', 'resident'), rhsBits: 4 },
    peer: id('onnxruntime-webgpu-matmulnbits4', 'webgpu', 'chrome', 'resident'),
  },
  // The decode loop's after-pause rows in Chrome, as in Node.
  ...(
    ['tfjs-webgpu-f32', 'onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4', 'onnxruntime-webgpu-matmul-f32'] as const
  ).map((impl) => ({
    ours: paused(id('qgemm', 'webgpu', 'chrome', 'resident')),
    peer: paused(id(impl, 'webgpu', 'chrome', 'resident')),
  })),
  {
    ours: paused({ ...id('qgemm', 'webgpu', 'chrome', 'resident'), rhsBits: 4 }),
    peer: paused(id('onnxruntime-webgpu-matmulnbits4', 'webgpu', 'chrome', 'resident')),
  },
  ...(['call', 'resident'] as const).map((mode) => ({
    ours: id('qgemm', 'cpu', 'chrome', mode),
    peer: id('onnxruntime-web-matmulinteger', 'cpu', 'chrome', mode),
  })),
  { ours: id('qgemm', 'cpu', 'node', 'call'), peer: id('onnxruntime-node-matmulinteger', 'cpu', 'node', 'call') },
  { ours: id('qgemm', 'cpu', 'node', 'resident'), peer: id('onnxruntime-node-matmulinteger', 'cpu', 'node', 'resident') },
  { ours: id('qgemm', 'cpu', 'node', 'call'), peer: id('naive-js', 'cpu', 'node', 'call') },
  // 4-bit weights on the CPU: against onnxruntime's MatMulNBits-4, MatMulInteger, and qgemm's own 8-bit.
  ...(['onnxruntime-node-matmulnbits4', 'onnxruntime-node-matmulinteger', 'qgemm'] as const).map((impl) => ({
    ours: QGEMM_CPU_RHS4,
    peer: id(impl, 'cpu', 'node', 'resident'),
  })),
];
/** On a hardware adapter only (SwiftShader against a CPU library says nothing): the GPU against what a Node user has today. */
export const HARDWARE_PAIRS: { ours: RowId; peer: RowId }[] = [
  { ours: QGEMM_NODE('call'), peer: id('onnxruntime-node-matmulinteger', 'cpu', 'node', 'call') },
];

const round = (x: number) => Number(x.toPrecision(3));
const geomean = (xs: number[]) => (xs.length ? round(Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length)) : null);

export function compare(rows: ComparableRow[], adapterKind: AdapterKind): Comparison[] {
  const find = (who: RowId, s: Pick<ComparableRow, 'm' | 'n' | 'k' | 'conv'>) =>
    rows.find((r) => rowKey(r) === rowKey(who) && shapeKey(r) === shapeKey(s) && r.medianMs !== null && r.verified !== false);
  const out: Comparison[] = [];
  for (const { ours, peer } of adapterKind === 'hardware' ? [...PAIRS, ...HARDWARE_PAIRS] : PAIRS) {
    const shapes: Comparison['shapes'] = [];
    for (const o of rows.filter((r) => rowKey(r) === rowKey(ours))) {
      const mine = find(ours, o);
      const theirs = find(peer, o);
      if (!mine || !theirs) continue;
      const gpuSpeedup = mine.gpuMedianMs && theirs.gpuMedianMs ? round(theirs.gpuMedianMs / mine.gpuMedianMs) : null;
      shapes.push({
        m: o.m,
        n: o.n,
        k: o.k,
        ...(o.conv ? { conv: o.conv } : {}),
        speedup: round(theirs.medianMs! / mine.medianMs!),
        gpuSpeedup,
      });
    }
    if (shapes.length === 0) continue;
    const gpu = shapes.map((s) => s.gpuSpeedup).filter((x): x is number => x !== null);
    out.push({ ours, peer, shapes, geomean: geomean(shapes.map((s) => s.speedup)), gpuGeomean: geomean(gpu) });
  }
  return out;
}

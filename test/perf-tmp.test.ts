import { it } from 'vitest';
import { wasmEngine } from '../src/kernels/cpu-wasm/engine.ts';
import { prepare, plan, selfCheck } from '../src/kernels/cpu-wasm/run.ts';
import { normalizeProblem } from '../src/spec/problem.ts';
import { makeShapeData } from '../bench/problems.ts';
it('perf', async () => {
  const e = (await wasmEngine(selfCheck))!;
  for (const [m, n, k] of [[1, 1024, 1024], [16, 1024, 1024], [256, 256, 256], [1024, 1024, 1024]]) {
    const d = makeShapeData({ m, n, k, label: '' } as any, 1, 'uint8');
    const p = normalizeProblem(d.problem);
    const kind = (process.env.KIND ?? 'i16') as 'i16';
    const times: Record<string, number[]> = { prep: [], packL: [], packR: [], gemm: [], gemmNoOut: [] };
    for (let rep = 0; rep < 7; rep++) {
      let t = performance.now();
      const pr = prepare(e, p, kind, e.relaxed);
      times.prep.push(performance.now() - t);
      const pl = plan(kind, pr, 1);
      t = performance.now(); e.exports[pl.pack[0][0][0]](...(pl.pack[0][0].slice(1) as number[])); times.packL.push(performance.now() - t);
      t = performance.now(); e.exports[pl.pack[0][1][0]](...(pl.pack[0][1].slice(1) as number[])); times.packR.push(performance.now() - t);
      t = performance.now(); e.exports[pl.gemm[0][0][0]](...(pl.gemm[0][0].slice(1) as number[])); times.gemm.push(performance.now() - t);
      new Int32Array(e.memory.buffer, 0, 48)[33] = 0; // no stages
      t = performance.now(); e.exports[pl.gemm[0][0][0]](...(pl.gemm[0][0].slice(1) as number[])); times.gemmNoOut.push(performance.now() - t);
    }
    const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1].toFixed(3);
    console.log(`${m}x${n}x${k}`, Object.entries(times).map(([k, v]) => `${k} ${med(v)}ms`).join('  '), 'GOPS(gemm)', (2 * m * n * k / +med(times.gemmNoOut) / 1e6).toFixed(1));
  }
});

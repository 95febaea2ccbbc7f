// onnxruntime-node's MatMulInteger on the CPU execution provider: uint8 x uint8 -> int32 with scalar
// zero points, what a Node user would pick for int8 matmul; and, for 4-bit weights, its com.microsoft
// MatMulNBits (bits 4, block 32, accuracy_level 4: A quantized to int8 per block inside, f32 A and Y) on
// the same EP, the weights as initializers (rhs >> 4, zero point 8, scale 1: Y = A x (W - 8), as the
// WebGPU row; test/bench/bench.test.ts checks that semantics on the CPU EP). The model is built in code
// (bench/onnx-model.ts). The package is a native addon, so it is loaded at run time from the
// repository's node_modules (never bundled); where it is missing (e.g. a bare dist/ carried to a GPU
// machine) this row is skipped with a note. Threads: onnxruntime's default (one intra-op thread per core).

import { matMulIntegerModel, matMulIntegerWeightsModel, matMulNBitsModel, NBITS_BLOCK } from '../onnx-model.ts';
import { LHS_ZERO_POINT, RHS_ZERO_POINT, type ShapeData } from '../problems.ts';
import { rootRequire } from '../environment.ts';
import { measure } from '../timing.ts';
import type { Runner } from './types.ts';

/** The part of onnxruntime-node's API used here. */
export interface OrtTensor {
  data: unknown;
  dims: readonly number[];
  type: string;
}
export interface OrtSession {
  endProfiling?(): unknown;
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release?(): Promise<void>;
}
export interface Ort {
  Tensor: new (type: string, data: Uint8Array | Float32Array, dims: number[]) => OrtTensor;
  InferenceSession: { create(model: Uint8Array, options?: Record<string, unknown>): Promise<OrtSession> };
  env: { versions?: Record<string, string> };
}

export function loadOrt(): Ort {
  return rootRequire()('onnxruntime-node') as Ort;
}

/** One MatMulInteger through a session (used by the test to check the model against the CPU reference). */
export async function ortMatMulInteger(ort: Ort, session: OrtSession, data: Pick<ShapeData, 'lhs' | 'rhs' | 'shape'>): Promise<Int32Array> {
  const { m, n, k } = data.shape;
  const out = await session.run({
    A: new ort.Tensor('uint8', data.lhs, [m, k]),
    B: new ort.Tensor('uint8', data.rhs, [k, n]),
    a_zero_point: new ort.Tensor('uint8', Uint8Array.of(LHS_ZERO_POINT), []),
    b_zero_point: new ort.Tensor('uint8', Uint8Array.of(RHS_ZERO_POINT), []),
  });
  const y = out.Y;
  if (y?.type !== 'int32' || y.dims[0] !== m || y.dims[1] !== n) throw new Error(`MatMulInteger returned ${y?.type} [${y?.dims}]`);
  return y.data as Int32Array;
}

/** One MatMulInteger through a session of matMulIntegerWeightsModel (B and b_zero_point are its initializers). */
export async function ortMatMulIntegerWeights(ort: Ort, session: OrtSession, data: Pick<ShapeData, 'lhs' | 'shape'>): Promise<Int32Array> {
  const { m, n, k } = data.shape;
  const out = await session.run({
    A: new ort.Tensor('uint8', data.lhs, [m, k]),
    a_zero_point: new ort.Tensor('uint8', Uint8Array.of(LHS_ZERO_POINT), []),
  });
  const y = out.Y;
  if (y?.type !== 'int32' || y.dims[0] !== m || y.dims[1] !== n) throw new Error(`MatMulInteger returned ${y?.type} [${y?.dims}]`);
  return y.data as Int32Array;
}

/** A session of matMulIntegerWeightsModel for the shape's rhs. */
export function createOrtWeightsSession(ort: Ort, data: Pick<ShapeData, 'rhs' | 'shape'>): Promise<OrtSession> {
  const model = matMulIntegerWeightsModel(data.rhs, data.shape.k, data.shape.n, RHS_ZERO_POINT);
  return ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel: 'all' });
}

export async function createOrtSession(ort: Ort): Promise<OrtSession> {
  return ort.InferenceSession.create(matMulIntegerModel(), { executionProviders: ['cpu'], graphOptimizationLevel: 'all' });
}

/** `call`: A and B fed per call; `resident`: B and its zero point as initializers (prepacked at session creation, outside the timing). */
export async function onnxruntimeNode(mode: 'call' | 'resident' = 'call'): Promise<Runner> {
  const ort = loadOrt();
  const session = await createOrtSession(ort);
  const version = ort.env.versions?.node ?? ort.env.versions?.common ?? '?';
  return {
    impl: 'onnxruntime-node-matmulinteger',
    backend: 'cpu',
    runtime: 'node',
    mode,
    adapter: 'cpu',
    computes: 'MatMulInteger uint8 x uint8 -> int32, scalar zero points',
    details:
      `onnxruntime-node ${version}, CPU execution provider, default intra-op threads (one per core)` +
      (mode === 'resident' ? '; B and b_zero_point are initializers (packed when the session is made, outside the timing)' : ''),
    run: async (data, policy) => {
      if (mode === 'call') {
        const r = await measure(policy, async () => {
          const t0 = performance.now();
          const output = await ortMatMulInteger(ort, session, data);
          return { timing: { wallMs: performance.now() - t0, gpuMs: null }, output };
        });
        return { wall: r.wall, gpu: null, warm: r.warm };
      }
      const weights = await createOrtWeightsSession(ort, data);
      try {
        const r = await measure(policy, async () => {
          const t0 = performance.now();
          const output = await ortMatMulIntegerWeights(ort, weights, data);
          return { timing: { wallMs: performance.now() - t0, gpuMs: null }, output };
        });
        return { wall: r.wall, gpu: null, warm: r.warm };
      } finally {
        await weights.release?.();
      }
    },
    close: async () => {
      await session.release?.();
    },
  };
}

/** MatMulNBits-4 on the CPU EP, `resident` (the weights are the model's initializers, packed when its session is made). */
export async function onnxruntimeNodeNBits4(): Promise<Runner> {
  const ort = loadOrt();
  const version = ort.env.versions?.node ?? ort.env.versions?.common ?? '?';
  return {
    impl: 'onnxruntime-node-matmulnbits4',
    backend: 'cpu',
    runtime: 'node',
    mode: 'resident',
    adapter: 'cpu',
    computes: 'MatMulNBits 4-bit weights (block 32, accuracy_level 4: A quantized to int8 per block), f32 A and Y',
    details: `onnxruntime-node ${version}, CPU execution provider, default intra-op threads (one per core); weights rhs >> 4 with zero point 8 and scale 1 as initializers (packed when the session is made, outside the timing); A = (lhs - ${LHS_ZERO_POINT}) as f32`,
    run: async (data, policy) => {
      const { m, n, k } = data.shape;
      if (k % NBITS_BLOCK) throw new Error(`MatMulNBits needs K a multiple of ${NBITS_BLOCK} (K = ${k})`);
      const model = matMulNBitsModel(
        data.rhs.map((v) => v >> 4),
        k,
        n,
        4,
        RHS_ZERO_POINT >> 4,
      );
      const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel: 'all' });
      const a = data.floats().lhs;
      try {
        const r = await measure(policy, async () => {
          const t0 = performance.now();
          const out = await session.run({ A: new ort.Tensor('float32', a, [m, k]) });
          return { timing: { wallMs: performance.now() - t0, gpuMs: null }, output: out.Y };
        });
        return { wall: r.wall, gpu: null, warm: r.warm };
      } finally {
        await session.release?.();
      }
    },
    close: async () => undefined,
  };
}

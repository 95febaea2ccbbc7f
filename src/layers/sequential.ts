// A chain of TFLite FULLY_CONNECTED layers on one GpuContext (pack -> gemm -> output, layer after
// layer): each layer's weights are prepacked once, when the Sequential is made; each run uploads the
// input once, keeps every intermediate activation on the GPU (a GpuMatrix of the layer's 8-bit output
// feeds the next layer's GEMM as its lhs, no read-back) and reads back the last layer's output only.
// Each layer's requantization is derived by src/layers/derive.ts for its kernel path, as in
// fullyConnected(); a layer's input quantization must be the previous layer's output quantization, as
// in a TFLite graph. The FC reference path requantizes on the host in float64, so it cannot be chained
// on the GPU and is refused here.

import { InputError } from '../errors.ts';
import type { GpuContext, GpuMatrix, GpuOperandInput, PackedOperand } from '../scheduler/context.ts';
import { dtypeOf, layerGemm, type FullyConnectedParams, type LayerGemm, type Tensor } from './layers.ts';
import { brief } from '../spec/echo.ts';

export interface SequentialFullyConnected {
  op: 'fullyConnected';
  params: FullyConnectedParams;
}

export class Sequential {
  private constructor(
    private readonly ctx: GpuContext,
    private readonly gemms: LayerGemm[],
    private readonly packed: PackedOperand[],
    private readonly dtype: 'uint8' | 'int8',
    private readonly K: number,
    readonly outputChannels: number,
  ) {}

  /** Checks the chain, derives each layer's stages and prepacks every layer's weights on `ctx`. */
  static async create(ctx: GpuContext, layers: SequentialFullyConnected[]): Promise<Sequential> {
    if (!Array.isArray(layers) || layers.length === 0) throw new InputError('layers', 'expected at least one layer');
    // activations take the weights' dtype, as in TFLite's int8 and legacy uint8 models
    const dtype = dtypeOf(layers[0].params?.weights?.data, 'layers[0].params.weights.data');
    const gemms: LayerGemm[] = [];
    let K = 0;
    layers.forEach((l, i) => {
      const f = `layers[${i}]`;
      if (l?.op !== 'fullyConnected') throw new InputError(`${f}.op`, `expected "fullyConnected", got ${brief(l?.op)}`);
      const w = l.params?.weights;
      if (!w || !Array.isArray(w.shape) || w.shape.length !== 2) throw new InputError(`${f}.params.weights.shape`, 'expected [N, K]');
      const [N, k] = w.shape;
      if (i === 0) K = k;
      else {
        const prev = layers[i - 1].params;
        if (k !== prev.weights.shape[0])
          throw new InputError(`${f}.params.weights.shape`, `K ${k} != the previous layer's N ${prev.weights.shape[0]}`);
        if (Math.fround(l.params.input.scale) !== Math.fround(prev.output.scale) || l.params.input.zeroPoint !== prev.output.zeroPoint) {
          throw new InputError(`${f}.params.input`, "expected the previous layer's output scale and zero point");
        }
      }
      if ((l.params.kernelPath ?? 'xnnpack') === 'reference') {
        throw new InputError(
          `${f}.params.kernelPath`,
          'the FC reference path requantizes on the host in float64: run fullyConnected() layer by layer',
        );
      }
      gemms.push(layerGemm('FULLY_CONNECTED', dtype, k, w, `${f}.params.weights`, N, l.params));
    });
    const packed: PackedOperand[] = [];
    for (const g of gemms) packed.push(await ctx.prepack('rhs', g.rhs));
    return new Sequential(ctx, gemms, packed, dtype, K, layers[layers.length - 1].params.weights.shape[0]);
  }

  /** Frees the prepacked weights (the context stays). */
  destroy(): void {
    for (const p of this.packed) if (!p.destroyed) p.destroy();
  }

  /** Runs the chain on input [M, K] (the first layer's K); returns [M, N] of the last layer. */
  async run(input: Tensor): Promise<Tensor> {
    if (!input || !(input.data instanceof (this.dtype === 'uint8' ? Uint8Array : Int8Array))) {
      throw new InputError('input.data', `expected ${this.dtype} activations, as the layers' weights`);
    }
    const size = input.shape.reduce((a, b) => a * b, 1);
    if (input.shape[input.shape.length - 1] !== this.K || input.data.length !== size) {
      throw new InputError('input.shape', `expected [..., ${this.K}] matching ${input.data.length} values, got [${input.shape}]`);
    }
    const M = size / this.K;
    let lhs: GpuOperandInput = { data: input.data, rows: M, cols: this.K };
    let hidden: GpuMatrix | undefined;
    try {
      for (let i = 0; i < this.gemms.length; i++) {
        const g = this.gemms[i];
        const problem = { lhs, rhs: this.packed[i], lhsZeroPoint: g.lhsZeroPoint, rhsZeroPoint: g.rhsZeroPoint, pipeline: g.pipeline };
        if (i === this.gemms.length - 1) {
          const r = await this.ctx.gemm(problem);
          return { data: r.data as Uint8Array | Int8Array, shape: [M, this.outputChannels] };
        }
        const next = await this.ctx.gemmOnGpu(problem);
        if (hidden) this.ctx.releaseMatrix(hidden);
        hidden = next;
        lhs = next;
      }
      throw new Error('unreachable');
    } finally {
      if (hidden) this.ctx.releaseMatrix(hidden);
    }
  }
}

// Encoding shared by the GEMM kernels that read 'u8k4-r64' packed operands band by band (dot4-tiled,
// gemv, subgroup-matrix): per dispatch, the kernel's TileParams uniform and its two packed-operand
// bindings, beside the epilogue's resources, then the dispatch. The bands and dispatches themselves
// come from src/gpu/plan.ts planGemm; a kernel only says its source and its tile.

import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import { roundUp } from '../gpu/plan.ts';
import { PACK_FORMATS } from '../pack/formats.ts';
import { epilogueEntries } from './epilogue/epilogue.ts';
import type { GemmEncoding } from './types.ts';

/** Records e.dispatches of a kernel whose WGSL (`source`) declares `tile: TileParams`, `lhsPacked`, `rhsPacked`. */
export function encodeBanded(e: GemmEncoding, source: string): void {
  const layout = uniformLayout(source, 'TileParams');
  const rowBytes = roundUp(e.shape.K, PACK_FORMATS['u8k4-r64'].depthAlign);
  const bindGroupLayout = e.pipeline.getBindGroupLayout(0);
  e.pass.setPipeline(e.pipeline);
  for (const d of e.dispatches) {
    const entries = [
      ...epilogueEntries(source, e.epilogue, e.operands.rowSums, e.operands.colSums, e.dst, d, e.uniforms),
      ...namedEntries(source, {
        tile: e.uniforms.alloc(layout, {
          depthWords: rowBytes / 4, bandM: d.m0, bandN: d.n0, bandRows: d.liveRows, bandCols: d.liveCols, workgroupBase: d.base,
        }),
        lhsPacked: { buffer: e.operands.lhs, offset: d.m0 * rowBytes, size: d.rows * rowBytes },
        rhsPacked: { buffer: e.operands.rhs, offset: d.n0 * rowBytes, size: d.cols * rowBytes },
      }),
    ];
    e.pass.setBindGroup(0, e.device.createBindGroup({ layout: bindGroupLayout, entries }));
    e.pass.dispatchWorkgroups(d.x, d.y);
  }
}

// `qgemm info`: what this machine would run, in a few lines for people (the adapter, hardware or
// software, the GPU kernels the registry would pick for three typical shapes, subgroup matrices, the
// CPU kernel and its threads); `qgemm info --json` prints describeDevice()'s full data. Beside the
// pack -> gemm -> output path: it only asks the registry (src/kernels/registry.ts) what it would choose.

import type { DeviceDescription } from '../api.ts';
import { describeAdapter } from '../gpu/adapter.ts';
import { describeToggles } from '../gpu/toggles.ts';
import { selectCpuKernel, selectGemmKernel } from '../kernels/registry.ts';
import { tunedKernel } from '../kernels/tuning.ts';
import { normalizeProblem } from '../problem/problem.ts';

/** Shapes whose kernels the summary names: a decode step, a small batch, a square GEMM (M x N x K). */
const SHAPES: [string, number, number, number][] = [
  ['1x4096x4096 (decode)', 1, 4096, 4096],
  ['64x1024x1024', 64, 1024, 1024],
  ['1024x1024x1024', 1024, 1024, 1024],
];

function kernelFor(choose: () => string): string {
  try {
    return choose();
  } catch (e) {
    return `none (${(e as Error).message.split('\n')[0]})`;
  }
}

/** The human summary: at most about 15 lines. */
export function formatInfo(d: DeviceDescription): string {
  const lines: string[] = [];
  if (d.adapter && d.caps) {
    const caps = d.caps;
    lines.push(`WebGPU adapter: ${describeAdapter(d.adapter)}`);
    lines.push(
      `  ${caps.isSoftware ? 'software (a CPU emulation): --backend auto uses the CPU; --backend webgpu runs here, slowly' : 'hardware: --backend auto uses it'}`,
    );
    lines.push(
      `  dot4 ${d.dot4 ?? (caps.dot4 ? 'native' : 'emulated')}, subgroups ${caps.subgroups ? `yes (${caps.subgroupMinSize}-${caps.subgroupMaxSize})` : 'no'}, ` +
        `timestamps ${caps.timestamps ? 'yes' : 'no'}`,
    );
    const sgm = caps.subgroupMatrix.map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`);
    lines.push(`  subgroup matrices (tensor cores): ${sgm.length ? sgm.join(', ') : 'none'}`);
    lines.push(`  max storage binding ${(caps.limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB`);
    lines.push(`  Dawn toggles: ${describeToggles(caps.toggles)}`);
    lines.push(`  tuning table: ${d.tuning?.description ?? "none (the registry's rules)"}`);
    const table = d.tuning?.table ?? null;
    lines.push('  GPU kernels (M x N x K):');
    for (const [label, M, N, K] of SHAPES) {
      const id = kernelFor(
        () =>
          selectGemmKernel(
            caps,
            { M, N, K, dstType: 'int32', dstOrder: 'row-major' },
            { tuned: { kernels: [], kernelFor: (shape) => (table ? tunedKernel(table, shape) : null) } },
          ).id,
      );
      lines.push(`    ${label.padEnd(22)} ${id}`);
    }
  } else {
    lines.push(`WebGPU adapter: none (${(d.note ?? 'not found').split('. Tried:')[0]})`);
    lines.push('  --backend auto uses the CPU; `qgemm info --json` says what was tried and the fix');
  }
  const cpu = d.cpu;
  const one = { data: new Uint8Array(1), rows: 1, cols: 1 };
  const cpuKernel = kernelFor(() => selectCpuKernel(cpu, normalizeProblem({ lhs: one, rhs: one })).id);
  lines.push(
    `CPU: kernel ${cpuKernel}, ${cpu.threads} thread${cpu.threads === 1 ? '' : 's'}, WebAssembly SIMD ${cpu.wasmSimd ? 'yes' : 'no'}, relaxed SIMD ${cpu.relaxedSimd ? 'yes' : 'no'}`,
  );
  lines.push('Full data: qgemm info --json');
  return `${lines.join('\n')}\n`;
}

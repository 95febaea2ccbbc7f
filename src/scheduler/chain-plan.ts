// Chain plans: a chain of GEMMs on the GPU (pack -> gemm -> output, layer after layer), each reading the
// previous one's dst as its lhs, the first one's lhs from the CPU and the last one's dst read back, as a
// Sequential of FULLY_CONNECTED layers runs one token (src/layers/sequential.ts). The first call of a chain
// runs each GEMM through ./gemm.ts runGemm into buffers that the plan owns (a ./record.ts PlanBuilder per
// GEMM: the lhs upload, every packed lhs and its sums, the stage values, every dst, the uniform slabs, the
// workspaces, the readback buffer), its compute passes recording their commands; the GEMMs after the first
// read a GPU-resident lhs, the previous dst, where the plan keeps it. A later call whose chain equals it in
// everything but the lhs data (each GEMM's problem by src/problem/snapshot.ts, as a call plan, and its
// prepacked rhs by identity) writes the lhs into the plan's upload buffer with writeBuffer and replays
// every GEMM's commands into ONE compute pass of ONE command buffer: one submit, one map of the last dst
// (./call-plan.ts replay). Anything that differs (the lhs shape or type, a zero point, a pipeline, a
// per-channel vector edited in place, a rhs) misses and makes a new plan. The plans are kept with the
// call plans (./plans.ts ChainPlans), freed with any of their rhs or the context.

import { InputError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import { snapshotProblem } from '../problem/snapshot.ts';
import type { GemmProblem, GemmResult, Operand } from '../types.ts';
import { replay } from './call-plan.ts';
import { type GpuGemmProblem, type KernelChoice, runGemm } from './gemm.ts';
import { type GpuMatrix, isGpuMatrix, isPacked, type PackedOperand } from './operands.ts';
import { isPatches } from './patches.ts';
import { type CallPlan, freePlan } from './plans.ts';
import type { GemmTiming, LastRun, PlanBuilder } from './record.ts';
import type { DeviceResources } from './resources.ts';
import type { Tracer } from './trace.ts';

/** One GEMM of a chain: its problem but the lhs (the previous dst, or the chain's lhs for the first). */
export interface ChainLayer extends Omit<GpuGemmProblem, 'lhs' | 'rhs'> {
  rhs: PackedOperand;
}

/** A chain of GEMMs: `lhs` (on the CPU) into the first, each dst the next one's lhs, the last read back. */
export interface GemmChain {
  lhs: Operand;
  layers: ChainLayer[];
}

/**
 * An InputError of GEMM i named as the chain's field: `layers[i].<field>`, the first GEMM's lhs being the
 * chain's own `lhs`, and a later GEMM's lhs the previous GEMM's dst.
 */
function inLayer(e: unknown, i: number): unknown {
  if (!(e instanceof InputError)) return e;
  const ofLhs = e.field === 'lhs' || e.field.startsWith('lhs.'); // the operand, not lhsZeroPoint (a layer's field)
  if (i === 0 && ofLhs) return e;
  const message = e.message.slice(e.field.length + 2);
  const lhs = ofLhs ? ` (GEMM ${i}'s lhs is GEMM ${i - 1}'s dst: its output stages must end in uint8 or int8)` : '';
  return new InputError(`layers[${i}].${e.field}`, message + lhs);
}

/** What the GEMMs after the first are keyed by in place of their lhs (it is the previous dst, fixed by the chain). */
const PREVIOUS_DST: Operand = { data: new Uint8Array(0), rows: 0, cols: 0, order: 'row-major' };

/** GEMM i of a chain as its plan is keyed: its problem, the lhs the chain's for the first, else PREVIOUS_DST. */
const chainKey = (chain: GemmChain, i: number): Omit<GemmProblem, 'rhs'> => ({
  ...chain.layers[i],
  lhs: i === 0 ? chain.lhs : PREVIOUS_DST,
});

/** A chain's shape checked before any GPU work: at least one GEMM, each a prepacked rhs. */
function checkChain(chain: GemmChain): void {
  if (!chain || typeof chain !== 'object' || Array.isArray(chain))
    throw new InputError('chain', `expected a GemmChain object ({ lhs, layers }), got ${brief(chain)}`);
  if (!chain.lhs || typeof chain.lhs !== 'object') throw new InputError('lhs', 'missing operand');
  // The plan writes the lhs into its own upload buffer on replay: a CPU operand only.
  if (isGpuMatrix(chain.lhs) || isPacked(chain.lhs) || isPatches(chain.lhs) || !ArrayBuffer.isView((chain.lhs as Operand).data))
    throw new InputError(
      'lhs',
      "expected a CPU operand ({ data, rows, cols }): a chain uploads its lhs; a GpuMatrix's GEMMs run one by one through gemmOnGpu",
    );
  if (!Array.isArray(chain.layers) || chain.layers.length === 0) throw new InputError('layers', 'expected at least one GEMM');
  for (const [i, l] of chain.layers.entries()) {
    if (!l || typeof l !== 'object' || !l.rhs || typeof l.rhs !== 'object' || !('packed' in l.rhs))
      throw new InputError(`layers[${i}].rhs`, 'expected a PackedOperand made by GpuContext.prepack');
    if (l.rhs.destroyed) throw new InputError(`layers[${i}].rhs`, 'this prepacked operand was destroyed');
  }
}

/**
 * Runs a chain while the caller holds the device: through its plan where one serves (one submit, one
 * map), else GEMM by GEMM through runGemm, making the plan. `timing` receives the GPU time of the chain
 * (its one pass; while the plan is made, the sum of the GEMMs' passes).
 */
export async function runChain(
  r: DeviceResources,
  choice: KernelChoice,
  chain: GemmChain,
  timing: GemmTiming | undefined,
  trace: Tracer | undefined,
): Promise<{ result: GemmResult; ran: LastRun }> {
  r.checkAlive();
  checkChain(chain);
  const plans = r.plans.chains;
  const hit = plans.find(
    chain.layers.map((l) => l.rhs),
    chain.layers.map((_, i) => chainKey(chain, i)),
  );
  if (hit) {
    if (trace) Object.assign(trace, { plan: 'hit', kernel: hit.call.ran.kernel });
    return { result: await replay(r, hit.call, chain.lhs, timing, trace), ran: hit.call.ran };
  }
  const builders: PlanBuilder[] = [];
  try {
    let lhs: GpuMatrix | Operand = chain.lhs;
    let lhsSource: GPUBuffer | undefined;
    let gpuMs: number | null = 0;
    for (const [i, layer] of chain.layers.entries()) {
      const last = i === chain.layers.length - 1;
      const b = r.plans.builder();
      builders.push(b);
      const t: GemmTiming | undefined = timing ? { gpuMs: null } : undefined;
      let run: Awaited<ReturnType<typeof runGemm>>;
      try {
        // Its rhs was checked when the chain began (checkChain): one destroyed since is freed after this call.
        run = await runGemm(r, choice, { ...layer, lhs }, t, last, { trace, plan: b, rhsChecked: true });
      } catch (e) {
        throw inLayer(e, i);
      }
      if (i === 0) lhsSource = run.lhsSource;
      const result = last ? await run.result!.catch(async (e) => Promise.reject(await r.lostOr(e))) : null;
      gpuMs = gpuMs !== null && t?.gpuMs != null ? gpuMs + t.gpuMs : null;
      if (!result) {
        lhs = run.dst;
        continue;
      }
      if (timing) timing.gpuMs = gpuMs;
      if (trace) Object.assign(trace, { plan: lhsSource ? 'new' : 'none', kernel: run.ran.kernel });
      trace?.mark('copyOut');
      if (lhsSource && !chain.layers.some((l) => l.rhs.destroyed)) {
        const call: CallPlan = {
          ...b,
          commands: builders.flatMap((x) => x.commands),
          rhs: layer.rhs,
          input: null,
          ran: run.ran,
          lhsSource,
          lhsMatrix: null, // the chain uploads its CPU lhs
          dst: run.dst,
          label: `gemm chain of ${chain.layers.length}, ${run.dst.rows}x${run.dst.cols}`,
        };
        plans.add({
          input: chain.layers.map((_, j) => snapshotProblem(chainKey(chain, j))),
          rhs: chain.layers.map((l) => l.rhs),
          builders,
          call,
        });
      } else for (const x of builders) freePlan(x);
      return { result, ran: run.ran };
    }
    throw new Error('unreachable');
  } catch (e) {
    for (const x of builders) freePlan(x);
    throw e;
  }
}

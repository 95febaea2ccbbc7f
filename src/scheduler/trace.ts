// Where the wall time of one GPU GEMM goes (pack -> gemm -> output, seen from the caller): a trace of
// the steps of a ctx.gemm() call (gemmOnGpu's and gemmChain's too), each timed with performance.now() as
// the call passes from one to the next. ./gemm.ts and ./call-plan.ts mark the steps; `onTrace` (RunOptions,
// or the context's call options) or QGEMM_TRACE=1 (one line per call on stderr) receive it. Steps follow
// each other without gaps, so their sum is the call's wall time.

import { nodeProcess } from '../runtime.ts';

/**
 * The steps of a call, in order: validation and the plan (kernel choice, pipelines, buffers); the lhs
 * written to the GPU; the commands encoded; queue.submit; the wait until the GPU has done the work
 * (queue.onSubmittedWorkDone, awaited only while tracing); the map of the readback buffer; the copy out
 * of the mapped range and the conversion to the result's typed array.
 */
export const TRACE_STEPS = ['validate', 'lhsWrite', 'encode', 'submit', 'wait', 'map', 'copyOut'] as const;
export type TraceStep = (typeof TRACE_STEPS)[number];

export interface GemmTrace {
  /** 'hit': a plan made by an earlier call served it; 'new': this call made one; 'none': no plan applies. */
  plan: 'hit' | 'new' | 'none';
  kernel: string | null;
  /** Every step of TRACE_STEPS, in order, with its milliseconds. */
  steps: { step: TraceStep; ms: number }[];
  /** The sum of the steps: the call's wall time as traced. */
  totalMs: number;
}

export type TraceListener = (trace: GemmTrace) => void;

/** QGEMM_TRACE=1 in Node: a listener that prints each trace as one line on stderr; else null. */
export function envTraceListener(): TraceListener | null {
  if (nodeProcess()?.env.QGEMM_TRACE !== '1') return null;
  return (t) => {
    const steps = t.steps.map((s) => `${s.step} ${s.ms.toFixed(3)}`).join(', ');
    console.error(`qgemm trace: ${t.kernel ?? '?'} plan ${t.plan}: ${steps} ms; total ${t.totalMs.toFixed(3)} ms`);
  };
}

/** Marks the steps of one call: mark(step) ends `step` now. A step never marked lasts 0 ms. */
export class Tracer {
  private last = performance.now();
  private readonly ms = new Map<TraceStep, number>();
  plan: GemmTrace['plan'] = 'none';
  kernel: string | null = null;

  mark(step: TraceStep): void {
    const now = performance.now();
    this.ms.set(step, (this.ms.get(step) ?? 0) + (now - this.last));
    this.last = now;
  }

  finish(): GemmTrace {
    const steps = TRACE_STEPS.map((step) => ({ step, ms: this.ms.get(step) ?? 0 }));
    return { plan: this.plan, kernel: this.kernel, steps, totalMs: steps.reduce((s, x) => s + x.ms, 0) };
  }
}

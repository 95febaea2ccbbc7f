// Keeps a GPU's clocks up while nothing is measured: the tuner's set-up of each configuration (its
// context, its prepacked operand sets and the pipelines' compile; src/tune-measure.ts measure) leaves
// the GPU idle for a second or two. On an H200 the SM clock fell from 1980 to 1000-1600 MHz in those
// set-ups and took up to 3 s of calls to climb back (bench/results/2026-11-28-h200-clocks.csv), which the
// warm-up after each set-up then had to wait for. Outside pack -> gemm -> output: a spin kernel of its
// own (./heater.wgsl) submitted back to back, as many dispatches a submission as keep it at about
// TARGET_MS.
//
// Unlike the library's GPU calls it does not take the device (./scopes.ts withDevice): the set-up's calls
// hold it while they await their pipelines' compiles, the longest idle part, which is when the heater
// must run. It can do without: each submission pushes its error scopes, encodes, submits and pops them in
// one synchronous run, so its scopes are never open across an await, and whatever scopes another call
// holds open meanwhile lie below them, untouched. A lost device ends it (stop() then rejects with a
// DeviceLostError).

import { DeviceLostError } from '../errors.ts';
import heaterWgsl from './heater.wgsl?raw';
import { getPipeline } from './pipelines.ts';
import { openErrorScope } from './scopes.ts';
import { BufferUsage } from './usage.ts';

const WORKGROUP_SIZE = 64;
/** Workgroups a dispatch: 262,144 invocations, enough to occupy every SM of a large GPU. */
const WORKGROUPS = 4096;
/** A submission's length it adapts to (ms): long enough that the GPU is rarely idle between two. */
const TARGET_MS = 2;
const MAX_DISPATCHES = 256;

export class Heater {
  /** The loop running now and its stop flag; a new one for each start(). */
  private run: { done: Promise<void>; stop: boolean } | null = null;
  /** Dispatches a submission: doubled while a submission takes under TARGET_MS / 2, halved above 2 TARGET_MS. */
  private dispatches = 1;
  private lost: string | null = null;
  /** Submissions made (tests). */
  submissions = 0;

  private constructor(
    private readonly device: GPUDevice,
    private readonly pipeline: GPUComputePipeline,
    private readonly bindGroup: GPUBindGroup,
    private readonly sink: GPUBuffer,
  ) {
    device.lost.then((info) => {
      this.lost = `${info.reason}: ${info.message}`;
    });
  }

  /** A heater on `device`; `rounds`: each invocation's multiply-adds (a CPU emulation gets few). */
  static async create(device: GPUDevice, rounds = 4096): Promise<Heater> {
    const pipeline = await getPipeline(device, {
      id: 'heater',
      source: heaterWgsl,
      entryPoint: 'main',
      overrides: { WORKGROUP_SIZE, ROUNDS: rounds },
    });
    const close = openErrorScope(device, 'the heater');
    let made: { sink: GPUBuffer; bindGroup: GPUBindGroup } | undefined;
    try {
      const sink = device.createBuffer({ size: 4, usage: BufferUsage.STORAGE, label: 'qgemm heater sink' });
      const bindGroup = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: sink } }],
      });
      made = { sink, bindGroup };
    } finally {
      await close(); // its pops run at once, before this await: nothing else runs inside the scopes
    }
    return new Heater(device, pipeline, made.bindGroup, made.sink);
  }

  /** Starts submitting, after a stop() still under way has ended (does nothing where it runs already). */
  start(): void {
    if (this.run && !this.run.stop) return;
    const previous = this.run?.done ?? Promise.resolve();
    const run = { stop: false, done: Promise.resolve() };
    run.done = previous.catch(() => undefined).then(() => this.loop(run));
    run.done.catch(() => undefined); // stop() rethrows it; never an unhandled rejection meanwhile
    this.run = run;
  }

  /** Stops and resolves once its last submission has run; rejects with what ended it early (a lost device). */
  async stop(): Promise<void> {
    const run = this.run;
    if (!run) return;
    run.stop = true;
    try {
      await run.done;
    } finally {
      if (this.run === run) this.run = null;
    }
  }

  /** Stops and frees its buffer. */
  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    this.sink.destroy();
  }

  private async loop(run: { stop: boolean }): Promise<void> {
    while (!run.stop) {
      if (this.lost !== null) throw DeviceLostError.of(this.lost, 'the heater');
      // One synchronous run from the scopes' push to their pop (see the top of this file).
      const close = openErrorScope(this.device, 'the heater');
      let closed: Promise<void>;
      try {
        const encoder = this.device.createCommandEncoder({ label: 'qgemm heater' });
        const pass = encoder.beginComputePass();
        pass.setPipeline(this.pipeline);
        pass.setBindGroup(0, this.bindGroup);
        for (let i = 0; i < this.dispatches; i++) pass.dispatchWorkgroups(WORKGROUPS);
        pass.end();
        this.device.queue.submit([encoder.finish()]);
      } finally {
        closed = close(); // popped whatever happened: never a scope of ours left under another call's
        closed.catch(() => undefined); // awaited below, or the throw above is what ends the loop
      }
      const t0 = performance.now();
      this.submissions++;
      await closed;
      await this.device.queue.onSubmittedWorkDone();
      const ms = performance.now() - t0; // its own work and whatever the set-up submitted meanwhile
      if (ms < TARGET_MS / 2) this.dispatches = Math.min(this.dispatches * 2, MAX_DISPATCHES);
      else if (ms > 2 * TARGET_MS && this.dispatches > 1) this.dispatches >>= 1;
    }
  }
}

// Keeps a GPU's clocks up while nothing is measured: the tuner's set-up of each configuration (its
// context, three prepacked operand sets and the pipelines' compile; src/tune-measure.ts measure) leaves
// the GPU idle for a second or two. On an H200 the SM clock fell from 1980 to 1000-1600 MHz in those
// set-ups and took up to 3 s of calls to climb back (bench/results/2026-11-28-h200-clocks.csv), which the
// warm-up after each set-up then had to wait for. Outside pack -> gemm -> output: a spin kernel of its
// own (./heater.wgsl) submitted back to back, as many dispatches a submission as keep it at about
// TARGET_MS, each submission in the library's error scopes and taking the device as every GPU call
// does (./scopes.ts), so that the set-up's own calls go on between two of them.

import heaterWgsl from './heater.wgsl?raw';
import { getPipeline } from './pipelines.ts';
import { runInErrorScope, withDevice } from './scopes.ts';

const WORKGROUP_SIZE = 64;
/** Workgroups a dispatch: 262,144 invocations, enough to occupy every SM of a large GPU. */
const WORKGROUPS = 4096;
/** A submission's length it adapts to (ms): long enough that the GPU is rarely idle between two. */
const TARGET_MS = 2;
const MAX_DISPATCHES = 256;

export class Heater {
  private running: Promise<void> | null = null;
  private stopping = false;
  /** Dispatches a submission: doubled while a submission takes under TARGET_MS / 2, halved above 2 TARGET_MS. */
  private dispatches = 1;
  /** Submissions made, for tests and the tuner's log. */
  submissions = 0;

  private constructor(
    private readonly device: GPUDevice,
    private readonly pipeline: GPUComputePipeline,
    private readonly bindGroup: GPUBindGroup,
    private readonly sink: GPUBuffer,
  ) {}

  /** A heater on `device`; `rounds`: each invocation's multiply-adds (tests on a CPU emulation use few). */
  static async create(device: GPUDevice, rounds = 4096): Promise<Heater> {
    const pipeline = await getPipeline(device, {
      id: 'heater',
      source: heaterWgsl,
      entryPoint: 'main',
      overrides: { WORKGROUP_SIZE, ROUNDS: rounds },
    });
    return withDevice(device, () =>
      runInErrorScope(
        device,
        () => {
          const sink = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE, label: 'qgemm heater sink' });
          const bindGroup = device.createBindGroup({
            layout: pipeline.getBindGroupLayout(0),
            entries: [{ binding: 0, resource: { buffer: sink } }],
          });
          return new Heater(device, pipeline, bindGroup, sink);
        },
        'the heater',
      ),
    );
  }

  /** Starts submitting (does nothing where it runs already). */
  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.running = this.loop();
    this.running.catch(() => undefined); // stop() rethrows it; never an unhandled rejection meanwhile
  }

  /** Stops and resolves once its last submission has run; throws what stopped it, where a submission failed. */
  async stop(): Promise<void> {
    this.stopping = true;
    const running = this.running;
    this.running = null;
    await running;
  }

  /** Stops and frees its buffer. */
  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    this.sink.destroy();
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const t0 = performance.now();
      await withDevice(this.device, () =>
        runInErrorScope(
          this.device,
          () => {
            const encoder = this.device.createCommandEncoder({ label: 'qgemm heater' });
            const pass = encoder.beginComputePass();
            pass.setPipeline(this.pipeline);
            pass.setBindGroup(0, this.bindGroup);
            for (let i = 0; i < this.dispatches; i++) pass.dispatchWorkgroups(WORKGROUPS);
            pass.end();
            this.device.queue.submit([encoder.finish()]);
          },
          'the heater',
        ),
      );
      this.submissions++;
      await this.device.queue.onSubmittedWorkDone();
      const ms = performance.now() - t0;
      if (ms < TARGET_MS / 2) this.dispatches = Math.min(this.dispatches * 2, MAX_DISPATCHES);
      else if (ms > 2 * TARGET_MS && this.dispatches > 1) this.dispatches >>= 1;
    }
  }
}

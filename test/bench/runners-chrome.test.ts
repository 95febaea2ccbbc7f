// The bench's Chrome rows where Dawn in Node found no adapter (bench/runners.ts startRunners): skipped,
// unless QGEMM_CHROMIUM_ADAPTER names Chrome's profile (tools/chrome-gpu-probe.sh bench sets it to the
// hardware attempt the probe found), which holds "whatever Node's adapter is" (tools/chromium.ts).

import { afterEach, describe, expect, it, vi } from 'vitest';

const startChrome = vi.fn(async () => ({ runners: [], notes: ['stub'] }));
vi.mock('../../bench/impls/chrome.ts', () => ({ startChrome }));
const { startRunners } = await import('../../bench/runners.ts');

const opts = { shapes: [], impls: ['qgemm'], runtimes: ['chrome'], backends: ['webgpu'], modes: ['resident'], seed: 1 } as const;
const none = { kind: 'none', summary: null, ctx: null, note: 'no WebGPU in Node' } as const;
const run = () => startRunners(opts as never, none as never, 'none', 'cpu', () => {});

describe("Chrome rows without Node's adapter", () => {
  afterEach(() => {
    delete process.env.QGEMM_CHROMIUM_ADAPTER;
    startChrome.mockClear();
  });
  it('are skipped, naming why, where no profile is named', async () => {
    const started = await run();
    expect(startChrome).not.toHaveBeenCalled();
    expect(started.unavailable[0].reason).toBe('no WebGPU adapter (hardware or SwiftShader) for Chromium');
  });
  it('start Chrome where QGEMM_CHROMIUM_ADAPTER names its profile', async () => {
    process.env.QGEMM_CHROMIUM_ADAPTER = 'hardware';
    const started = await run();
    expect(startChrome).toHaveBeenCalledTimes(1);
    expect(started.unavailable.map((u) => u.reason)).toEqual(['stub']); // the stub's runners: none, its note said
  });
});

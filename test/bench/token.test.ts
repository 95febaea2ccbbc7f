// The token through a Sequential (bench/token.ts, bundled as dist/node/token.js, which bench/device-run.sh
// runs on a GPU machine), on this machine's adapter with tiny layers: it exits 0 with its output checked
// against the CPU path bit for bit, and writes the JSON the device summary reads (wall back to back and
// after a pause, the layers' GPU times summed, the run's, the kernels). A bad flag, a --json path that is
// not a file in an existing folder, or bad input in the environment is exit 2, in one line. No timing
// thresholds: only the shape of the report.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';

vi.setConfig({ testTimeout: 300_000 });
const gpu = await getGpu();
const dir = mkdtempSync(join(tmpdir(), 'token-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  return releaseGpu();
});

describe('dist/node/token.js', () => {
  it('a bad flag is exit 2 naming it, in one line', () => {
    for (const [args, message] of [
      [['--runs', '0'], /^token: --runs: expected an integer from 1 to 100000/],
      [['--rums', '3'], /^token: Unknown option '--rums'/],
      [['--runs'], /^token: Option '--runs <value>' argument missing/],
      [['--width', '0x10'], /^token: --width: expected an integer from 1 to 32768/], // was 16
      [['--paused', ''], /^token: --paused: expected an integer/], // was 0
      [['--width', '100000'], /^token: --width: expected an integer from 1 to 32768/], // was a RangeError's stack
      [['--layers', '1000', '--width', '32768'], /^token: --layers x --width²: .* exceed 4 GiB/],
      [['--width', '64', '--width', '32'], /^token: --width: given twice/], // the last one won
      [['--json', join(dir, 'absent', 'x.json')], /^token: --json: .* not a file in an existing folder/], // was ENOENT after the run
      [['--json', dir], /^token: --json: .* not a file in an existing folder/],
    ] as const) {
      const r = spawnSync(process.execPath, ['dist/node/token.js', ...args], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('bad input in the environment is exit 2 in one line, not a stack', () => {
    const env = { ...process.env, QGEMM_DAWN_TOGGLES: 'bogus' };
    const r = spawnSync(process.execPath, ['dist/node/token.js', '--width', '16', '--layers', '1', '--runs', '1', '--paused', '0'], {
      encoding: 'utf8',
      env,
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^token: QGEMM_DAWN_TOGGLES: unknown Dawn toggle "bogus"/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.skipIf(!gpu)('runs a token through two layers, verified, and writes its report', () => {
    const json = join(dir, 'token.json');
    const out = execFileSync(
      process.execPath,
      ['dist/node/token.js', '--layers', '2', '--width', '64', '--runs', '3', '--paused', '1', '--json', json],
      { encoding: 'utf8' },
    );
    expect(out).toMatch(/^token: 2 x 64 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| yes$/m);
    const r = JSON.parse(readFileSync(json, 'utf8'));
    expect(r).toMatchObject({ runs: 3, verified: true, mismatches: 0 });
    for (const key of ['wallMs', 'wallMinMs', 'afterPauseWallMs', 'sumGpuMs', 'wallOverSumGpu']) expect(r[key]).toBeGreaterThan(0);
    expect(r.kernels.length).toBeGreaterThan(0);
    expect(r.adapter.device).toBe(gpu!.summary.device);
  });
});

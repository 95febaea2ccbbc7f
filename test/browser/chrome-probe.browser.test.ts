// Browser tier of the Chrome-on-a-GPU-server probe (tools/chrome-gpu-probe.mjs): the real probe, run
// against the system Chromium with SwiftShader's ICD in place of NVIDIA's. With `--accept swiftshader`
// (SwiftShader counted as hardware) it must stop after the first attempt that gives the adapter; without
// it, every attempt asked for runs and the exit code says none gave a hardware adapter. Each record holds
// chrome://gpu's WebGPU line and the adapter's info, and the table comes last. The attempts that need a
// carried Xvfb (D) or an unprivileged user (C) are left to bench/README.md's rehearsal. In CI a missing
// Chromium fails; locally it skips with a notice.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AttemptRecord } from '../../tools/chrome-probe/attempts.mjs';
import { chromiumPath, INSTALL_HINT } from '../../tools/chromium.ts';

const CI = process.env.CI === 'true';
const ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const chromium = chromiumPath();
if (!chromium) {
  if (CI) throw new Error(`the browser tests must run in CI, but Chromium is missing: \`${INSTALL_HINT}\``);
  console.warn(`\n[browser test] SKIPPING the Chrome probe test: Chromium not found. Install: \`${INSTALL_HINT}\`\n`);
}

function probe(out: string, extra: string[]) {
  const r = spawnSync(
    process.execPath,
    ['tools/chrome-gpu-probe.mjs', '--chrome', chromium!, '--icd', ICD, '--out', out, '--timeout', '60', ...extra],
    { encoding: 'utf8', timeout: 240_000 },
  );
  const json = JSON.parse(readFileSync(join(out, 'chrome-gpu-probe.json'), 'utf8')) as {
    hardware: string | null;
    records: AttemptRecord[];
  };
  return { status: r.status, stdout: r.stdout, json };
}

describe.skipIf(!chromium)('tools/chrome-gpu-probe.mjs on SwiftShader', () => {
  const dirs: string[] = [];
  const outDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'qgemm-probe-test-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('stops at the first attempt whose adapter counts as hardware', () => {
    const { status, stdout, json } = probe(outDir(), ['--attempts', 'A,F', '--accept', 'swiftshader']);
    expect(status, stdout).toBe(0);
    expect(json.hardware).toBe('A');
    expect(json.records.map((r) => r.id)).toEqual(['A']);
    const a = json.records[0];
    expect(a.error).toBeUndefined();
    expect(a.adapter).toMatchObject({ vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true });
    expect(a.adapter?.features).not.toContain('chromium-experimental-subgroup-matrix');
    expect(a.gpuLines?.some((l) => l.startsWith('WebGPU:'))).toBe(true);
    expect(a.gpuLines).toContain('Skia Backend: GaneshVulkan');
    expect(stdout.trimEnd().split('\n').slice(-5)).toEqual([
      '| attempt | adapter | reason |',
      '| --- | --- | --- |',
      '| A | google / swiftshader (SwiftShader Device (Subzero)), fallback | counted as hardware (--accept swiftshader); subgroup matrices: no |',
      '',
      'hardware adapter with attempt A',
    ]);
  });

  it('runs every attempt asked for when none gives a hardware adapter, and exits 1', () => {
    const { status, stdout, json } = probe(outDir(), ['--attempts', 'A,F']);
    expect(status, stdout).toBe(1);
    expect(json.hardware).toBeNull();
    expect(json.records.map((r) => r.id)).toEqual(['A', 'F']);
    const f = json.records[1].adapter!;
    expect(f).toMatchObject({ architecture: 'swiftshader', isFallbackAdapter: true });
    // the level the adapter has, not the one F asked for: Chromium may answer a compatibility request with core
    expect(f.featureLevel).toBe(f.features.includes('core-features-and-limits') ? 'core' : 'compatibility');
    expect(stdout).toContain(
      '| F | google / swiftshader (SwiftShader Device (Subzero)), fallback | fallback adapter only; chrome://gpu WebGPU:',
    );
    expect(stdout.trimEnd().endsWith('no attempt gave a hardware adapter')).toBe(true);
  });
});

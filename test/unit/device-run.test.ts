// bench/device-run.sh, the one command of a GPU run, in its two forms (core, extras): read as the shell
// would run it, every bench command line in it parses with the bench's own CLI (bench/cli.ts parseCli:
// flags, implementations, shapes, bit depths), its JSON files are the ones the closing summary reads, and
// its stage limits fit its call; then run whole, here, with every program it calls stubbed (node, xz, dpkg,
// ldconfig, nvidia-smi): $OUT ends with at most the 8 files a GPU machine gives back, the reports in
// results.tar, and a failed stage is named in the exit status. A flag the bench no longer takes, or a
// report left out of the tar, would otherwise surface only on the GPU machine.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCli } from '../../bench/cli.ts';

const script = readFileSync('bench/device-run.sh', 'utf8').replace(/\\\n\s*/g, ''); // continuation lines joined
const dir = mkdtempSync(join(tmpdir(), 'device-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tuning = join(dir, 'tuning.json');
writeFileSync(tuning, '{}');

const shapes = /^SHAPES=(\S+)$/m.exec(script)?.[1] ?? '';

/** A bench command line of the script, its variables given values and split into arguments. */
function argsOf(line: string): string[] {
  const cmd = line
    .slice(line.indexOf('dist/node/bench.js') + 'dist/node/bench.js'.length)
    .split(/ >| 2>&1| \|/)[0]
    .replaceAll('"$SHAPES"', shapes)
    .replace(/\$\{TUNING:\+--tuning "\$TUNING"\}/g, `--tuning ${tuning}`)
    .replace(/"\$T\/([^"]+)"/g, (_, f) => join(dir, f))
    .replace(/"\$OUT\/([^"]+)"/g, (_, f) => join(dir, f));
  return cmd.trim().split(/\s+/);
}

const benchLines = script.split('\n').filter((l) => l.includes('dist/node/bench.js'));
const extrasAt = script.indexOf('if [ "$MODE" = extras ]; then');
/** The script's code lines (no comments) before or after the extras' branch ends. */
const code = (part: 'extras' | 'core') => {
  const end = script.indexOf('\nfi\n', extrasAt);
  const text = part === 'extras' ? script.slice(extrasAt, end) : script.slice(end);
  return text
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .join('\n');
};
const limits = (text: string) => [...text.matchAll(/timeout -k 5 (\d+) /g)].map((m) => Number(m[1]));

describe('bench/device-run.sh', () => {
  it('runs the bench four times: two passes (core), robustness off and the 4-bit pass (extras)', () => {
    expect(benchLines).toHaveLength(4);
    expect(code('extras').match(/dist\/node\/bench\.js/g)).toHaveLength(2);
    expect(code('core').match(/dist\/node\/bench\.js/g)).toHaveLength(2);
  });

  it('every bench command line parses with the bench CLI, and writes its JSON after every cell', () => {
    const [norobust, u4, pass1, pass2] = benchLines.map((l) => {
      const plan = parseCli(argsOf(l));
      if (plan === 'help') throw new Error(`asked for help: ${l}`);
      expect(plan.checkpoint, l).toBe(true);
      return plan;
    });
    // Robustness off: qgemm alone, the toggle added to the audited one, on shapes of the passes.
    expect(norobust.options.impls).toEqual(['qgemm']);
    expect(benchLines[0]).toMatch(/^\s*QGEMM_DAWN_TOGGLES=disable_workgroup_init,disable_robustness timeout -k 5 \d+ /);
    const passShapes = pass1.options.shapes.map((x) => JSON.stringify(x));
    for (const x of norobust.options.shapes) expect(passShapes).toContain(JSON.stringify(x));
    expect(pass1.options.shapes.length).toBe(shapes.split(',').length);
    expect(pass2.options.shapes).toEqual(pass1.options.shapes);
    expect(pass1.options.modes).toEqual(['resident']);
    expect(pass1.options.tuning).toEqual({});
    // The first pass has the after-pause rows, the second not (its budget reaches the largest squares).
    expect(pass1.options.policy.afterPauseRows).toBeUndefined();
    expect(pass2.options.policy.afterPauseRows).toBe(false);
    expect(u4.options.rhsBits).toEqual([8, 4]);
    expect(u4.options.impls).toEqual(['qgemm', 'onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4']);
    expect(u4.options.shapes.map((s) => `${s.m}x${s.n}x${s.k}`)).toEqual(['1x11008x11008', '128x11008x11008']);
  });

  it('the summary reads the JSON files the stages write', () => {
    const written = benchLines.flatMap((l) => [...l.matchAll(/--json "\$OUT\/([^"]+)"/g)].map((m) => m[1]));
    expect(written).toEqual(['bench-norobust.json', 'bench-u4.json', 'bench1.json', 'bench2.json']);
    expect(code('core')).toContain('finish "$OUT/bench1.json" "$OUT/bench2.json" --verify "$OUT/verify.json" --tune "$OUT/tune.json"');
    expect(code('extras')).toContain(
      'finish "$@" --u4 "$OUT/bench-u4.json" --norobust "$OUT/bench-norobust.json" --token "$OUT/token.json"',
    );
    expect(code('extras')).toContain(
      'for f in bench1.json bench2.json; do if [ -n "$CORE" ] && [ -s "$CORE/$f" ]; then set -- "$@" "$CORE/$f"; fi; done',
    );
    expect(script).toContain('"$N" bench/device-summary.mjs "$@"');
    expect(script).toContain('dist/node/token.js --layers 4 --width 4096 --runs 50 --json "$OUT/token.json"');
    expect(script).toContain('verify --backend webgpu --json > "$OUT/verify.json"');
    expect(script).toMatch(/tune --backend webgpu .*--json > "\$OUT\/tune\.json"/);
  });

  it("reaches every stage's exit status: no pipe hides it, each `logged` right after its command", () => {
    expect(script).not.toMatch(/verify failed[^\n]*exit 1/);
    for (const stage of ['verify "$V" "$OUT/verify.json"', 'tune $? "$OUT/tune.json"']) expect(script).toContain(`ended ${stage}`);
    expect(script).toContain('logged() {\n  B=$?\n');
    expect(script).toContain('ended "$1" "$B" "$3"');
    for (const stage of [
      '"bench pass 1" "$T/bench.out" "$OUT/bench1.json"',
      '"bench pass 2" "$T/bench.out" "$OUT/bench2.json"',
      '"bench 4-bit" "$T/bench.out" "$OUT/bench-u4.json"',
      'token "$T/token.out" "$OUT/token.json"',
      '"bench without robustness" "$T/bench.out" "$OUT/bench-norobust.json"',
    ]) {
      const at = script.indexOf(`logged ${stage}`);
      expect(at, stage).toBeGreaterThan(0);
      expect(script.lastIndexOf('\n', at - 1), `${stage}: right after its command`).toBe(
        script.indexOf('\n', script.lastIndexOf('.js', at)),
      );
    }
    expect(script).not.toMatch(/(bench|token)\.js\b[^\n]*\|/);
  });

  it('its stage limits fit the call: core within 9 minutes, extras within 4', () => {
    // Each limit with a kill 5 s after its TERM (a process that ignores TERM cannot hold the run).
    expect(code('core') + code('extras')).not.toMatch(/\btimeout (?!-k 5 )/);
    const core = limits(code('core'));
    expect(core).toEqual([75, 190, 120, 115]); // verify, tune, the passes
    // about 15 s to unpack, and 5 s of kill grace for each stage that may time out
    expect(15 + core.reduce((a, b) => a + b) + 5 * core.length).toBeLessThanOrEqual(540);
    const extras = limits(code('extras'));
    expect(extras).toEqual([15, 30, 45, 115]); // the core table's check, the token, robustness off, the 4-bit pass
    expect(15 + extras.reduce((a, b) => a + b) + 5 * extras.length).toBeLessThanOrEqual(240);
    // Each bench stage's budget leaves its last cell at least 10 s before the limit's TERM.
    for (const l of benchLines) {
      const limit = Number(/timeout -k 5 (\d+) /.exec(l)?.[1]);
      const budget = Number(/--budget (\d+)/.exec(l)?.[1]);
      expect(limit - budget, l).toBeGreaterThanOrEqual(10);
    }
  });

  describe('run whole, every program it calls stubbed', () => {
    const root = join(dir, 'payload');
    const bin = join(dir, 'bin');
    mkdirSync(join(root, 'bench'), { recursive: true });
    mkdirSync(join(root, '.device'), { recursive: true });
    mkdirSync(bin, { recursive: true });
    copyFileSync('bench/device-run.sh', join(root, 'bench/device-run.sh'));
    copyFileSync('bench/device-summary.mjs', join(root, 'bench/device-summary.mjs'));
    // The stub of every program the stages run on the payload's Node; the summary runs on the real Node.
    const stub = join(dir, 'stub.mjs');
    writeFileSync(
      stub,
      `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const [program, ...args] = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
if (opt('--tuning') !== undefined && !existsSync(opt('--tuning'))) process.exit(2); // a path split at a space
const json = opt('--json') ?? opt('--out');
const [failing, code, report] = (process.env.STUB_FAIL ?? '').split(':');
const jsonOut = json ?? (program === 'bin/qgemm.mjs' && args[0] === 'verify' ? 'verify.json' : undefined);
if (failing && jsonOut && jsonOut.endsWith(failing)) {
  if (report) console.log(JSON.stringify({ ok: false, rows: [{ kernel: 'gemv', problems: 4, mismatches: 1 }] })); // a mismatch
  process.exit(Number(code ?? 1));
}
if (program === 'bin/qgemm.mjs' && args[0] === 'info') {
  const table = readFileSync(opt('--tuning'), 'utf8');
  if (table.includes('other')) { console.error('qgemm: error: --tuning.adapter: the table was measured on another adapter'); process.exit(2); }
  console.log(JSON.stringify({ adapter: process.env.STUB_NO_ADAPTER ? null : { vendor: 'nvidia' } }, null, 2));
  process.exit(0);
}
if (opt('--tuning') !== undefined && readFileSync(opt('--tuning'), 'utf8').includes('other')) process.exit(2); // a refused table reached a bench
const row = { impl: 'qgemm', backend: 'webgpu', runtime: 'node', mode: 'resident', m: 1, n: 4096, k: 4096, gpuMedianMs: 0.02, loop: 'back-to-back', kernel: 'gemv', verified: true };
if (program === 'bin/qgemm.mjs' && args[0] === 'verify') console.log(JSON.stringify({ ok: true, rows: [{ kernel: 'gemv', problems: 4, mismatches: 0 }] }));
else if (program === 'bin/qgemm.mjs' && args[0] === 'tune') {
  writeFileSync(json, JSON.stringify({ entries: [] }) + (process.env.STUB_TABLE ?? ''));
  console.log(JSON.stringify({ table: { entries: [] }, refused: [] }));
} else if (program === 'dist/node/bench.js') writeFileSync(json, JSON.stringify({ runs: [row] }));
else if (program === 'dist/node/token.js') writeFileSync(json, JSON.stringify({ what: 'one token', verified: true, wallMs: 0.5 }));
else process.exit(3);
`,
    );
    const node = `#!/bin/sh\ncase "$1" in bench/device-summary.mjs) exec "${process.execPath}" "$@" ;; *) exec "${process.execPath}" "${stub}" "$@" ;; esac\n`;
    writeFileSync(join(root, '.device/node.xz'), node); // the xz stub below unpacks by copying
    writeFileSync(join(root, '.device/dawn.node.xz'), 'dawn');
    const stubs: Record<string, string> = {
      xz: '[ "$1" = -dc ] && exec cat "$2"; exit 1',
      dpkg: 'exit 0',
      ldconfig: 'exit 0',
      'nvidia-smi':
        'case "$*" in *-lms*) while :; do echo "2026/11/29 10:00:00.000, 1980 MHz"; sleep 1; done ;; *) echo "name, driver_version"; echo "NVIDIA H200, 580" ;; esac',
    };
    for (const [name, body] of Object.entries(stubs)) {
      writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    }

    const icd = join(dir, 'nvidia_icd.json');
    writeFileSync(icd, '{}');
    const runForm = (form: 'core' | 'extras', fail?: string, suffix = '', env: Record<string, string> = {}) => {
      const out = join(dir, `out-${form}-${fail ?? 'ok'}${suffix}`);
      const tmp = join(dir, `tmp-${form}-${fail ?? 'ok'}${suffix}`);
      mkdirSync(tmp);
      const r = spawnSync('sh', ['bench/device-run.sh', form], {
        cwd: root,
        encoding: 'utf8',
        env: {
          PATH: `${bin}:${process.env.PATH}`,
          OUT: out,
          DEVICE_TMP: tmp,
          VK_DRIVER_FILES: icd,
          ...env,
          ...(fail ? { STUB_FAIL: fail } : {}),
        },
      });
      const tar = readdirSync(out).includes('results.tar')
        ? execFileSync('tar', ['-tf', join(out, 'results.tar')], { encoding: 'utf8' })
            .trim()
            .split('\n')
            .sort()
        : [];
      return { status: r.status, stdout: r.stdout, files: readdirSync(out).sort(), tar, out };
    };

    it('core: verify, tune, both passes; results.tar, clocks.csv and run.log left, exit 0', () => {
      const r = runForm('core');
      expect(r.status, r.stdout).toBe(0);
      expect(r.files).toEqual(['clocks.csv', 'results.tar', 'run.log']);
      expect(r.tar).toEqual(['bench1.json', 'bench2.json', 'gpu.csv', 'tune.json', 'tuning.json', 'verify.json']);
      expect(r.stdout).toContain('verify: 1 of 1 kernels exact');
      expect(r.stdout).toMatch(/^1x4096x4096 \| 0\.0200 \| 0\.0200 \| 0% \| gemv \|/m);
    });

    it('extras: the token, robustness off, the 4-bit pass; the same three files, exit 0', () => {
      const r = runForm('extras');
      expect(r.status, r.stdout).toBe(0);
      expect(r.files).toEqual(['clocks.csv', 'results.tar', 'run.log']);
      expect(r.tar).toEqual(['bench-norobust.json', 'bench-u4.json', 'gpu.csv', 'token.json']);
      expect(r.stdout).toContain('token: one token: wall 0.5000 ms');
    });

    it('a stage that fails is named, the rest run, and what they wrote is packed', () => {
      const r = runForm('core', 'bench1.json');
      expect(r.status).toBe(1);
      expect(r.stdout).toContain('device-run: bench pass 1 wrote no bench1.json');
      expect(r.stdout).toContain('device-run: failed or incomplete: bench pass 1');
      expect(r.tar).toEqual(['bench2.json', 'gpu.csv', 'tune.json', 'tuning.json', 'verify.json']);
    });

    it('a stage killed after its TERM went unheeded (137) is said to have timed out, not to have failed verify', () => {
      const r = runForm('core', 'verify.json:137');
      expect(r.status).toBe(1);
      expect(r.stdout).toContain('device-run: verify TIMED OUT');
      expect(r.stdout).not.toContain('verify FAILED');
      const mismatch = runForm('core', 'verify.json:1:report');
      expect(mismatch.stdout).toContain('verify FAILED: see verify.json');
      expect(mismatch.tar).toContain('verify.json');
      // exit 1 without a report is the machine's failure (no adapter), not a mismatch; the empty file is not left
      const machine = runForm('core', 'verify.json:1');
      expect(machine.stdout).toContain('verify FAILED without a report');
      expect(machine.files).toEqual(['clocks.csv', 'results.tar', 'run.log']);
    });

    it('without the NVIDIA Vulkan manifest, says so and runs no stage', () => {
      const r = runForm('core', undefined, ' no icd', { VK_DRIVER_FILES: join(dir, 'absent_icd.json') });
      expect(r.status).toBe(1);
      expect(r.stdout).toContain(`no Vulkan driver manifest (nvidia_icd.json) found at ${join(dir, 'absent_icd.json')}`);
      expect(r.stdout).not.toContain('verify');
    });

    it("extras with the core run's results.tar in .device/core.tar: its table checked and used, its passes beside robustness off", () => {
      const core = runForm('core', undefined, ' for extras');
      copyFileSync(join(core.out, 'results.tar'), join(root, '.device/core.tar'));
      try {
        const r = runForm('extras', undefined, ' with core');
        expect(r.status, r.stdout).toBe(0);
        expect(r.stdout).toContain("device-run: tuning: the core run's tuning.json");
        expect(r.stdout).toMatch(/^1x4096x4096 \| 0\.0200 \| 0\.0200 \| 0% \| gemv \|/m);
        // a table this adapter refuses (another GPU's) is said, and the benches run without it
        const other = runForm('core', undefined, ' other table', { STUB_TABLE: ' other' });
        copyFileSync(join(other.out, 'results.tar'), join(root, '.device/core.tar'));
        const refused = runForm('extras', undefined, ' refused table');
        expect(refused.status, refused.stdout).toBe(0);
        expect(refused.stdout).toContain(
          "tuning: the core run's tuning.json not taken (qgemm info exit 2), the benches run without it: qgemm: error: --tuning.adapter",
        );
        // no adapter to check it on: not taken either (qgemm info exits 0 there, its adapter null)
        copyFileSync(join(core.out, 'results.tar'), join(root, '.device/core.tar'));
        const unchecked = runForm('extras', undefined, ' no adapter', { STUB_NO_ADAPTER: '1' });
        expect(unchecked.stdout).toContain("tuning: the core run's tuning.json not taken (qgemm info exit 0, no adapter)");
      } finally {
        rmSync(join(root, '.device/core.tar'));
      }
    });

    it('folders with a space in their names: the table reaches both passes as one argument', () => {
      const r = runForm('core', undefined, ' B');
      expect(r.status, r.stdout).toBe(0);
      expect(r.tar).toEqual(['bench1.json', 'bench2.json', 'gpu.csv', 'tune.json', 'tuning.json', 'verify.json']);
    });

    it('a payload without Node is an unpack failure, said as such, before any stage', () => {
      const saved = readFileSync(join(root, '.device/node.xz'));
      rmSync(join(root, '.device/node.xz'));
      try {
        const r = runForm('core', 'unpack');
        expect(r.status).toBe(1);
        expect(r.stdout).toContain('device-run: unpack FAILED');
        expect(r.stdout).not.toContain('verify');
      } finally {
        writeFileSync(join(root, '.device/node.xz'), saved);
      }
    });

    it('refuses a form it does not know, writing nothing', () => {
      const r = spawnSync('sh', ['bench/device-run.sh', 'all'], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, OUT: join(dir, 'none') },
      });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('usage: OUT=folder sh bench/device-run.sh [core|extras]');
      expect(readdirSync(dir)).not.toContain('none');
    });
  });
});

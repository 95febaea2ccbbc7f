// bench/device-run.sh, the one command of a GPU run, read as the shell would run it: every bench command
// line in it parses with the bench's own CLI (bench/cli.ts parseCli: flags, implementations, shapes,
// bit depths), its JSON files are the ones the closing summary reads, and its stage limits fit 9 minutes.
// A flag the bench no longer takes would otherwise surface only on the GPU machine.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    .replaceAll('$TUNING', `--tuning ${tuning}`)
    .replace(/\$\(\(LEFT - 10\)\)/g, '35')
    .replace(/"\$OUT\/([^"]+)"/g, (_, f) => join(dir, f));
  return cmd.trim().split(/\s+/);
}

const benchLines = script.split('\n').filter((l) => l.includes('dist/node/bench.js'));

describe('bench/device-run.sh', () => {
  it('runs the bench four times: two passes, robustness off and the 4-bit pass', () => {
    expect(benchLines).toHaveLength(3); // the passes' loop body, robustness off, the 4-bit pass
    expect(script).toMatch(/for pass in 1 2; do/);
  });

  it('every bench command line parses with the bench CLI', () => {
    const [passes, norobust, u4] = benchLines.map((l) => parseCli(argsOf(l)));
    if (passes === 'help' || norobust === 'help' || u4 === 'help') throw new Error('a command line asked for help');
    // Robustness off: qgemm alone, the toggle added to the audited one, on shapes of the passes.
    expect(norobust.options.impls).toEqual(['qgemm']);
    expect(benchLines[1]).toMatch(/^\s*QGEMM_DAWN_TOGGLES=disable_workgroup_init,disable_robustness timeout -k 5 30 /);
    const passShapes = passes.options.shapes.map((x) => JSON.stringify(x));
    for (const x of norobust.options.shapes) expect(passShapes).toContain(JSON.stringify(x));
    expect(passes.options.shapes.length).toBe(shapes.split(',').length);
    expect(passes.options.modes).toEqual(['resident']);
    expect(passes.options.tuning).toEqual({});
    expect(u4.options.rhsBits).toEqual([8, 4]);
    expect(u4.options.impls).toEqual(['qgemm', 'onnxruntime-webgpu-matmulnbits8', 'onnxruntime-webgpu-matmulnbits4']);
    expect(u4.options.shapes.map((s) => `${s.m}x${s.n}x${s.k}`)).toEqual(['1x11008x11008', '128x11008x11008']);
  });

  it('the summary reads the JSON files the bench commands write', () => {
    const written = benchLines.flatMap((l) => [...l.matchAll(/--json "\$OUT\/([^"]+)"/g)].map((m) => m[1]));
    expect(written).toEqual(['bench$pass.json', 'bench-norobust.json', 'bench-u4.json']);
    const summary = script.split('\n').find((l) => /^\$N bench\/device-summary\.mjs/.test(l)) ?? '';
    expect(summary).toContain(
      '"$OUT/bench1.json" "$OUT/bench2.json" --u4 "$OUT/bench-u4.json" --verify "$OUT/verify.json" --tune "$OUT/tune.json" --norobust "$OUT/bench-norobust.json" --token "$OUT/token.json"',
    );
    expect(script).toContain('dist/node/token.js --layers 4 --width 4096 --runs 50 --json "$OUT/token.json"');
    // The files the verify and tune stages write are the ones it reads.
    expect(script).toContain('verify --backend webgpu --json > "$OUT/verify.json"');
    expect(script).toMatch(/tune --backend webgpu .*--json > "\$OUT\/tune\.json"/);
  });

  it('goes on after a failed verify, and exits non-zero at the end where any stage failed', () => {
    expect(script).not.toMatch(/verify failed[^\n]*exit 1/);
    expect(script.trimEnd().split('\n').at(-1)).toBe('[ -z "$FAILED" ]');
    // Every stage's exit status reaches `ended` (no pipe hides it), with the JSON it writes.
    for (const stage of ['verify "$V" "$OUT/verify.json"', 'tune $? "$OUT/tune.json"']) expect(script).toContain(`ended ${stage}`);
    // The stages whose output goes to a file reach it through `logged`, run right after each: $? on entry.
    expect(script).toContain('logged() {\n  B=$?\n');
    expect(script).toContain('ended "$1" "$B" "$3"');
    for (const stage of [
      '"bench pass $pass" /tmp/bench.out "$OUT/bench$pass.json"',
      '"bench 4-bit" /tmp/bench.out "$OUT/bench-u4.json"',
      'token /tmp/token.out "$OUT/token.json"',
      '"bench without robustness" /tmp/bench.out "$OUT/bench-norobust.json"',
    ]) {
      const at = script.indexOf(`  logged ${stage}`);
      expect(at, stage).toBeGreaterThan(0);
      expect(script.lastIndexOf('\n', at - 1), `${stage}: right after its command`).toBe(
        script.indexOf('\n', script.lastIndexOf('.js', at)),
      );
    }
    expect(script).not.toMatch(/(bench|token)\.js\b[^\n]*\|/);
  });

  it('its stage limits fit 9 minutes, the 4-bit pass in what is left', () => {
    // Each limit with a kill 5 s after its TERM (a process that ignores TERM cannot hold the run).
    const code = script
      .split('\n')
      .filter((l) => !l.trim().startsWith('#'))
      .join('\n');
    expect(code).not.toMatch(/\btimeout (?!-k 5 )/);
    const limits = [...script.matchAll(/timeout -k 5 (\d+) /g)].map((m) => Number(m[1]));
    expect(limits).toEqual([60, 220, 110, 30, 30]); // verify, tune, each bench pass, the token, robustness off
    const cap = Number(/LEFT=\$\(\( (\d+) -/.exec(script)?.[1]);
    // unpack about 15 s, and 5 s of kill grace for each stage that may time out: at worst the last are skipped
    expect(60 + 220 + 2 * 110 + 15 + 4 * 5).toBeLessThanOrEqual(cap);
    expect(cap).toBeLessThanOrEqual(540);
    // The token and robustness off run only where 60 and 90 s are left: each ends before the cap.
    const gates = [...script.matchAll(/if \[ "\$LEFT" -ge (\d+) \]/g)].map((m) => Number(m[1]));
    expect(gates).toEqual([60, 90, 45]);
  });
});

// The short tables bench/device-run.sh prints last (bench/device-summary.mjs), on bench JSON shaped as
// the harness writes it: each `resident` row has an after-pause row beside it with no GPU time, which
// the table must not take for the back-to-back row's; a qgemm row not verified is marked; the 4-bit pass
// has its own table (with the walls of qgemm's 8-bit and MatMulNBits-8's rows); verify's and the tuner's
// reports come first; the passes' clock warm-ups are summed up; the token through a Sequential comes last.
// A file of the wrong shape (null, rows that are not objects, a token report given as a bench pass) is
// read as no report, never a crash.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'device-summary-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const row = (impl: string, m: number, n: number, gpuMedianMs: number | null, extra: Record<string, unknown> = {}) => ({
  impl,
  backend: 'webgpu',
  runtime: 'node',
  mode: 'resident',
  m,
  n,
  k: n,
  gpuMedianMs,
  loop: 'back-to-back',
  ...extra,
});
/** A back-to-back row and its after-pause row (wall time only), in the harness's order. */
const pair = (impl: string, m: number, n: number, ms: number, extra: Record<string, unknown> = {}) => [
  row(impl, m, n, ms, extra),
  row(impl, m, n, null, { ...extra, loop: 'after-pause' }),
];

function writeJson(name: string, value: unknown): string {
  const f = join(dir, name);
  writeFileSync(f, JSON.stringify(value));
  return f;
}
const write = (name: string, runs: unknown[]) => writeJson(name, { runs });

const summary = (...args: string[]) => execFileSync(process.execPath, ['bench/device-summary.mjs', ...args], { encoding: 'utf8' });

describe('bench/device-summary.mjs', () => {
  const p1 = write('p1.json', [
    ...pair('qgemm', 4096, 4096, 2, { kernel: 'sgmat-128x128-w4x2-k64-b2', verified: true }),
    ...pair('onnxruntime-webgpu-matmulnbits8', 4096, 4096, 3, { rhsBits: 8 }),
  ]);
  const p2 = write('p2.json', [...pair('qgemm', 4096, 4096, 2.5, { kernel: 'sgmat-128x128-w4x2-k64-b2', verified: true })]);

  it('takes GPU times from the back-to-back rows, not their after-pause twins', () => {
    const line = summary(p1, p2)
      .split('\n')
      .find((l) => l.startsWith('4096x4096x4096'));
    // 2 and 2.5 ms: 25% apart; 2 * 4096^3 ops in 2 ms = 68.7 TOPS; onnxruntime 3 ms.
    expect(line).toBe('4096x4096x4096 | 2.000 | 2.500 | 25% | sgmat-128x128-w4x2-k64-b2 | 68.7 | - | 3.000');
  });

  it("names each pass's kernel where the passes ran different ones, and the tuning table the bench ran", () => {
    const a = writeJson('a.json', {
      adapter: { tuning: 'table tuning.json, 14 entries' },
      runs: pair('qgemm', 2048, 2048, 0.3, { kernel: 'sgmat-64x64', verified: true }),
    });
    const b = writeJson('b.json', {
      adapter: { tuning: 'table tuning.json, 14 entries' },
      runs: pair('qgemm', 2048, 2048, 0.2, { kernel: 'sgmat-64x64-sk', verified: true }),
    });
    const out = summary(a, b);
    expect(out).toContain('2048x2048x2048 | 0.3000 | 0.2000 | 50% | sgmat-64x64 / sgmat-64x64-sk | 85.9 |');
    expect(out).toContain("qgemm's tuning table: table tuning.json, 14 entries");
    expect(summary(p1, p2)).not.toContain('tuning table'); // reports without the field
  });

  it('prints the 4-bit pass as its own table, or says it is missing', () => {
    const u4 = write('u4.json', [
      ...pair('qgemm', 128, 11008, 0.4, { rhsBits: 8, kernel: 'sgmat-64x64', verified: true, medianMs: 0.9 }),
      ...pair('qgemm', 128, 11008, 0.3, { rhsBits: 4, kernel: 'sgmat-64x64-u4', verified: true }),
      ...pair('onnxruntime-webgpu-matmulnbits8', 128, 11008, 0.8, { rhsBits: 8, medianMs: 2.5 }),
      ...pair('onnxruntime-webgpu-matmulnbits4', 128, 11008, 0.7, { rhsBits: 4 }),
    ]);
    const out = summary(p1, p2, '--u4', u4);
    expect(out).toContain('128x11008x11008 | 0.4000 | sgmat-64x64 | 0.3000 | sgmat-64x64-u4 | 0.75x | 0.8000 | 0.7000 | 0.9000, 2.500');
    expect(out).not.toMatch(/^128x11008x11008 \| -/m); // not in the 8-bit table
    expect(summary(p1, p2, '--u4', join(dir, 'absent.json'))).toContain('(no 4-bit pass: see run.log)');
  });

  it("sums up the passes' clock warm-ups, and counts the rows whose calls never settled", () => {
    const warmed = write('warmed.json', [
      ...pair('qgemm', 4096, 4096, 2, { warm: { ms: 600, steady: true } }),
      ...pair('tfjs-webgpu-f32', 4096, 4096, 5, { warm: { ms: 2000, steady: false } }),
      ...pair('qgemm', 1, 4096, 0.1, { warm: { ms: 520, steady: true } }),
    ]);
    expect(summary(warmed, p2)).toContain('warm-ups: 3 rows, median 0.60 s, longest 2.00 s, 1 not steady');
    expect(summary(p1, p2)).not.toContain('warm-ups:'); // rows without a warm-up (an older bench)
  });

  it('a tune whose every winner was refused is a report: its refusals printed', () => {
    const tune = writeJson('refused.json', { table: { entries: [] }, refused: [{ id: 'sgmat-64x64', detail: '3 mismatches' }] });
    const out = summary(p1, p2, '--tune', tune);
    expect(out).toContain('tune: class shape | winner');
    expect(out).toContain('  refused sgmat-64x64: 3 mismatches');
    expect(out).not.toContain('tune: no report');
  });

  it('well-formed JSON of the wrong shape is "no report" or a dash, never a crash', () => {
    const nul = writeJson('null.json', null);
    const nullRow = writeJson('null-row.json', { runs: [null, 5, row('qgemm', 64, 64, 'x' as never)] });
    const token = writeJson('token-as-bench.json', { what: 'one token', runs: 2, wallMs: '7', kernels: 'gemv' });
    const out = summary(nul, nullRow, '--norobust', token, '--u4', nul, '--verify', token, '--tune', nul, '--token', token);
    expect(out).toContain('verify: no report (see run.log)');
    expect(out).toContain('tune: no report (see run.log)');
    expect(out).toContain('64x64x64 | - | - | - |'); // the row with a GPU time that is not a number
    expect(out).toContain('(no run without robustness: see run.log)');
    expect(out).toContain('(no 4-bit pass: see run.log)');
    expect(out).toMatch(/token: one token: wall - ms back to back/);
  });

  it('says which report is a checkpoint (a stage cut short), with the rows it kept', () => {
    const cut = writeJson('cut.json', {
      runs: pair('qgemm', 1, 4096, 0.02, { kernel: 'gemv', verified: true }),
      incomplete: 'a checkpoint written after 2 rows, at 40.0 s: the run had not finished',
    });
    const out = summary(p1, cut, '--u4', cut);
    expect(out).toContain('pass 2 cut short: 2 rows kept (a checkpoint written after 2 rows, at 40.0 s: the run had not finished)');
    expect(out).toContain('the 4-bit pass cut short: 2 rows kept');
    expect(out).not.toContain('pass 1 cut short');
  });

  it('verify cut short (no JSON): its lines per kernel in run.log beside it give the verdict so far', () => {
    const cut = join(dir, 'verify-cut');
    mkdirSync(cut);
    writeFileSync(join(cut, 'verify.json'), '');
    writeFileSync(
      join(cut, 'run.log'),
      [
        'device-run: verify at 3 s',
        'qgemm verify: webgpu on nvidia (NVIDIA: 580.159.04)',
        '  sgmat-64x64 (u8->u32 16x16x32 sg32): 20 problems, 0 mismatches, 6.20 s',
        '  dot4-64x64: 20 problems, 3 mismatches, 1.07 s',
        '  gemv: 20 problems, 0 mismatches, 2.50 s',
        '  sgmat-64x64-u4: not run: the adapter has no subgroup matrices',
        'device-run: verify TIMED OUT',
        '  bench row: 20 problems, 1 mismatches', // another stage's, after verify's lines
      ].join('\n'),
    );
    const out = summary(p1, p2, '--verify', join(cut, 'verify.json'));
    expect(out).toContain('verify: no report (cut short?); run.log shows 2 of the 4 kernels it reached exact');
    expect(out).toContain('  dot4-64x64: 3 mismatches of 20');
    expect(out).toContain('  sgmat-64x64-u4: not run: the adapter has no subgroup matrices');
    expect(out).not.toContain('bench row');
  });

  it('says so where the passes given have no rows (both stages failed)', () => {
    const out = summary(join(dir, 'absent1.json'), join(dir, 'absent2.json'));
    expect(out).toContain('bench passes: no report (see run.log)');
    expect(out).not.toContain('qgemm ms pass1');
  });

  it('prints no pass table where no pass is given (the extras run)', () => {
    const out = summary('--u4', join(dir, 'absent.json'));
    expect(out).not.toContain('qgemm ms pass1');
    expect(out).toContain('(no 4-bit pass: see run.log)');
  });

  it('marks a qgemm row whose result was not verified, in either pass', () => {
    const bad = write('bad.json', [...pair('qgemm', 4096, 4096, 1.5, { kernel: 'sgmat-64x64-dd', verified: false })]);
    const line = summary(p1, bad)
      .split('\n')
      .find((l) => l.startsWith('4096x4096x4096'));
    expect(line).toContain('| sgmat-128x128-w4x2-k64-b2 / sgmat-64x64-dd UNVERIFIED |');
  });

  it("prints verify's verdict and the tuner's entries first, or says a report is missing", () => {
    const verify = writeJson('verify.json', {
      ok: false,
      rows: [
        { kernel: 'sgmat-64x64', problems: 16, mismatches: 0, detail: '' },
        { kernel: 'sgmat-64x64-u4', problems: 2, mismatches: 1, detail: 'dst[3] 7 != 8' },
      ],
    });
    const tune = writeJson('tune.json', {
      table: {
        entries: [
          {
            class: 'square',
            shape: { M: 4096, N: 4096, K: 4096 },
            id: 'sgmat-128x128-w4x2-k64-b2',
            gpuMs: 1.1,
            rulesId: 'sgmat-64x64',
            rulesMs: 2.2,
            seedId: 'sgmat-256x128-w4x2-k64-b1',
            seedMs: 1.27,
            tried: 12,
          },
        ],
      },
      refused: [{ id: 'sgmat-64x64-dd', detail: 'dst[0] 1 != 2' }],
    });
    const out = summary(p1, p2, '--verify', verify, '--tune', tune).split('\n');
    expect(out.slice(0, 2)).toEqual(['verify: 1 of 2 kernels exact -- FAILED', '  sgmat-64x64-u4: 1 mismatches of 2 (dst[3] 7 != 8)']);
    expect(out).toContain(
      'square 4096x4096x4096 | sgmat-128x128-w4x2-k64-b2 | 1.100 | sgmat-64x64 | 2.200 | sgmat-256x128-w4x2-k64-b1 | 1.270 | 12',
    );
    expect(out).toContain('  refused sgmat-64x64-dd: dst[0] 1 != 2');
    expect(out.findIndex((l) => l.startsWith('4096x4096x4096'))).toBeGreaterThan(out.findIndex((l) => l.startsWith('square')));
    const missing = summary(p1, p2, '--verify', join(dir, 'absent.json'), '--tune', join(dir, 'absent.json'));
    expect(missing).toContain('verify: no report (see run.log)');
    expect(missing).toContain('tune: no report (see run.log)');
  });

  it('prints qgemm with robustness off beside the passes, naming a kernel that differs, or says the run is missing', () => {
    const off = write('off.json', [
      ...pair('qgemm', 4096, 4096, 1.8, { kernel: 'sgmat-128x128-w4x2-k64-b2', verified: true }),
      ...pair('qgemm', 1, 4096, 0.02, { kernel: 'gemv', verified: true }),
    ]);
    const out = summary(p1, p2, '--norobust', off);
    expect(out).toContain('4096x4096x4096 | 1.800 | sgmat-128x128-w4x2-k64-b2 | 2.000 | 0.90x');
    expect(out).toContain('1x4096x4096 | 0.0200 | gemv | - | -'); // no such row in the passes
    expect(summary(p1, p2, '--norobust', join(dir, 'absent.json'))).toContain('(no run without robustness: see run.log)');
  });

  it("prints the token's wall against its GPU time, and its verdict, or says the report is missing", () => {
    const token = writeJson('token.json', {
      what: 'one token (1 x 4096, uint8) through 4 fully connected 4096 x 4096 layers',
      kernels: ['gemv-workgroup'],
      verified: true,
      mismatches: 0,
      wallMs: 0.5,
      afterPauseWallMs: 2.1,
      sumGpuMs: 0.08,
      runGpuMs: 0.07,
      wallOverSumGpu: 6.25,
    });
    const out = summary(p1, p2, '--token', token);
    expect(out).toContain(
      'token: one token (1 x 4096, uint8) through 4 fully connected 4096 x 4096 layers: wall 0.5000 ms back to back, 2.100 after a pause; ' +
        'GPU 0.0800 ms summed over the layers (gemv-workgroup), 0.0700 for the run; wall / GPU 6.25; verified',
    );
    expect(summary(p1, p2, '--token', join(dir, 'absent.json'))).toContain('token: no report (see run.log)');
    // An adapter without timestamp queries: no GPU time, and no kernels listed; still a line, not a crash.
    const bare = writeJson('bare.json', {
      what: 'one token',
      verified: true,
      wallMs: 0.5,
      sumGpuMs: null,
      runGpuMs: null,
      wallOverSumGpu: null,
    });
    expect(summary(p1, p2, '--token', bare)).toContain('GPU - ms summed over the layers (), - for the run; wall / GPU -; verified');
  });
});

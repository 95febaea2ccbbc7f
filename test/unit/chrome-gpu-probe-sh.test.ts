// tools/chrome-gpu-probe.sh, run whole on a stub payload (its Chromium an empty file, its Node a shell
// script): the `bench` form runs the bench in Chrome only with the attempt this probe found (a probe that
// failed without a report had let an earlier run's chrome-gpu-probe.json name the attempt, and the bench
// ran); `run` and `bench` keep their logs and return the probe's and the bench's exit status (a pipe to
// tee had returned 0); a corrupt part is named and not kept, and a good copy staged before stays.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

/** A repository with the script and a one-part payload whose Node runs `node` (a shell script body). */
function setup(node: string) {
  const dir = mkdtempSync(join(tmpdir(), 'qgemm-probe-sh-'));
  const repo = join(dir, 'repo');
  const payload = join(dir, 'payload');
  for (const d of [
    join(repo, 'tools'),
    join(repo, '.chrome-pack'),
    join(repo, 'out'),
    join(payload, 'bin'),
    join(payload, 'usr/lib/chromium'),
  ])
    mkdirSync(d, { recursive: true });
  copyFileSync('tools/chrome-gpu-probe.sh', join(repo, 'tools/chrome-gpu-probe.sh'));
  writeFileSync(join(payload, 'bin/node'), `#!/bin/sh\n${node}\n`);
  chmodSync(join(payload, 'bin/node'), 0o755);
  writeFileSync(join(payload, 'VERSIONS'), 'Chromium 156\n');
  writeFileSync(join(payload, 'usr/lib/chromium/chromium'), '');
  const part = join(repo, '.chrome-pack/chrome.tar.xz.part00');
  execFileSync('sh', ['-c', `tar -C "${payload}" -cf - . | xz -1 > "${part}"`]);
  const sha = execFileSync('sha256sum', [part], { encoding: 'utf8' }).split(' ')[0];
  writeFileSync(join(repo, '.chrome-pack/manifest.txt'), `# whole ${sha}\n${sha} chrome.tar.xz.part00\n`);
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync('sh', ['tools/chrome-gpu-probe.sh', ...args], {
      cwd: repo,
      encoding: 'utf8',
      env: { ...process.env, OUT: 'out', QGEMM_CHROME_BASE: join(dir, 'base'), ...env },
    });
  return { dir, repo, part, run };
}

it('bench: a probe that exits without a report runs no bench, whatever an earlier report says', () => {
  const { repo, run } = setup('case "$1" in tools/chrome-gpu-probe.mjs) exit 1 ;; *) echo BENCH RAN ;; esac');
  writeFileSync(join(repo, 'out/chrome-gpu-probe.json'), '{\n  "hardware": "B",\n}\n'); // an earlier run's
  const r = run(['bench']);
  expect(r.status, r.stdout + r.stderr).toBe(1);
  expect(r.stderr).toContain('chrome-gpu-probe: the probe exited 1 and wrote no report, so no bench in Chrome');
  expect(r.stdout).not.toContain('BENCH RAN');
});

it("run and bench return the probe's and the bench's exit status, their logs kept in $OUT", () => {
  const probe =
    'case "$1" in tools/chrome-gpu-probe.mjs) echo "attempt table"; printf \'{\\n  "hardware": "A",\\n}\\n\' > out/chrome-gpu-probe.json; exit $PROBE ;; *) echo "bench row"; exit 5 ;; esac';
  const { repo, run } = setup(probe);
  const none = run(['run'], { PROBE: '1' });
  expect(none.status).toBe(1);
  expect(none.stdout).toContain('attempt table');
  expect(readFileSync(join(repo, 'out/probe.log'), 'utf8')).toContain('attempt table');
  const bench = run(['bench', '--shapes', '1x4096x4096'], { PROBE: '0' });
  expect(bench.status, bench.stdout + bench.stderr).toBe(5); // the bench's own
  expect(bench.stdout).toContain('bench row');
  expect(readFileSync(join(repo, 'out/bench.log'), 'utf8')).toContain('bench row');
});

it('a corrupt part is named and not kept; the good copy staged before stays', () => {
  const { part, run } = setup('exit 0');
  expect(run(['stage']).stdout).toContain('parts here: chrome.tar.xz.part00; missing: none');
  const good = readFileSync(part);
  const bad = Buffer.from(good);
  bad[bad.length >> 1] ^= 0xff;
  writeFileSync(part, bad);
  const r = run(['stage']);
  expect(r.status).toBe(3);
  expect(r.stderr).toContain("corrupt (sha256 not the manifest's), not kept: chrome.tar.xz.part00");
  expect(r.stdout).toContain('parts here: chrome.tar.xz.part00; missing: none'); // the good copy
});

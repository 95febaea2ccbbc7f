// tools/chrome-gpu-probe.sh, run whole on a stub payload (its Chromium an empty file, its Node a shell
// script): the `bench` form runs the bench in Chrome only with the attempt this probe found. A probe that
// fails without a report had let an earlier run's chrome-gpu-probe.json name the attempt, and the bench ran.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

it('bench: a probe that exits without a report runs no bench, whatever an earlier report says', () => {
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
  // the payload's Node: the probe fails without writing its report; the bench says that it ran
  writeFileSync(join(payload, 'bin/node'), '#!/bin/sh\ncase "$1" in tools/chrome-gpu-probe.mjs) exit 1 ;; *) echo BENCH RAN ;; esac\n');
  chmodSync(join(payload, 'bin/node'), 0o755);
  writeFileSync(join(payload, 'VERSIONS'), 'Chromium 156\n');
  writeFileSync(join(payload, 'usr/lib/chromium/chromium'), '');
  const part = join(repo, '.chrome-pack/chrome.tar.xz.part00');
  execFileSync('sh', ['-c', `tar -C "${payload}" -cf - . | xz -1 > "${part}"`]);
  const sha = execFileSync('sha256sum', [part], { encoding: 'utf8' }).split(' ')[0];
  writeFileSync(join(repo, '.chrome-pack/manifest.txt'), `# whole ${sha}\n${sha} chrome.tar.xz.part00\n`);
  writeFileSync(join(repo, 'out/chrome-gpu-probe.json'), '{\n  "hardware": "B",\n}\n'); // an earlier run's
  const r = spawnSync('sh', ['tools/chrome-gpu-probe.sh', 'bench'], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, OUT: 'out', QGEMM_CHROME_BASE: join(dir, 'base') },
  });
  expect(r.status, r.stdout + r.stderr).toBe(1);
  expect(r.stderr).toContain('chrome-gpu-probe: the probe exited 1 and wrote no report, so no bench in Chrome');
  expect(r.stdout).not.toContain('BENCH RAN');
});

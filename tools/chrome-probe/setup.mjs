// The side effects of an attempt's launch plan (launchPlan in ./attempts.mjs): copying the Vulkan ICD into
// the loader's folder, starting the carried Xvfb for a display, handing the profile folder to the user
// Chrome runs as, and the environment Chrome gets. Both users of the plan call prepareLaunch: the probe
// (tools/chrome-gpu-probe.mjs, spawning Chrome itself) and the benchmark's launcher (tools/chromium.ts,
// through puppeteer-core), so an attempt the probe found is set up the same way for the bench.
// Node built-ins only: it runs under a bare Node on the GPU server.

import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { COPIED_ICD_NAME, runAsCommand } from './attempts.mjs';

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/**
 * LD_LIBRARY_PATH for a process of the payload (prefix: the unpacked payload, '' for none): its library
 * folders first, the inherited value, the NVIDIA driver's own folders last (as the payload's chromium wrapper).
 */
export function libraryPath(prefix, inherited = process.env.LD_LIBRARY_PATH) {
  const own = prefix ? ['lib', 'usr/lib/x86_64-linux-gnu'].map((d) => join(prefix, d)) : [];
  const driver = ['/usr/local/nvidia/lib64', '/usr/local/nvidia/lib'];
  return [
    ...own.filter((d) => existsSync(d)),
    ...(inherited ? [inherited] : []),
    ...(prefix ? driver.filter((d) => existsSync(d)) : []),
  ].join(':');
}

/** Copies the ICD manifest into dir, its library path made absolute where it was relative; returns a cleanup. */
export function installIcd(icd, dir) {
  const target = join(dir, COPIED_ICD_NAME);
  const manifest = JSON.parse(readFileSync(icd, 'utf8'));
  const lib = manifest.ICD?.library_path;
  if (lib?.includes('/') && !lib.startsWith('/')) manifest.ICD.library_path = resolve(dirname(icd), lib);
  // mkdirSync gives the topmost folder it made (undefined: none): the cleanup removes that, or the file alone.
  const made = mkdirSync(dir, { recursive: true });
  writeFileSync(target, JSON.stringify(manifest, null, 2));
  return () => rmSync(made ?? target, { recursive: true, force: true });
}

/** Starts the payload's Xvfb (prefix/usr/bin/Xvfb; without a prefix the system's) on a free display; returns { display, stop, notes }. */
export async function startXvfb(prefix, env) {
  const xvfb = prefix ? join(prefix, 'usr/bin/Xvfb') : '/usr/bin/Xvfb';
  if (!existsSync(xvfb)) throw new Error(`no Xvfb at ${xvfb} (bench/chrome-pack.sh carries one)`);
  const notes = [];
  const cleanups = [];
  // Xvfb runs xkbcomp from /usr/bin (compiled in): link the carried one there when there is none.
  const xkbcomp = prefix ? join(prefix, 'usr/bin/xkbcomp') : '';
  if (prefix && !existsSync('/usr/bin/xkbcomp') && existsSync(xkbcomp)) {
    symlinkSync(xkbcomp, '/usr/bin/xkbcomp');
    cleanups.push(() => rmSync('/usr/bin/xkbcomp', { force: true }));
    notes.push(`linked /usr/bin/xkbcomp -> ${xkbcomp}`);
  }
  const n = 90 + Math.floor(Math.random() * 9);
  const xkbdir = prefix ? join(prefix, 'usr/share/X11/xkb') : '';
  const args = [`:${n}`, '-screen', '0', '1280x1024x24', '-nolisten', 'tcp', ...(xkbdir && existsSync(xkbdir) ? ['-xkbdir', xkbdir] : [])];
  // The carried Xvfb needs the payload's libraries (libXfont2 and others), which Chrome's wrapper adds for Chrome alone.
  const ld = libraryPath(prefix, env.LD_LIBRARY_PATH);
  const child = spawn(xvfb, args, { env: { ...env, ...(ld ? { LD_LIBRARY_PATH: ld } : {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const socket = `/tmp/.X11-unix/X${n}`;
  for (let i = 0; i < 40 && !existsSync(socket) && child.exitCode === null; i++) await sleep(250);
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    for (const c of cleanups) c();
  };
  if (!existsSync(socket)) {
    stop();
    throw new Error(`Xvfb did not start: ${log.trim().split('\n').slice(-3).join(' / ')}`);
  }
  notes.push(`Xvfb ${xvfb} on display :${n}`);
  return { display: `:${n}`, stop, notes };
}

/**
 * Carries out a launch plan: the environment (opts.env less plan.unsetEnv, plus plan.env), the ICD copy,
 * an Xvfb display where the attempt is not headless, and the profile folder handed to plan.runAs. Returns
 * { env, notes, cleanup() } (cleanup undoes the copy and stops Xvfb; safe to call twice). On an error the
 * steps already done are undone.
 */
export async function prepareLaunch(plan, { env: baseEnv = process.env, prefix = '', profile } = {}) {
  const env = { ...baseEnv };
  for (const k of plan.unsetEnv) delete env[k];
  Object.assign(env, plan.env);
  const notes = [];
  const cleanups = [];
  const cleanup = () => {
    for (const c of cleanups.splice(0).reverse()) {
      try {
        c();
      } catch (e) {
        notes.push(`cleanup: ${e.message}`);
      }
    }
  };
  try {
    if (plan.copyIcd) {
      cleanups.push(installIcd(plan.copyIcd.from, plan.copyIcd.dir));
      notes.push(`ICD copied to ${plan.copyIcd.dir}/${COPIED_ICD_NAME}`);
    }
    if (!plan.headless) {
      const x = await startXvfb(prefix, env);
      cleanups.push(x.stop);
      notes.push(...x.notes);
      env.DISPLAY = x.display;
    }
    if (plan.runAs !== null && profile) {
      chownSync(profile, plan.runAs, plan.runAs);
      notes.push(`run as uid ${plan.runAs} (setpriv), so that the sandbox can start`);
    }
  } catch (e) {
    cleanup();
    throw e;
  }
  return { env, notes, cleanup };
}

/**
 * An executable that runs `command` as `uid` with the arguments it gets, for a launcher that takes one
 * executable path (puppeteer-core): a shell script in `dir` that execs runAsCommand (same process, so
 * closing the browser stops Chrome). Returns its path.
 */
export function runAsWrapper(uid, command, dir) {
  const quote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
  const file = join(dir, `chrome-as-${uid}.sh`);
  writeFileSync(file, `#!/bin/sh\nexec ${runAsCommand(uid, command).map(quote).join(' ')} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

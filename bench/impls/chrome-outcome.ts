// The Chrome runtime's cell outcome: what the page returned for one cell (bench/chrome-page.ts
// PageCellResult) turned into the harness's CellOutcome (bench/impls/types.ts), as Node's runners return
// it: the wall and GPU statistics (onnxruntime-web's GPU time from the profile lines its WebGPU EP printed
// to the page's console), qgemm's output bytes and hashes for verification, and the decode loop's
// after-pause calls, which bench/harness.ts afterPauseRow makes a row of. bench/impls/chrome.ts calls it.

import type { DstType } from '../../src/types.ts';
import type { PageCellResult, PageImpl } from '../chrome-page.ts';
import { stats } from '../timing.ts';
import { fromBytes } from '../verify.ts';
import { gpuMsPerRun } from './onnxruntime-webgpu.ts';
import { kernelOf } from './qgemm-node.ts';
import type { CellOutcome } from './types.ts';

/** onnxruntime-web's profile events, one JSON object a console line (trailing commas allowed). */
function profileEvents(lines: string[]): { cat?: string; ts?: number; dur?: number }[] {
  return lines.flatMap((line) => {
    const text = line.trim().replace(/,$/, '');
    if (!text.startsWith('{')) return [];
    try {
      return [JSON.parse(text) as { cat?: string; ts?: number; dur?: number }];
    } catch {
      return [];
    }
  });
}

/** One cell's outcome from the page's result; `lines`: the console lines of onnxruntime-web's profiled runs (`runs` of them). */
export function pageOutcome(impl: PageImpl, r: PageCellResult, lines: string[], runs: number): CellOutcome {
  if (r.error) throw new Error(`in Chrome: ${r.error.split('\n')[0]}`);
  let gpu = r.gpus.length && r.gpus.every((g): g is number => g !== null) ? stats(r.gpus) : null;
  if (r.profiled) {
    // The profiled session's warm-up runs come first in its profile: the last `runs` are the timed ones.
    const warm = r.profiledWarm ?? 0;
    const perRun = gpuMsPerRun(profileEvents(lines), warm + runs)?.slice(warm);
    gpu = perRun ? stats(perRun) : null;
  }
  // A peer's note explains a missing GPU time; qgemm's also says how its GPU time was taken.
  const note = r.gpuNote && (gpu === null || impl === 'qgemm') ? { gpuNote: r.gpuNote } : {};
  const out: CellOutcome = { wall: stats(r.walls), gpu, ...note, ...(r.warm ? { warm: r.warm } : {}) };
  if (impl === 'qgemm' || impl === 'qgemm-cpu') {
    if (r.outputBase64 === undefined) throw new Error('in Chrome: the page returned no output');
    out.output = { data: fromBytes(r.dtype as DstType, Buffer.from(r.outputBase64, 'base64')), dtype: r.dtype as DstType };
    out.hashes = r.hashes;
    out.kernel = kernelOf({ lastRun: { kernel: r.kernel } });
    if (r.rhsFormat !== undefined) out.rhsFormat = r.rhsFormat;
  }
  if (r.pausedWalls?.length) {
    out.afterPause = stats(r.pausedWalls);
    // qgemm's after-pause calls are checked against the back-to-back bytes: each call's hash, none missing.
    if (impl === 'qgemm') {
      if (r.pausedHashes?.length !== r.pausedWalls.length) throw new Error('in Chrome: an after-pause call returned no output');
      out.afterPauseHashes = r.pausedHashes;
    }
  }
  return out;
}

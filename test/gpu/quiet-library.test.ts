// The library is quiet: in a fresh Node process (the built dist/node bundle, as a user imports it), a
// plain `gemm()` with backend 'auto', the hardware probe, and a WebGPU device on SwiftShader
// (describeDevice) write nothing on stderr. On a machine without a Vulkan driver the loader would print
// "vkCreateInstance: Found no drivers!" from C++ if Dawn asked it (src/gpu/dawn.ts looks for a driver
// manifest first), so the check needs a child process: that output never passes through Node's streams.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, REPO } from '../cli/support.ts';

beforeAll(() => ensureBuilt(), 300_000);

const SCRIPT = `
const { gemm, isHardwareAdapterAvailable, describeDevice } = await import(process.argv[1]);
const m = { data: new Uint8Array(64 * 64).fill(3), rows: 64, cols: 64 };
const r = await gemm({ lhs: m, rhs: m });
const hw = await isHardwareAdapterAvailable();
const d = await describeDevice();
console.log(JSON.stringify({ first: r.data[0], hw, adapter: d.adapter ? d.adapter.architecture : null, cpu: d.cpu.kernel }));
`;

describe('a fresh process importing the library', () => {
  it("runs gemm('auto'), the hardware probe and describeDevice() with nothing on stderr", () => {
    const entry = pathToFileURL(join(REPO, 'dist/node/index.js')).href;
    const env = { ...process.env };
    delete env.QGEMM_DEBUG;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT, entry], { encoding: 'utf8', env, timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim());
    expect(out.first).toBe(64 * 9);
    expect(typeof out.cpu).toBe('string');
    expect(r.stderr).toBe('');
  });
});

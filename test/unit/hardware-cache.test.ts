// Backend 'auto' asks once whether a hardware adapter exists (src/api.ts hasHardware), per set of the
// options that choose an adapter (dawnPath, powerPreference, toggles): a Dawn build without hardware does
// not answer for another, and an answer that failed is not remembered.

import { expect, it, vi } from 'vitest';
import { onBackend } from '../../src/api.ts';

const asked: string[] = [];
vi.mock('../../src/gpu/acquire.ts', async (original) => ({
  ...(await original<typeof import('../../src/gpu/acquire.ts')>()),
  isHardwareAdapterAvailable: async (opts: { dawnPath?: string }) => {
    asked.push(opts.dawnPath ?? '');
    if (opts.dawnPath === 'flaky' && asked.filter((p) => p === 'flaky').length === 1) throw new Error('no answer');
    return false;
  },
}));

it('the hardware answer is kept per adapter options, a failed one not at all', async () => {
  const cpu = async () => ({ ran: 'cpu' });
  const gpu = async () => ({ ran: 'gpu' });
  for (const dawnPath of ['a', 'a', 'b', 'a', 'b']) {
    expect(await onBackend(cpu, gpu, 'auto', { dawnPath })).toEqual({ ran: 'cpu', backend: 'cpu' });
  }
  expect(asked).toEqual(['a', 'b']);
  await expect(onBackend(cpu, gpu, 'auto', { dawnPath: 'flaky' })).rejects.toThrow('no answer');
  expect(await onBackend(cpu, gpu, 'auto', { dawnPath: 'flaky' })).toEqual({ ran: 'cpu', backend: 'cpu' });
  expect(asked).toEqual(['a', 'b', 'flaky', 'flaky']);
});

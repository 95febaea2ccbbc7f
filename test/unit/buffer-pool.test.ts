// The scheduler's buffer pool (src/gpu/pool.ts) on a stand-in device that counts the buffers it makes:
// buffers come back by size class; past the pool's bound the free buffers released longest ago make
// room, so calls whose shapes changed reuse their own buffers instead of creating and destroying them at
// every call behind a pool full of the old sizes; a buffer larger than the bound is destroyed; a buffer
// released twice, or never handed out, is an InputError; destroy() frees every buffer.

import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../src/gpu/pool.ts';

interface Fake {
  size: number;
  destroyed: boolean;
  destroy(): void;
}

function fakeDevice() {
  const made: Fake[] = [];
  const device = {
    limits: { maxBufferSize: 2 ** 30 },
    createBuffer: ({ size }: { size: number }) => {
      const b: Fake = { size, destroyed: false, destroy: () => void (b.destroyed = true) };
      made.push(b);
      return b;
    },
  };
  return { device: device as unknown as GPUDevice, made };
}

describe('BufferPool', () => {
  it('reuses by size class; past its bound, the buffers released longest ago make room', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device, 4096);
    const old = [pool.acquire(1024, 'a'), pool.acquire(1024, 'b'), pool.acquire(1000, 'c')];
    for (const b of old) pool.release(b);
    expect(pool.acquire(1024, 'again')).toBe(old[2]); // the same size class, no new buffer
    pool.release(old[2]);
    // the shape changed: a 2048-byte buffer, released and acquired at every call
    for (let call = 0; call < 5; call++) pool.release(pool.acquire(2048, 'new shape'));
    expect(made.filter((b) => b.size === 2048)).toHaveLength(1);
    expect(made[0].destroyed).toBe(true); // released first: made room
    expect([made[1].destroyed, made[2].destroyed]).toEqual([false, false]);
    // the pool holds 4096 bytes: two old buffers and the new one; a 1024-byte call reuses an old one
    expect([made[1], made[2]]).toContain(pool.acquire(1024, 'old shape'));
    expect(made).toHaveLength(4); // three of the old shape, one of the new
  });
  it('destroys a buffer larger than the bound, refuses a double release, frees everything on destroy()', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device, 4096);
    const big = pool.acquire(8192, 'big');
    pool.release(big);
    expect((big as unknown as Fake).destroyed).toBe(true);
    const a = pool.acquire(512, 'a');
    pool.release(a);
    expect(() => pool.release(a)).toThrow(/already released/);
    const held = pool.acquire(256, 'held');
    pool.destroy();
    expect(made.every((b) => b.destroyed)).toBe(true);
    void held;
  });
});

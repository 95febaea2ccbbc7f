// `qgemm tune` where a budget above the floor still measured no shape (a slow adapter: each configuration's
// set-up outlasts the sweep): the tuner is replaced by one that returns such a report, so the CLI's refusal
// is tested on any machine. Exit 2 naming --budget, and the table already there is kept.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { cleanup, freshDir } from './support.ts';

vi.mock('../../src/tune.ts', async (original) => ({
  ...(await original<typeof import('../../src/tune.ts')>()),
  tune: async () => ({ device: 'a slow adapter', table: { entries: [] }, refused: [] }),
}));
afterAll(cleanup);

it('a budget that measured no shape: exit 2 naming --budget, the table already there intact', async () => {
  const dir = freshDir({ 'T.json': '{"kept": true}' });
  let err = '';
  const code = await main(['tune', '--budget', '2s', '--out', join(dir, 'T.json')], { out: () => {}, err: (t) => void (err += t) });
  expect(code).toBe(2);
  expect(err).toMatch(/^qgemm: error: --budget: 2s measured no shape on a slow adapter/);
  expect(err.split('\n')).toHaveLength(2);
  expect(readFileSync(join(dir, 'T.json'), 'utf8')).toBe('{"kept": true}');
});

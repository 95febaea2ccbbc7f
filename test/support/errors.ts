// The field an InputError names, for the tests that check many bad inputs one after another: the
// rejection of `p` read as its `field` (undefined when it resolves or rejects with another error).

import { InputError } from '../../src/errors.ts';

export async function rejectedField(p: Promise<unknown>): Promise<string | undefined> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  return e instanceof InputError ? e.field : undefined;
}

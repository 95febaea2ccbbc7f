// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (fd 3: commands to Chrome,
// fd 4: its answers and events, each message JSON ended by a NUL byte), for tools/chrome-gpu-probe.mjs.
// No dependencies: the probe runs under a bare Node on a GPU server that has no node_modules.

/** Connects to a Chrome child spawned with stdio[3] and stdio[4] as pipes. */
export function connectPipe(child) {
  const out = child.stdio[3];
  const input = child.stdio[4];
  let nextId = 1;
  const pending = new Map();
  let chunks = [];
  let closed = null;
  const fail = (why) => {
    closed = why;
    for (const { reject } of pending.values()) reject(new Error(why));
    pending.clear();
  };
  input.on('data', (chunk) => {
    let start = 0;
    for (let i = chunk.indexOf(0); i !== -1; i = chunk.indexOf(0, start)) {
      chunks.push(chunk.subarray(start, i));
      const text = Buffer.concat(chunks).toString('utf8');
      chunks = [];
      start = i + 1;
      let message;
      try {
        message = JSON.parse(text);
      } catch {
        continue;
      }
      const waiter = message.id !== undefined ? pending.get(message.id) : undefined;
      if (!waiter) continue;
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(`${waiter.method}: ${message.error.message}`));
      else waiter.resolve(message.result ?? {});
    }
    if (start < chunk.length) chunks.push(chunk.subarray(start));
  });
  input.on('close', () => fail('the DevTools pipe closed (Chrome exited)'));
  input.on('error', (e) => fail(`the DevTools pipe failed: ${e.message}`));
  out.on('error', (e) => fail(`the DevTools pipe failed: ${e.message}`));
  return {
    /** Sends one command; sessionId targets an attached page (flatten mode). */
    send(method, params = {}, sessionId) {
      if (closed) return Promise.reject(new Error(closed));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, method });
        out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
      });
    },
  };
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** Opens url in a new page and attaches to it; returns the session id. */
export async function openPage(cdp, url) {
  const { targetId } = await cdp.send('Target.createTarget', { url });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
  return sessionId;
}

/** Evaluates an expression in a page (awaiting a promise) and returns its value. */
export async function evaluate(cdp, sessionId, expression) {
  const r = await cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }, sessionId);
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
  return r.result?.value;
}

/** Evaluates `expression` every 250 ms until `done(value)` or `timeoutMs` passes; returns the last value. */
export async function poll(cdp, sessionId, expression, done, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let value;
  for (;;) {
    value = await evaluate(cdp, sessionId, expression).catch(() => undefined);
    if (done(value) || Date.now() > end) return value;
    await sleep(250);
  }
}

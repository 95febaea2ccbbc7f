// The static file server of the browser tests and the benchmark's Chrome runtime (re-exported by
// tools/chromium.ts, whose header documents it): pages served from 127.0.0.1, a secure context, so that
// `navigator.gpu` exists; optionally cross-origin isolated (COOP/COEP) for SharedArrayBuffer and threads.

import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.wgsl': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export interface StaticServer {
  /** http://127.0.0.1:PORT/ */
  url: string;
  close(): Promise<void>;
}

/** isolated: send COOP/COEP headers, so that pages are cross-origin isolated (SharedArrayBuffer, threads). */
export async function serveStatic(rootDir: string, { isolated = false }: { isolated?: boolean } = {}): Promise<StaticServer> {
  const root = resolve(rootDir);
  const server: Server = createServer(async (req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405).end();
        return;
      }
      let path = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
      let file = normalize(join(root, path));
      if (file !== root && !file.startsWith(root + sep)) {
        res.writeHead(403).end();
        return;
      }
      if ((await stat(file).catch(() => null))?.isDirectory()) {
        if (!path.endsWith('/')) {
          res.writeHead(301, { Location: path + '/' }).end();
          return;
        }
        file = join(file, 'index.html');
        path += 'index.html';
      }
      const body = await readFile(file).catch(() => null);
      if (!body) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`not found: ${path}`);
        return;
      }
      res.writeHead(200, {
        'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'Content-Length': body.length,
        'Cache-Control': 'no-store',
        ...(isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (e) {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(String(e));
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('serveStatic: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

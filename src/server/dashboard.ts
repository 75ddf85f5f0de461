import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};
/** Vite names each asset by its content's hash, so a browser may keep one for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/**
 * The page may load only what the gateway serves, and talk only to the gateway: nothing from
 * another host, even if a dependency tried. `connect-src 'self'` covers the gateway's own ws: and
 * wss: (CSP 3, as Chromium and Firefox apply it); `ws:`/`wss:` alone would allow any host.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Where the built dashboard is: dist/dashboard beside the sources (tsx) or beside dist/src (the built gateway). */
function builtFolder(): string | undefined {
  const here = fileURLToPath(new URL('../../', import.meta.url));
  for (const candidate of [join(here, 'dist/dashboard'), join(here, 'dashboard')]) {
    // The source folder dashboard/ has an index.html too, but no assets/: only a build has both.
    if (existsSync(join(candidate, 'index.html')) && existsSync(join(candidate, 'assets'))) return candidate;
  }
  return undefined;
}

interface File {
  body: Buffer;
  type: string;
  cache: string;
}

/**
 * Serves the dashboard's built files at `/` and `/assets/*`, read once at start (a few hundred KB).
 * Without a build (`npm run build:dashboard`) `/` says how to make one.
 */
export function dashboardFiles(folder = builtFolder()): { serve(req: IncomingMessage, res: ServerResponse): boolean } {
  const files = new Map<string, File>();
  if (folder) {
    files.set('/', { body: readFileSync(join(folder, 'index.html')), type: TYPES['.html']!, cache: 'no-cache' });
    const assets = join(folder, 'assets');
    for (const name of readdirSync(assets)) {
      const path = join(assets, name);
      if (!statSync(path).isFile()) continue;
      files.set(`/assets/${name}`, { body: readFileSync(path), type: TYPES[extname(name)] ?? 'application/octet-stream', cache: IMMUTABLE });
    }
  }
  return {
    serve(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      const path = (req.url ?? '/').split('?')[0]!;
      const file = files.get(path === '/index.html' ? '/' : path);
      if (!file) {
        if (path !== '/') return false;
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('the dashboard is not built: run `npm run build` (or `npm run build:dashboard`)\n');
        return true;
      }
      res.writeHead(200, {
        'content-type': file.type,
        'content-length': file.body.length,
        'cache-control': file.cache,
        'content-security-policy': CONTENT_SECURITY_POLICY,
        'x-content-type-options': 'nosniff',
      });
      res.end(req.method === 'HEAD' ? undefined : file.body);
      return true;
    },
  };
}

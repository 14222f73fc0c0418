import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.ts';

/**
 * The dashboard's security headers, on every answer of the public app: scripts and styles only
 * from our own origin (no inline script), no framing, no referrer leaving the site.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function securityHeaders(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Frame-Options', 'DENY');
    c.header('Cross-Origin-Opener-Policy', 'same-origin');
    c.header('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
}

function loadAssets(folder: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (directory: string) => {
    for (const name of readdirSync(directory)) {
      const file = path.join(directory, name);
      if (statSync(file).isDirectory()) {
        walk(file);
        continue;
      }
      const body = readFileSync(file);
      const type = TYPES[path.extname(name)] ?? 'application/octet-stream';
      const compressible = /text|javascript|json|svg/.test(type) && body.length > 1024;
      assets.set(`/${path.relative(folder, file).split(path.sep).join('/')}`, {
        body,
        gzip: compressible ? gzipSync(body, { level: 9 }) : null,
        type,
      });
    }
  };
  walk(folder);
  return assets;
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tollgate</title></head>
<body><main><h1>The dashboard is not built</h1><p>Run <code>pnpm build</code> (or <code>bash scripts/up.sh</code>)
and restart the control plane. The API is at <a href="/api/v1/openapi.json">/api/v1</a>.</p></main></body></html>`;

function send(c: Context<AppEnv>, asset: Asset, cacheControl: string): Response {
  c.header('Content-Type', asset.type);
  c.header('Cache-Control', cacheControl);
  c.header('Vary', 'Accept-Encoding');
  const acceptsGzip = /\bgzip\b/.test(c.req.header('accept-encoding') ?? '');
  if (asset.gzip && acceptsGzip) c.header('Content-Encoding', 'gzip');
  // Node's server writes no body for HEAD, so both methods answer the same way.
  return c.body(new Uint8Array(asset.gzip && acceptsGzip ? asset.gzip : asset.body), 200);
}

/**
 * Serves the built single-page app from memory (it is small): hashed files under /assets are
 * cached for good, every other page path gets index.html, which the app's router resolves
 * (`/status` is the public status page). Read once when the app is built.
 */
export function dashboardAssets(folder: string): MiddlewareHandler<AppEnv> {
  const assets = existsSync(path.join(folder, 'index.html')) ? loadAssets(folder) : null;
  return async (c, next) => {
    const method = c.req.method;
    const pathname = c.req.path;
    if ((method !== 'GET' && method !== 'HEAD') || pathname === '/api' || pathname.startsWith('/api/')) {
      return next();
    }
    if (!assets) return c.html(NOT_BUILT, 503);
    const asset = assets.get(pathname);
    if (asset && pathname !== '/index.html') {
      return send(
        c,
        asset,
        pathname.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    }
    // A missing hashed file is a real 404, not the app (a stale tab would otherwise load HTML as JS).
    if (pathname.startsWith('/assets/')) return next();
    const index = assets.get('/index.html');
    return index ? send(c, index, 'no-cache') : next();
  };
}

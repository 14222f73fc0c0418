/**
 * The floor of the benchmark: a minimal Node proxy (node:http in, undici out, keep-alive pool),
 * no authentication, no limits, no metering. Whatever the gateway costs above this is the price of
 * metering; what this costs above direct is the price of a Node hop.
 * Usage: node bench/src/floor-proxy.ts <listen port> <upstream origin> [upstream connections]
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const port = Number(process.argv[2]);
// Long-stream runs hold thousands of calls open at once: as many upstream connections as asked.
const upstream = new Pool(process.argv[3] ?? 'http://127.0.0.1:18190', {
  connections: Number(process.argv[4] ?? 128),
  pipelining: 1,
});

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length']);

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
    upstream
      .request({
        method: (req.method ?? 'GET') as 'POST',
        path: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks),
      })
      .then((response) => {
        const out: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers))
          if (typeof value === 'string' && !HOP_BY_HOP.has(name)) out[name] = value;
        res.writeHead(response.statusCode, out);
        response.body.on('data', (chunk: Buffer) => res.write(chunk));
        response.body.on('end', () => res.end());
        response.body.on('error', () => res.destroy());
      })
      .catch(() => {
        res.writeHead(502).end();
      });
  });
}).listen(port, '127.0.0.1');

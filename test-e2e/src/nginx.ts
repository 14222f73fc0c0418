/**
 * Debian's nginx (nginx-light) as the load balancer in front of several gateway processes, run in
 * the foreground from a config written to a temporary prefix: no root, no system files touched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort } from '@tollgate/test-harness';

export const NGINX_BINARY = process.env.NGINX_BINARY ?? '/usr/sbin/nginx';

export interface RunningNginx {
  url: string;
  stop(): Promise<void>;
}

/** Round robin over `upstreams` (base URLs), retrying on another only when one cannot be reached. */
export async function startNginx(folder: string, upstreams: string[]): Promise<RunningNginx> {
  if (!existsSync(NGINX_BINARY))
    throw new Error(`nginx not found at ${NGINX_BINARY} (apt-get install nginx-light)`);
  const prefix = path.join(folder, 'nginx');
  await mkdir(path.join(prefix, 'logs'), { recursive: true });
  const port = await findFreePort();
  const servers = upstreams
    .map((url) => `    server ${new URL(url).host} max_fails=1 fail_timeout=5s;`)
    .join('\n');
  const temp = (name: string) => `${name}_temp_path ${path.join(prefix, name)};`;
  await writeFile(
    path.join(prefix, 'nginx.conf'),
    `daemon off;
worker_processes 1;
pid ${path.join(prefix, 'nginx.pid')};
error_log ${path.join(prefix, 'logs/error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}
  upstream gateways {
${servers}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 120s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(NGINX_BINARY, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${errors.trim()}`);
    try {
      await fetch(`${url}/livez`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`nginx did not answer: ${errors.trim()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const ended = once(child, 'exit');
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await ended;
      clearTimeout(timer);
    },
  };
}

/**
 * Debian's nginx (nginx-light) as the load balancer in front of several gateway processes, run in
 * the foreground from a temporary prefix (no root, no system files touched), serving the config
 * the project ships (deploy/nginx/tollgate.conf.template) with only its addresses, log files and
 * the substituted body limit changed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort, ROOT } from '@tollgate/test-harness';

export const NGINX_BINARY = process.env.NGINX_BINARY ?? '/usr/sbin/nginx';
export const SHIPPED_TEMPLATE = path.join(ROOT, 'deploy/nginx/tollgate.conf.template');
export const SHIPPED_PROXY_CONF = path.join(ROOT, 'deploy/nginx/tollgate-proxy.conf');

export interface RunningNginx {
  url: string;
  /** Its access and error logs. */
  accessLog: string;
  errorLog: string;
  stop(): Promise<void>;
}

/**
 * The shipped server config for this machine: `upstreams` (base URLs) in place of the compose
 * gateways, a loopback port, logs under `logs`, and the gateways' body limit substituted as
 * nginx's image would.
 */
export async function shippedConfig(options: {
  upstreams: string[];
  port: number;
  logs: string;
  maxRequestBytes: number;
}): Promise<string> {
  const template = await readFile(SHIPPED_TEMPLATE, 'utf8');
  const servers = options.upstreams
    .map((url) => `    server ${new URL(url).host} max_fails=3 fail_timeout=2s;`)
    .join('\n');
  const replaced = template
    .replace(/(upstream tollgate_gateways \{\n)(?:\s*server [^\n]+\n)+/, `$1${servers}\n`)
    .replace('listen 80 default_server;', `listen 127.0.0.1:${options.port};`)
    .replace('/var/log/nginx/access.log', path.join(options.logs, 'access.log'))
    .replaceAll('include /etc/nginx/tollgate-proxy.conf;', `include ${SHIPPED_PROXY_CONF};`)
    .replaceAll('${GATEWAY_MAX_REQUEST_BYTES}', String(options.maxRequestBytes));
  if (replaced.includes('${')) throw new Error('a template variable was left in the nginx config');
  return replaced;
}

/** Round robin over `upstreams` (base URLs), as deploy/ configures it. */
export async function startNginx(
  folder: string,
  upstreams: string[],
  options: { maxRequestBytes?: number } = {},
): Promise<RunningNginx> {
  if (!existsSync(NGINX_BINARY))
    throw new Error(`nginx not found at ${NGINX_BINARY} (apt-get install nginx-light)`);
  const prefix = path.join(folder, 'nginx');
  const logs = path.join(prefix, 'logs');
  await mkdir(logs, { recursive: true });
  const port = await findFreePort();
  const temp = (name: string) => `${name}_temp_path ${path.join(prefix, name)};`;
  const server = await shippedConfig({
    upstreams,
    port,
    logs,
    maxRequestBytes: options.maxRequestBytes ?? 32 * 1024 * 1024,
  });
  const errorLog = path.join(logs, 'error.log');
  await writeFile(
    path.join(prefix, 'nginx.conf'),
    `daemon off;
worker_processes 1;
pid ${path.join(prefix, 'nginx.pid')};
error_log ${errorLog} info;
events { worker_connections 1024; }
http {
  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}
${server}
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
      // nginx announces nothing when it listens: ask again.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url,
    accessLog: path.join(logs, 'access.log'),
    errorLog,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const ended = once(child, 'exit');
      child.kill('SIGQUIT');
      // The give-up deadline for a stop, not a wait: the exit ends it at once.
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await ended;
      clearTimeout(timer);
    },
  };
}

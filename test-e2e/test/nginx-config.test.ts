/**
 * The nginx config the project ships (deploy/nginx/), read as text: its error bodies are the
 * gateway's own, its body limit is the gateway's, and nothing it logs carries a query string.
 * (many-gateways.test.ts runs it in front of real gateways; scripts/compose-e2e.sh in compose.)
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError, renderMessagesError, renderOpenAIError } from '@tollgate/errors';
import { loadConfig } from '@tollgate/gateway/config';
import { ROOT } from '@tollgate/test-harness';
import { describe, expect, it } from 'vitest';
import { SHIPPED_PROXY_CONF, SHIPPED_TEMPLATE } from '../src/nginx.ts';

const template = await readFile(SHIPPED_TEMPLATE, 'utf8');
const compose = await readFile(path.join(ROOT, 'deploy/docker-compose.yml'), 'utf8');

/** The single-quoted bodies of `return <status> '...'` lines. */
function returned(status: number): unknown[] {
  return [...template.matchAll(new RegExp(`return ${status} '([^']+)';`, 'g'))].map((match) =>
    JSON.parse(match[1]!),
  );
}

describe('deploy/nginx/tollgate.conf.template', () => {
  it('answers request_too_large and invalid_api_key with the gateway’s own bodies, in both styles', () => {
    const tooLarge = new AppError('request_too_large');
    expect(returned(413)).toEqual([renderMessagesError(tooLarge).body, renderOpenAIError(tooLarge).body]);
    const keyInUrl = new AppError('invalid_api_key', {
      message: 'API keys are never accepted in the URL. Send the key in x-api-key or Authorization: Bearer.',
    });
    expect(returned(401)).toEqual([renderMessagesError(keyInUrl).body, renderOpenAIError(keyInUrl).body]);
  });

  it('takes its body limit from the variable the gateways read, with the gateway’s default in compose', () => {
    expect(template).toContain('client_max_body_size ${GATEWAY_MAX_REQUEST_BYTES};');
    const defaults = [
      ...compose.matchAll(/GATEWAY_MAX_REQUEST_BYTES: \$\{GATEWAY_MAX_REQUEST_BYTES:-(\d+)\}/g),
    ].map((match) => Number(match[1]));
    // The gateways' environment and nginx's, both defaulting to the gateway's own default.
    expect(defaults).toHaveLength(2);
    const gatewayDefault = loadConfig({ INTERNAL_TOKEN_SECRET: 'x'.repeat(32) }).maxRequestBytes;
    expect(defaults).toEqual([gatewayDefault, gatewayDefault]);
  });

  it('logs requests without their query string', async () => {
    const formats = [...template.matchAll(/log_format\s+(\w+)\s+([^;]+);/g)];
    expect(formats.map((match) => match[1])).toEqual(['tollgate_no_query']);
    for (const [, , format] of formats)
      expect(format).not.toMatch(/\$(request|request_uri|args|query_string|arg_)\b/);
    expect([...template.matchAll(/access_log\s+([^;]+);/g)].map((match) => match[1])).toEqual([
      '/var/log/nginx/access.log tollgate_no_query',
    ]);
    expect(await readFile(SHIPPED_PROXY_CONF, 'utf8')).not.toMatch(/access_log/);
  });
});

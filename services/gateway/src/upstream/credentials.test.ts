import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CredentialsFileError, loadCredentials } from './credentials.ts';

const folder = mkdtempSync(join(tmpdir(), 'tollgate-credentials-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function secretsFile(name: string, content: string): string {
  const path = join(folder, name);
  writeFileSync(path, content);
  return path;
}

const prefix = 'TOLLGATE_PROVIDER_';

describe('loadCredentials', () => {
  it('reads a credential from the environment by name', () => {
    const store = loadCredentials({ env: { TOLLGATE_PROVIDER_ANTHROPIC: 'sk-ant-123' }, prefix });
    expect(store.get('TOLLGATE_PROVIDER_ANTHROPIC')).toBe('sk-ant-123');
    expect(store.get('TOLLGATE_PROVIDER_MISSING')).toBeNull();
    expect(store.get(null)).toBeNull();
  });

  it('prefers the secrets file and falls back to the environment', () => {
    const path = secretsFile('both.json', JSON.stringify({ TOLLGATE_PROVIDER_OPENAI: 'from-file' }));
    const store = loadCredentials({
      env: { TOLLGATE_PROVIDER_OPENAI: 'from-env', TOLLGATE_PROVIDER_VLLM: 'env-only' },
      prefix,
      secretsFile: path,
    });
    expect(store.get('TOLLGATE_PROVIDER_OPENAI')).toBe('from-file');
    expect(store.get('TOLLGATE_PROVIDER_VLLM')).toBe('env-only');
  });

  it('treats an empty environment value as not configured', () => {
    expect(
      loadCredentials({ env: { TOLLGATE_PROVIDER_EMPTY: '' }, prefix }).get('TOLLGATE_PROVIDER_EMPTY'),
    ).toBeNull();
  });

  it('never reads a name outside the provider namespace, from the environment or the file', () => {
    const path = secretsFile('outside.json', JSON.stringify({ OPENAI_API_KEY: 'file-outside' }));
    const env = { HOME: '/home/gateway', GATEWAY_PORT: '8080', OPENAI_API_KEY: 'env-outside', PATH: '/bin' };
    const store = loadCredentials({ env, prefix, secretsFile: path });
    for (const name of [
      'HOME',
      'GATEWAY_PORT',
      'OPENAI_API_KEY',
      'PATH',
      'TOLLGATE_PROVIDER_',
      'tollgate_provider_x',
    ]) {
      expect(store.get(name)).toBeNull();
    }
    const custom = loadCredentials({
      env: { ACME_UPSTREAM_KEY: 'acme', HOME: '/root' },
      prefix: 'ACME_UPSTREAM_',
    });
    expect(custom.get('ACME_UPSTREAM_KEY')).toBe('acme');
    expect(custom.get('HOME')).toBeNull();
  });

  it("never hands out the gateway's own secrets, even when the catalogue names them", () => {
    const path = secretsFile('reserved.json', JSON.stringify({ KEY_PEPPER: 'pepper-in-file' }));
    const store = loadCredentials({
      env: { INTERNAL_TOKEN_SECRET: 'x'.repeat(40), REDIS_URL: 'redis://secret@host' },
      prefix,
      secretsFile: path,
    });
    expect(store.get('INTERNAL_TOKEN_SECRET')).toBeNull();
    expect(store.get('REDIS_URL')).toBeNull();
    expect(store.get('KEY_PEPPER')).toBeNull();
  });

  it('refuses a broken secrets file without quoting its content', () => {
    const invalid = secretsFile('invalid.json', '{"OPENAI_KEY": "sk-live-secret-value",');
    expect(() => loadCredentials({ env: {}, prefix, secretsFile: invalid })).toThrow(CredentialsFileError);
    try {
      loadCredentials({ env: {}, prefix, secretsFile: invalid });
    } catch (error) {
      expect(String(error)).not.toContain('sk-live-secret-value');
    }
    const array = secretsFile('array.json', '["a"]');
    expect(() => loadCredentials({ env: {}, prefix, secretsFile: array })).toThrow(/JSON object/);
    const nonString = secretsFile('number.json', '{"A": 5}');
    expect(() => loadCredentials({ env: {}, prefix, secretsFile: nonString })).toThrow(/value of A/);
    expect(() => loadCredentials({ env: {}, prefix, secretsFile: join(folder, 'absent.json') })).toThrow(
      /ENOENT/,
    );
  });
});

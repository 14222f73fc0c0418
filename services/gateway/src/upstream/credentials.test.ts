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

describe('loadCredentials', () => {
  it('reads a credential from the environment by name', () => {
    const store = loadCredentials({ env: { ANTHROPIC_KEY: 'sk-ant-123' } });
    expect(store.get('ANTHROPIC_KEY')).toBe('sk-ant-123');
    expect(store.get('MISSING')).toBeNull();
    expect(store.get(null)).toBeNull();
  });

  it('prefers the secrets file and falls back to the environment', () => {
    const path = secretsFile('both.json', JSON.stringify({ OPENAI_KEY: 'from-file' }));
    const store = loadCredentials({
      env: { OPENAI_KEY: 'from-env', VLLM_KEY: 'env-only' },
      secretsFile: path,
    });
    expect(store.get('OPENAI_KEY')).toBe('from-file');
    expect(store.get('VLLM_KEY')).toBe('env-only');
  });

  it('treats an empty environment value as not configured', () => {
    expect(loadCredentials({ env: { EMPTY: '' } }).get('EMPTY')).toBeNull();
  });

  it("never hands out the gateway's own secrets, even when the catalogue names them", () => {
    const path = secretsFile('reserved.json', JSON.stringify({ KEY_PEPPER: 'pepper-in-file' }));
    const store = loadCredentials({
      env: { INTERNAL_TOKEN_SECRET: 'x'.repeat(40), REDIS_URL: 'redis://secret@host' },
      secretsFile: path,
    });
    expect(store.get('INTERNAL_TOKEN_SECRET')).toBeNull();
    expect(store.get('REDIS_URL')).toBeNull();
    expect(store.get('KEY_PEPPER')).toBeNull();
  });

  it('refuses a broken secrets file without quoting its content', () => {
    const invalid = secretsFile('invalid.json', '{"OPENAI_KEY": "sk-live-secret-value",');
    expect(() => loadCredentials({ env: {}, secretsFile: invalid })).toThrow(CredentialsFileError);
    try {
      loadCredentials({ env: {}, secretsFile: invalid });
    } catch (error) {
      expect(String(error)).not.toContain('sk-live-secret-value');
    }
    const array = secretsFile('array.json', '["a"]');
    expect(() => loadCredentials({ env: {}, secretsFile: array })).toThrow(/JSON object/);
    const nonString = secretsFile('number.json', '{"A": 5}');
    expect(() => loadCredentials({ env: {}, secretsFile: nonString })).toThrow(/value of A/);
    expect(() => loadCredentials({ env: {}, secretsFile: join(folder, 'absent.json') })).toThrow(/ENOENT/);
  });
});

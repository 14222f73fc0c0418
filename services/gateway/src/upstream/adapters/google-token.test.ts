import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGoogleTokenSource, parseServiceAccount } from './google-token.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' }).toString();

let server: Server;
let tokenUri: string;
let exchanges = 0;
let refuse = false;

beforeAll(async () => {
  // A token endpoint that checks the assertion as Google's does: signature, issuer, audience, grant.
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', async () => {
      const form = new URLSearchParams(text);
      try {
        if (refuse) throw new Error('refused');
        expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
        const { payload, protectedHeader } = await jwtVerify(
          form.get('assertion')!,
          await importSPKI(PUBLIC_PEM, 'RS256'),
          { issuer: 'tollgate@project.iam.gserviceaccount.com', audience: tokenUri },
        );
        expect(protectedHeader).toMatchObject({ alg: 'RS256', kid: 'key-1' });
        expect(payload.scope).toBe('https://www.googleapis.com/auth/cloud-platform');
        exchanges += 1;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ access_token: `ya29.token-${exchanges}`, expires_in: 3599, token_type: 'Bearer' }),
        );
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ error: 'invalid_grant', error_description: 'tollgate@project is not allowed' }),
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tokenUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function credential(): string {
  return JSON.stringify({
    type: 'service_account',
    project_id: 'project',
    private_key_id: 'key-1',
    private_key: PRIVATE_PEM,
    client_email: 'tollgate@project.iam.gserviceaccount.com',
    token_uri: tokenUri,
  });
}

describe('Google service-account tokens', () => {
  it('exchanges a signed assertion once, shares it between concurrent callers and caches it', async () => {
    let clock = 1_800_000_000_000;
    const source = createGoogleTokenSource({ now: () => clock });
    const before = exchanges;
    const [first, second] = await Promise.all([source.token(credential()), source.token(credential())]);
    expect(first).toBe(second);
    expect(exchanges - before).toBe(1);
    clock += 50 * 60_000;
    expect(await source.token(credential())).toBe(first);
    expect(exchanges - before).toBe(1);
    // Five minutes before its expiry (3,599 s), the token is replaced.
    clock += 6 * 60_000;
    const renewed = await source.token(credential());
    expect(renewed).not.toBe(first);
    expect(exchanges - before).toBe(2);
  });

  it('fails with the status alone when the endpoint refuses, and retries on the next call', async () => {
    const source = createGoogleTokenSource();
    refuse = true;
    const error = await source.token(credential()).catch((caught: Error) => caught);
    refuse = false;
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe('the token endpoint answered 400');
    expect(await source.token(credential())).toMatch(/^ya29\.token-/);
  });

  it('refuses a credential that is not a service-account key without quoting it', () => {
    expect(() => parseServiceAccount('AIza-not-json')).toThrow(
      'the credential is not a service-account JSON key',
    );
    expect(() => parseServiceAccount('{"client_email":"x"}')).toThrow(/no client_email or private_key/);
    expect(parseServiceAccount(credential())).toMatchObject({
      clientEmail: 'tollgate@project.iam.gserviceaccount.com',
      projectId: 'project',
      tokenUri,
    });
  });
});

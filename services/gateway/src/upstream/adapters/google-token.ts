import { createHash } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';

/**
 * OAuth access tokens for a Google service account (Vertex AI), from its JSON key: a JWT signed
 * with the account's private key (RS256, `jose`) is exchanged at the account's `token_uri` for a
 * bearer token (RFC 7523, Google's "server to server" flow). Tokens are cached per account and
 * fetched again five minutes before they expire; concurrent callers share one exchange.
 */

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const ASSERTION_LIFETIME_SECONDS = 3600;
/** A token this close to its expiry is replaced before use. */
const REFRESH_MARGIN_MS = 5 * 60_000;

export interface ServiceAccount {
  clientEmail: string;
  privateKey: string;
  privateKeyId?: string;
  tokenUri: string;
  projectId?: string;
}

/** The parts of a service-account JSON key the flow needs; an Error naming no secret otherwise. */
export function parseServiceAccount(json: string): ServiceAccount {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(json) as Record<string, unknown>;
  } catch {
    throw new Error('the credential is not a service-account JSON key');
  }
  const { client_email, private_key, private_key_id, token_uri, project_id } = parsed;
  if (typeof client_email !== 'string' || typeof private_key !== 'string')
    throw new Error('the service-account key has no client_email or private_key');
  return {
    clientEmail: client_email,
    privateKey: private_key,
    ...(typeof private_key_id === 'string' ? { privateKeyId: private_key_id } : {}),
    tokenUri: typeof token_uri === 'string' ? token_uri : DEFAULT_TOKEN_URI,
    ...(typeof project_id === 'string' ? { projectId: project_id } : {}),
  };
}

interface Cached {
  token: string;
  expiresAt: number;
}

export interface GoogleTokenSource {
  /** A valid access token for the account of this JSON key. */
  token(credential: string): Promise<string>;
}

export function createGoogleTokenSource(
  options: { fetch?: typeof fetch; now?: () => number } = {},
): GoogleTokenSource {
  const send = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const pending = new Map<string, Promise<string>>();

  async function exchange(id: string, account: ServiceAccount): Promise<string> {
    const key = await importPKCS8(account.privateKey, 'RS256');
    const issuedAt = Math.floor(now() / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({
        alg: 'RS256',
        typ: 'JWT',
        ...(account.privateKeyId ? { kid: account.privateKeyId } : {}),
      })
      .setIssuer(account.clientEmail)
      .setAudience(account.tokenUri)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + ASSERTION_LIFETIME_SECONDS)
      .sign(key);
    const response = await send(account.tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
    });
    // The body of a refusal is Google's and may quote the account: only the status is kept.
    if (!response.ok) throw new Error(`the token endpoint answered ${response.status}`);
    const body = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string' || typeof body.expires_in !== 'number')
      throw new Error('the token endpoint answered without a token');
    cache.set(id, { token: body.access_token, expiresAt: now() + body.expires_in * 1000 });
    return body.access_token;
  }

  return {
    async token(credential) {
      // Cached by a digest of the key, so the map holds no secret of its own.
      const id = createHash('sha256').update(credential).digest('hex');
      const cached = cache.get(id);
      if (cached && cached.expiresAt - now() > REFRESH_MARGIN_MS) return cached.token;
      let running = pending.get(id);
      if (!running) {
        running = exchange(id, parseServiceAccount(credential)).finally(() => pending.delete(id));
        pending.set(id, running);
      }
      return running;
    },
  };
}

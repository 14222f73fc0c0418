import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import { SignJWT } from 'jose';
import { Pool } from 'undici';

/**
 * A client of the control plane's internal billing API on 127.0.0.1:`port`, with a service token
 * signed once: `call` POSTs a JSON body and returns the parsed answer, or throws on anything but 200.
 */
export async function internalApiClient(port: number, secret: string, connections: number) {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SERVICE_TOKEN_ISSUER)
    .setAudience(SERVICE_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('30m')
    .sign(new TextEncoder().encode(secret));
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections });
  return {
    async call(
      pathName: string,
      body: unknown,
    ): Promise<{ results: Array<{ ok?: boolean; status?: string }> }> {
      const response = await pool.request({
        method: 'POST',
        path: `/internal/v1${pathName}`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`${pathName}: ${response.statusCode} ${text}`);
      return JSON.parse(text) as { results: Array<{ ok?: boolean; status?: string }> };
    },
    close: () => pool.close(),
  };
}

import { AppError } from '@tollgate/errors';
import { isWellFormedApiKey } from '@tollgate/schemas';
import type { HeaderReader } from '../request/inbound.ts';

/** Query parameters that would carry a credential; such a URL is refused (and never logged). */
const CREDENTIAL_PARAMETERS = new Set([
  'key',
  'api_key',
  'apikey',
  'api-key',
  'x-api-key',
  'access_token',
  'token',
]);

// Told apart from a well-formed key the service does not know (the catalogue's message: mistyped
// or rotated), which only a lookup can tell.
const MALFORMED = {
  message:
    'This is not a whole API key: keys start with sk-tg- and end with a checksum. Copy the key again ' +
    'and send it in x-api-key or Authorization: Bearer.',
};

/**
 * The inference key of a request: `x-api-key` or `Authorization: Bearer`, the same key if both.
 * Different keys in the two -> conflicting_api_keys; none, malformed or a bad checksum ->
 * invalid_api_key (without any lookup). A key in the query string is refused outright.
 */
export function readApiKey(headers: HeaderReader, url: string): string {
  const query = url.indexOf('?');
  if (query !== -1) {
    for (const [name, value] of new URLSearchParams(url.slice(query + 1))) {
      if (CREDENTIAL_PARAMETERS.has(name.toLowerCase()) || value.startsWith('sk-')) {
        throw new AppError('invalid_api_key', {
          message:
            'API keys are never accepted in the URL. Send the key in x-api-key or Authorization: Bearer.',
        });
      }
    }
  }
  const fromHeader = headers.get('x-api-key')?.trim() || null;
  const authorization = headers.get('authorization');
  let fromBearer: string | null = null;
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) fromBearer = match[1]!;
    // A malformed Bearer is refused; another scheme (e.g. a proxy's Basic) is not our credential
    // and is ignored when x-api-key carries the key.
    else if (/^Bearer\b/i.test(authorization) || !fromHeader)
      throw new AppError('invalid_api_key', MALFORMED);
  }
  if (fromHeader && fromBearer && fromHeader !== fromBearer) throw new AppError('conflicting_api_keys');
  const key = fromHeader ?? fromBearer;
  if (!key) {
    throw new AppError('invalid_api_key', {
      message: 'No API key. Send your key (it starts with sk-tg-) in x-api-key or Authorization: Bearer.',
    });
  }
  if (!isWellFormedApiKey(key)) throw new AppError('invalid_api_key', MALFORMED);
  return key;
}

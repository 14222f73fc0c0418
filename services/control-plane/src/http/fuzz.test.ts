import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCatalog } from '../../test/billing.ts';
import { createClient, type TestClient, uniqueEmail } from '../../test/client.ts';
import { createTestContext, type TestContext } from '../../test/context.ts';
import {
  type Document,
  deeplyNested,
  HOSTILE_QUERY_VALUES,
  HOSTILE_VALUES,
  type JsonSchema,
  type Operation,
  PATH_IDS,
  resolve,
  sample,
} from '../../test/fuzz-inputs.ts';
import { setAccountRoles } from '../modules/accounts/accounts.service.ts';

// No input a client can send gives a 5xx. Every route of the published OpenAPI document is
// walked (so routes added later are fuzzed too) with a signed-in admin's session and CSRF token:
// path ids random and well-formed, query strings and bodies built from the schemas, then hostile
// variations of every field and of the body as a whole.
let context: TestContext;
let client: TestClient;
let email: string;
const password = 'fuzz-password-long-enough';
const failures: string[] = [];
let requests = 0;
/** Routes whose plain sample was accepted (2xx): the fuzzing reached past validation there. */
const acceptedRoutes = new Set<string>();

const GENEROUS = '1000000';
/** Field values naming records of the seeded catalogue, so samples get past existence checks. */
const HINTS = {
  providerId: 'up-openai',
  // An alias takes one upstream (providerId, upstreamModel) or a list, not both: the sample gives
  // the one (the list's checks are in catalog/alias-upstreams.test.ts).
  upstreams: undefined,
  protocols: ['chat_completions'],
  scope: ['priced'],
  aliases: ['tokens-only'],
  baseUrl: 'https://example.test/v1',
  // Money must carry its currency's own exponent (ISO 4217).
  currency: 'USD',
  exponent: 2,
  timeZone: 'Europe/Paris',
  keyId: null,
};

beforeAll(async () => {
  context = await createTestContext('fuzz', {
    TRUST_PROXY: 'true',
    LOGIN_ADDRESS_LIMIT: GENEROUS,
    LOGIN_ACCOUNT_ADDRESS_LIMIT: GENEROUS,
    LOGIN_ACCOUNT_LIMIT: GENEROUS,
    EMAIL_SEND_ADDRESS_LIMIT: GENEROUS,
    EMAIL_SEND_RECIPIENT_LIMIT: GENEROUS,
    CODE_CHECK_ADDRESS_LIMIT: GENEROUS,
    KEY_REVEAL_LIMIT: GENEROUS,
    LOG_LEVEL: 'silent',
  });
  await seedCatalog(context);
  client = createClient(context);
  email = uniqueEmail('fuzz');
  const { id } = await client.signUp(email, password);
  await setAccountRoles(context.deps.db, id, { admin: true, reseller: true });
  await ensureSignedIn();
}, 60_000);
afterAll(async () => {
  await context.publicApp.mailer.drain();
  await context.close();
});

async function ensureSignedIn(): Promise<void> {
  if (client.sessionToken && client.csrfToken) return;
  const answer = await client.logIn(email, password);
  if (answer.status !== 200) throw new Error(`fuzz login answered ${answer.status}`);
}

interface Attempt {
  method: string;
  path: string;
  query?: Array<[string, string]>;
  body?: string;
  contentType?: string;
  label: string;
}

async function send(attempt: Attempt): Promise<void> {
  await ensureSignedIn();
  const search = new URLSearchParams(attempt.query ?? []).toString();
  const headers: Record<string, string> = {
    'x-forwarded-for': client.ip,
    cookie: `tollgate_session=${client.sessionToken}; tollgate_csrf=${client.csrfToken}`,
    'x-csrf-token': client.csrfToken ?? '',
  };
  if (attempt.body !== undefined) headers['content-type'] = attempt.contentType ?? 'application/json';
  requests += 1;
  let status: number;
  let text: string;
  try {
    const response = await context.publicApp.request(`${attempt.path}${search ? `?${search}` : ''}`, {
      method: attempt.method,
      headers,
      ...(attempt.body === undefined ? {} : { body: attempt.body }),
    });
    status = response.status;
    text = await response.text();
    for (const line of response.headers.getSetCookie()) {
      // Logout (or a session ended by the fuzzed route) clears the cookie: sign in again next time.
      if (/tollgate_session=;|tollgate_session=[^;]*;.*max-age=0/i.test(line)) client.sessionToken = null;
    }
  } catch (error) {
    failures.push(`${attempt.method} ${attempt.path} [${attempt.label}] threw ${String(error)}`);
    return;
  }
  if (status === 401) client.sessionToken = null;
  if (status < 300 && attempt.label === 'sample') acceptedRoutes.add(`${attempt.method} ${attempt.path}`);
  if (status >= 500 || /\bat [\w.<>]+ \(|node:internal|\.ts:\d+/.test(text)) {
    failures.push(`${attempt.method} ${attempt.path} [${attempt.label}] -> ${status} ${text.slice(0, 200)}`);
  }
}

/** Every leaf path of a sample value (depth-limited), for field-by-field mutation. */
function leafPaths(value: unknown, prefix: string[] = [], depth = 0): string[][] {
  if (depth > 4 || value === null || typeof value !== 'object') return prefix.length > 0 ? [prefix] : [];
  const entries = Array.isArray(value)
    ? value.map((item, index) => [String(index), item] as const)
    : Object.entries(value);
  const paths = entries.flatMap(([key, item]) => leafPaths(item, [...prefix, key], depth + 1));
  return prefix.length > 0 ? [prefix, ...paths] : paths;
}

function withValue(base: unknown, path: string[], value: unknown): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  let target: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[path[path.length - 1] as string] = value;
  return copy;
}

function pathVariants(document: Document, template: string, operation: Operation): string[] {
  const names = [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  if (names.length === 0) return [template];
  const fill = (value: (name: string) => string) =>
    names.reduce((path, name) => path.replace(`{${name}}`, value(name)), template);
  const sampled = (name: string) => {
    const parameter = operation.parameters?.find((each) => each.in === 'path' && each.name === name);
    return encodeURIComponent(String(sample(document, parameter?.schema)));
  };
  return [fill(sampled), ...PATH_IDS.map((id) => fill(() => id))];
}

function attemptsOf(document: Document, template: string, method: string, operation: Operation): Attempt[] {
  const verb = method.toUpperCase();
  const paths = pathVariants(document, template, operation);
  const [firstPath] = paths as [string];
  const queryParameters = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query');
  const baseQuery: Array<[string, string]> = queryParameters
    .filter((parameter) => parameter.required)
    .map((parameter) => [parameter.name, String(sample(document, parameter.schema))]);
  const bodySchema: JsonSchema | undefined = operation.requestBody?.content?.['application/json']?.schema;
  const baseBody = bodySchema ? sample(document, resolve(document, bodySchema), 0, HINTS) : undefined;
  const bodyText = baseBody === undefined ? undefined : JSON.stringify(baseBody);
  const attempts: Attempt[] = paths.map((path) => ({
    method: verb,
    path,
    query: baseQuery,
    ...(bodyText === undefined ? {} : { body: bodyText }),
    label: 'sample',
  }));
  const at = (label: string, extra: Partial<Attempt>): Attempt => ({
    method: verb,
    path: firstPath,
    query: baseQuery,
    ...(bodyText === undefined ? {} : { body: bodyText }),
    label,
    ...extra,
  });
  for (const parameter of queryParameters) {
    const others = baseQuery.filter(([name]) => name !== parameter.name);
    const plausible = String(sample(document, parameter.schema));
    attempts.push(at(`query ${parameter.name} sample`, { query: [...others, [parameter.name, plausible]] }));
    attempts.push(
      at(`query ${parameter.name} repeated`, {
        query: [...others, [parameter.name, plausible], [parameter.name, 'second']],
      }),
    );
    for (const value of HOSTILE_QUERY_VALUES) {
      attempts.push(
        at(`query ${parameter.name}=${JSON.stringify(value.slice(0, 30))}`, {
          query: [...others, [parameter.name, value]],
        }),
      );
    }
  }
  attempts.push(
    at('unknown query', { query: [...baseQuery, ['unknown\u0000', '\u0000'], ['limit', '1e999']] }),
  );
  const wholeBodies: Array<[string, string, string?]> = [
    ['empty', ''],
    ['empty object', '{}'],
    ['array', '[]'],
    ['null', 'null'],
    ['string', '"text"'],
    ['number', '123'],
    ['not JSON', '{"unterminated": '],
    ['NUL byte JSON', '{"a":"\u0000"}'],
    ['escaped NUL', '{"name":"\\u0000"}'],
    ['lone surrogate', '{"name":"\\ud800"}'],
    ['deep nesting', deeplyNested(20_000)],
    ['deep object', `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`],
    ['form body', 'a=1&b=2', 'application/x-www-form-urlencoded'],
    ['text body', 'hello', 'text/plain'],
  ];
  // fetch refuses a body on GET/HEAD; every other method gets the whole-body variations.
  for (const [label, body, contentType] of verb === 'GET' ? [] : wholeBodies) {
    attempts.push(at(`body ${label}`, { body, ...(contentType ? { contentType } : {}) }));
  }
  if (baseBody !== undefined && typeof baseBody === 'object' && baseBody !== null) {
    attempts.push(
      at('unknown field', { body: JSON.stringify({ ...baseBody, unknownField: '\u0000', __proto__x: 1 }) }),
    );
    for (const path of leafPaths(baseBody)) {
      for (const value of HOSTILE_VALUES) {
        attempts.push(
          at(`body ${path.join('.')}=${JSON.stringify(value)?.slice(0, 30)}`, {
            body: JSON.stringify(withValue(baseBody, path, value)),
          }),
        );
      }
    }
  }
  return attempts;
}

describe('fuzzing every control-plane route from the OpenAPI document', () => {
  it('never answers 5xx nor leaks a stack trace', async () => {
    const response = await context.publicApp.request('/api/v1/openapi.json');
    const document = (await response.json()) as Document;
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.length).toBeGreaterThan(30);
    // Session-ending routes last, so the rest run signed in without constant re-logins.
    const ordered = [...operations].sort(
      (a, b) => Number(/logout|sessions/.test(a.path)) - Number(/logout|sessions/.test(b.path)),
    );
    for (const { path, method, operation } of ordered) {
      for (const attempt of attemptsOf(document, path, method, operation)) await send(attempt);
    }
    expect(requests).toBeGreaterThan(2_000);
    expect(failures).toEqual([]);
    // The samples are good enough to reach the domain code on most routes.
    expect(acceptedRoutes.size).toBeGreaterThan(operations.length / 2);
  }, 600_000);
});

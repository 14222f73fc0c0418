import type { IncomingHttpHeaders } from 'node:http';
import { anthropicProtocol } from './anthropic.ts';
import { geminiProtocol, type Method } from './gemini.ts';
import type { Protocol } from './protocol.ts';

/**
 * Google Vertex AI, on the paths Vertex serves under
 * `/v1/projects/{project}/locations/{location}/publishers/...`:
 * - Anthropic's models: `.../anthropic/models/{model}:rawPredict` and `:streamRawPredict`, the
 *   messages body without `model` and with `anthropic_version: "vertex-2023-10-16"` (else 400);
 * - Google's: `.../google/models/{model}:generateContent` and `:streamGenerateContent`, as Gemini.
 * Calls carry `Authorization: Bearer` with a token from `POST /token`, the service-account flow's
 * endpoint (an RS256 JWT assertion with the `jwt-bearer` grant), which issues VERTEX_TOKEN.
 */

export const VERTEX_TOKEN = 'ya29.mock-vertex-access-token';
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

type Json = Record<string, unknown>;

function bearerRefusal(headers: IncomingHttpHeaders): { status: number; body: unknown } | null {
  if (headers.authorization === `Bearer ${VERTEX_TOKEN}`) return null;
  return {
    status: 401,
    body: {
      error: {
        code: 401,
        message: 'Request had invalid authentication credentials. Expected OAuth 2 access token.',
        status: 'UNAUTHENTICATED',
      },
    },
  };
}

function vertexClaude(model: string, stream: boolean): Protocol {
  return {
    ...anthropicProtocol,
    readRequest: (body) => ({ ...anthropicProtocol.readRequest({ ...body, model }), model, stream }),
    authorize: async (request) => bearerRefusal(request.headers),
    refuse(_directives, body?: Json) {
      if (body && body.anthropic_version === VERTEX_ANTHROPIC_VERSION && body.model === undefined)
        return undefined;
      return {
        status: 400,
        body: {
          error: {
            code: 400,
            message: 'anthropic_version: vertex-2023-10-16 is required and model must not be set',
            status: 'INVALID_ARGUMENT',
          },
        },
      };
    },
  };
}

const PATH =
  /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/(anthropic|google)\/models\/([^/:]+):(rawPredict|streamRawPredict|generateContent|streamGenerateContent)$/;

/** Vertex's protocol for a request URL, or undefined when the path is not one of Vertex's. */
export function vertexProtocolFor(path: string, url: string): Protocol | undefined {
  const match = PATH.exec(path);
  if (!match) return undefined;
  const [, publisher, rawModel, method] = match;
  const model = decodeURIComponent(rawModel!);
  if (publisher === 'anthropic') {
    if (method !== 'rawPredict' && method !== 'streamRawPredict') return undefined;
    return vertexClaude(model, method === 'streamRawPredict');
  }
  if (method !== 'generateContent' && method !== 'streamGenerateContent') return undefined;
  const sse = new URL(url, 'http://mock').searchParams.get('alt') === 'sse';
  const gemini = geminiProtocol(model, method as Method, sse);
  return { ...gemini, authorize: async (request) => bearerRefusal(request.headers) };
}

/** `POST /token`: the OAuth token endpoint of the service-account flow. */
export function tokenAnswer(form: string): { status: number; body: unknown } {
  const params = new URLSearchParams(form);
  const assertion = params.get('assertion') ?? '';
  const [header, claims] = assertion.split('.').map((part) => {
    try {
      return JSON.parse(Buffer.from(part, 'base64url').toString()) as Json;
    } catch {
      return {};
    }
  });
  const valid =
    params.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' &&
    header?.alg === 'RS256' &&
    typeof claims?.iss === 'string' &&
    typeof claims.exp === 'number';
  if (!valid) return { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT.' } };
  return { status: 200, body: { access_token: VERTEX_TOKEN, expires_in: 3599, token_type: 'Bearer' } };
}

import { AppError } from '@tollgate/errors';
import { isRecord, parseJson } from '../json-scan.ts';
import type { UpstreamAdapter, UpstreamRequest, UpstreamTarget } from '../types.ts';
import { anthropicAdapter } from './anthropic-adapter.ts';
import { geminiAdapter } from './gemini-adapter.ts';
import { createGoogleTokenSource } from './google-token.ts';
import { trimBaseUrl } from './surface.ts';

/**
 * Google Vertex AI. The base URL names the project and location
 * (`https://LOCATION-aiplatform.googleapis.com/v1/projects/PROJECT/locations/LOCATION`); the
 * credential is a service-account JSON key, exchanged for an OAuth token (google-token.ts) on
 * every call's authorisation. One kind serves two publishers, told apart by the model id:
 * - Claude models (`claude-...`): Anthropic's messages protocol through `:rawPredict` /
 *   `:streamRawPredict`, the body without `model` and with `anthropic_version: vertex-2023-10-16`;
 * - every other model (Gemini): Gemini's protocol through `:generateContent` /
 *   `:streamGenerateContent?alt=sse`.
 * Usage is read as on Anthropic's and Gemini's own APIs.
 */

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

const tokens = createGoogleTokenSource();

async function authorize(
  request: { url: string; headers: Record<string, string>; body: string },
  target: UpstreamTarget,
): Promise<UpstreamRequest> {
  if (target.credential === null) return request;
  const token = await tokens.token(target.credential);
  return { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } };
}

function modelUrl(target: UpstreamTarget, publisher: string, method: string): string {
  const model = encodeURIComponent(target.upstreamModel);
  return `${trimBaseUrl(target.provider.baseUrl)}/publishers/${publisher}/models/${model}:${method}`;
}

/** The messages body as Vertex takes it: no `model` (in the URL), Vertex's `anthropic_version`. */
function vertexClaudeBody(body: string): string {
  const parsed = parseJson(body);
  if (!isRecord(parsed)) return body;
  const { model: _model, ...rest } = parsed;
  return JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest });
}

export const vertexClaudeAdapter: UpstreamAdapter = {
  ...anthropicAdapter,
  kind: 'vertex',
  buildRequest(input) {
    if (input.surface !== 'messages') throw new AppError('model_unavailable');
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const beta = input.clientHeaders.get('anthropic-beta');
    if (beta) headers['anthropic-beta'] = beta;
    return {
      url: modelUrl(input.target, 'anthropic', input.stream ? 'streamRawPredict' : 'rawPredict'),
      headers,
      ...(input.body === undefined ? {} : { body: vertexClaudeBody(input.body) }),
    };
  },
  authorize,
};

export const vertexGeminiAdapter: UpstreamAdapter = {
  ...geminiAdapter,
  kind: 'vertex',
  buildRequest(input) {
    if (input.surface !== 'gemini') throw new AppError('model_unavailable');
    return {
      url: modelUrl(
        input.target,
        'google',
        input.stream ? 'streamGenerateContent?alt=sse' : 'generateContent',
      ),
      headers: { 'content-type': 'application/json' },
    };
  },
  authorize,
};

/** The publisher of a Vertex model id: Anthropic's models are named `claude-...`. */
export function vertexAdapterFor(upstreamModel: string): UpstreamAdapter {
  return /^claude/i.test(upstreamModel) ? vertexClaudeAdapter : vertexGeminiAdapter;
}

import { AppError } from '@tollgate/errors';
import { PROVIDER_KIND_SURFACES } from '@tollgate/schemas';
import { firstCandidate, promptBlocked } from '../../translation/protocols/gemini/response.ts';
import { decodeGeminiUsage } from '../../translation/protocols/gemini/usage.ts';
import { isRecord, looksLikeJsonObject, parseJson } from '../json-scan.ts';
import type { SseEvent } from '../sse.ts';
import type {
  StreamEventVerdict,
  StreamUsageTracker,
  UpstreamAdapter,
  UpstreamRequest,
  UpstreamTarget,
  UsageFigures,
} from '../types.ts';
import { plainUsage } from '../types.ts';
import { trimBaseUrl } from './surface.ts';

/**
 * Google's Gemini API (generativelanguage.googleapis.com). Every surface reaches it translated
 * (translation/protocols/gemini): the model is in the URL, streaming is another method
 * (`:streamGenerateContent?alt=sse`), and the key goes in `x-goog-api-key`, never in the URL,
 * where it would end up in access logs.
 */
const API_VERSION = '/v1beta';

function modelUrl(baseUrl: string, model: string, stream: boolean): string {
  const base = trimBaseUrl(baseUrl);
  // A base written with its version (`.../v1beta`, `.../v1`) is taken as it is.
  const root = /\/v1(beta\d*|alpha\d*)?$/.test(base) ? base : `${base}${API_VERSION}`;
  const id = encodeURIComponent(model.startsWith('models/') ? model.slice('models/'.length) : model);
  return stream
    ? `${root}/models/${id}:streamGenerateContent?alt=sse`
    : `${root}/models/${id}:generateContent`;
}

function buildRequest(input: { target: UpstreamTarget; surface: string; stream?: boolean }): UpstreamRequest {
  if (input.surface !== 'gemini') throw new AppError('model_unavailable');
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (input.target.credential !== null) headers['x-goog-api-key'] = input.target.credential;
  return {
    url: modelUrl(input.target.provider.baseUrl, input.target.upstreamModel, input.stream === true),
    headers,
  };
}

function figures(usageMetadata: unknown): UsageFigures | null {
  const usage = decodeGeminiUsage(usageMetadata);
  if (usage === null) return null;
  // The representation's input includes cache reads (as Gemini's prompt count does); billing
  // takes them out so each is charged once, at its own price (a cached count above the prompt's
  // is not believed).
  const read = usage.cacheRead <= usage.input ? usage.cacheRead : 0;
  return { ...plainUsage(BigInt(usage.input - read), BigInt(usage.output)), cacheReadTokens: BigInt(read) };
}

function extractUsage(surface: string, body: unknown): UsageFigures | null {
  if (surface !== 'gemini' || !isRecord(body)) return null;
  return figures(body.usageMetadata);
}

/**
 * Gemini streams have no end event: the chunk whose candidate has a finishReason (or whose
 * prompt was blocked) ends the answer. Every chunk repeats the cumulative usageMetadata, so only
 * that last chunk's figures count (a sum would bill each token many times); a stream cut before
 * it has no usage, and its reservation is held.
 */
class GeminiUsageTracker implements StreamUsageTracker {
  #usage: UsageFigures | null = null;

  observe(event: SseEvent): StreamEventVerdict {
    if (!looksLikeJsonObject(event.data)) return 'invalid';
    const chunk = parseJson(event.data);
    if (!isRecord(chunk)) return 'invalid';
    if (chunk.error !== undefined) return 'provider_error';
    const candidate = firstCandidate(chunk);
    const ended = candidate !== null ? typeof candidate.finishReason === 'string' : promptBlocked(chunk);
    if (!ended) return 'pass';
    this.#usage = figures(chunk.usageMetadata);
    return 'terminal';
  }

  usage(): UsageFigures | null {
    return this.#usage;
  }
}

/** Reasons Google gives with 400 that are about our key or project, not the caller's request. */
const CREDENTIAL_REASONS = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED']);

/**
 * Gemini answers a wrong or expired key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), and
 * an unusable project or region with 400 FAILED_PRECONDITION: neither is the caller's to fix.
 */
function isCredentialRefusal(status: number, body: unknown): boolean {
  if (status !== 400 || !isRecord(body) || !isRecord(body.error)) return false;
  if (body.error.status === 'FAILED_PRECONDITION') return true;
  const details = Array.isArray(body.error.details) ? body.error.details : [];
  return details.some((detail) => isRecord(detail) && CREDENTIAL_REASONS.has(String(detail.reason)));
}

export const geminiAdapter: UpstreamAdapter = {
  kind: 'gemini',
  surfaces: PROVIDER_KIND_SURFACES.gemini,
  wireProtocol: 'gemini',
  buildRequest,
  extractUsage,
  createStreamUsageTracker(surface) {
    if (surface !== 'gemini') throw new AppError('model_unavailable');
    return new GeminiUsageTracker();
  },
  isCredentialRefusal,
};

import type { IncomingHttpHeaders } from 'node:http';
import {
  type DeclaredTool,
  type PlannedUsage,
  promptInputTokens,
  type ReplyPlan,
  THINKING_TEXT,
} from '../reply-plan.ts';
import { chooseTool, type RequestedChoice } from '../tool-choice.ts';
import { type Protocol, readNumber, type StreamEvents } from './protocol.ts';

/**
 * Google's Gemini API: POST /v1beta/models/{model}:generateContent, :streamGenerateContent
 * (`?alt=sse` for server-sent events, else one JSON array of the chunks) and :countTokens. As
 * Gemini does:
 * - the model is in the URL; the key in `x-goog-api-key`; a wrong key is 400 INVALID_ARGUMENT with
 *   reason API_KEY_INVALID, a missing one 403 PERMISSION_DENIED;
 * - errors are `{error: {code, message, status}}` with Google's status names;
 * - usageMetadata: `promptTokenCount` (cached tokens included, also given as
 *   `cachedContentTokenCount`), `candidatesTokenCount`, and `thoughtsTokenCount` apart from the
 *   candidates (the `reasoning_tokens` directive); zero counts are left out, as proto3 JSON does;
 * - a stream repeats the cumulative usageMetadata on every chunk; the last chunk carries the
 *   finishReason and the final figures; there is no end marker;
 * - a function call is STOP; calls come whole, all in one chunk.
 */

type Json = Record<string, unknown>;

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function errorBody(status: number, message: string): Json {
  const name = STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  return { error: { code: status, message, status: name } };
}

function unauthorized(headers: IncomingHttpHeaders): { status: number; body: unknown } | null {
  if (headers['x-goog-api-key'] === undefined) {
    return {
      status: 403,
      body: errorBody(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      ),
    };
  }
  const body = errorBody(400, 'API key not valid. Please pass a valid API key.');
  (body.error as Json).details = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'API_KEY_INVALID',
      domain: 'googleapis.com',
      metadata: { service: 'generativelanguage.googleapis.com' },
    },
  ];
  return { status: 400, body };
}

const FINISH_REASONS = { end: 'STOP', max: 'MAX_TOKENS', tool: 'STOP' } as const;

const object = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};

function declaredTools(body: Json): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools.flatMap((tool) => {
    const declarations = object(tool).functionDeclarations;
    return Array.isArray(declarations)
      ? declarations
          .map(object)
          .filter((declaration) => typeof declaration.name === 'string')
          .map((declaration) => ({
            name: declaration.name as string,
            schema: declaration.parametersJsonSchema ?? declaration.parameters,
          }))
      : [];
  });
}

/** toolConfig.functionCallingConfig: AUTO, ANY (limited by allowedFunctionNames) or NONE. */
function requestedChoice(body: Json): RequestedChoice {
  const config = object(object(body.toolConfig).functionCallingConfig);
  if (config.mode === 'NONE') return { mode: 'none' };
  if (config.mode !== 'ANY') return { mode: 'auto' };
  const allowed = Array.isArray(config.allowedFunctionNames) ? config.allowedFunctionNames : [];
  return allowed.length === 1 && typeof allowed[0] === 'string'
    ? { mode: 'required', name: allowed[0] }
    : { mode: 'required' };
}

function afterToolResult(body: Json): boolean {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const last = object(contents.at(-1));
  return (
    last.role !== 'model' &&
    Array.isArray(last.parts) &&
    last.parts.some((part) => object(part).functionResponse !== undefined)
  );
}

/** A usageMetadata with `share` of the output produced; zero counts left out. */
function usageMetadata(usage: PlannedUsage, share: number): Json {
  const candidates = Math.round(usage.outputTokens * share);
  const prompt = promptInputTokens(usage);
  const metadata: Json = { promptTokenCount: prompt };
  if (candidates > 0) metadata.candidatesTokenCount = candidates;
  metadata.totalTokenCount = prompt + candidates + usage.reasoningTokens;
  if (usage.cacheRead > 0) {
    metadata.cachedContentTokenCount = usage.cacheRead;
    metadata.cacheTokensDetails = [{ modality: 'TEXT', tokenCount: usage.cacheRead }];
  }
  metadata.promptTokensDetails = [{ modality: 'TEXT', tokenCount: prompt }];
  if (usage.reasoningTokens > 0) metadata.thoughtsTokenCount = usage.reasoningTokens;
  return metadata;
}

/** A thought signature: opaque, as Gemini's are; only this mock issues it. */
const signatureOf = (plan: ReplyPlan) => `bW9ja3NpZw_${plan.id}`;

function callParts(plan: ReplyPlan): Json[] {
  return plan.toolCalls.map((call, index) => ({
    functionCall: { name: call.name, args: JSON.parse(call.arguments) as unknown },
    ...(index === 0 && plan.thinking !== undefined ? { thoughtSignature: signatureOf(plan) } : {}),
  }));
}

function chunk(plan: ReplyPlan, parts: Json[], share: number, finish: boolean): Json {
  const candidate: Json = { content: { parts, role: 'model' } };
  if (finish) candidate.finishReason = FINISH_REASONS[plan.stop];
  candidate.index = 0;
  const body: Json = { candidates: [candidate] };
  if (plan.usage) body.usageMetadata = usageMetadata(plan.usage, share);
  body.modelVersion = plan.model;
  body.responseId = plan.id;
  return body;
}

function wholeAnswer(plan: ReplyPlan): Json {
  const parts: Json[] = [];
  if (plan.thinking !== undefined) parts.push({ text: THINKING_TEXT, thought: true });
  if (plan.toolCalls.length > 0) parts.push(...callParts(plan));
  else parts.push({ text: plan.text });
  return chunk(plan, parts, 1, true);
}

/** The chunks of a streamed answer: thoughts, then each word (or the calls), the last one finishing. */
function chunks(plan: ReplyPlan): StreamEvents {
  const contents: Json[][] = [];
  if (plan.thinking !== undefined) contents.push([{ text: THINKING_TEXT, thought: true }]);
  const firstDelta = contents.length;
  if (plan.toolCalls.length > 0) contents.push(callParts(plan));
  else if (plan.pieces.length === 0) contents.push([{ text: '' }]);
  else for (const text of plan.pieces) contents.push([{ text }]);
  const answerChunks = contents.length - firstDelta;
  const events = contents.map((parts, index) => {
    const share = index < firstDelta ? 0 : (index - firstDelta + 1) / answerChunks;
    return { data: chunk(plan, parts, share, index === contents.length - 1) };
  });
  // The last chunk carries a word as well as the finish reason and usage: nothing closes apart.
  return { events, firstDelta, closing: 0 };
}

export type Method = 'generateContent' | 'streamGenerateContent' | 'countTokens';

export function geminiProtocol(model: string, method: Method, sse: boolean): Protocol {
  return {
    readRequest(body) {
      const tools = declaredTools(body);
      return {
        model,
        // Without alt=sse a stream is one JSON array of its chunks, which `reply` writes.
        stream: method === 'streamGenerateContent' && sse,
        maxOutput: readNumber(object(body.generationConfig).maxOutputTokens),
        includeUsage: true,
        tools,
        afterToolResult: afterToolResult(body),
        ...chooseTool(tools, requestedChoice(body)),
      };
    },
    isAuthorized: (headers, expectedApiKey) => headers['x-goog-api-key'] === expectedApiKey,
    authorize: async (request, expectedApiKey) =>
      request.headers['x-goog-api-key'] === expectedApiKey ? null : unauthorized(request.headers),
    errorBody,
    reply(plan) {
      if (method === 'countTokens') return { totalTokens: plan.usage?.inputTokens ?? 0 };
      if (method === 'streamGenerateContent') return chunks(plan).events.map((event) => event.data);
      return wholeAnswer(plan);
    },
    stream: (plan) => chunks(plan),
    streamError: () => ({
      data: errorBody(
        500,
        'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      ),
    }),
  };
}

const PATH = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/** Gemini's protocol for a request URL, or undefined when the path is not one of Gemini's. */
export function geminiProtocolFor(path: string, url: string): Protocol | undefined {
  const match = PATH.exec(path);
  if (!match) return undefined;
  const sse = new URL(url, 'http://mock').searchParams.get('alt') === 'sse';
  return geminiProtocol(decodeURIComponent(match[1]!), match[2] as Method, sse);
}

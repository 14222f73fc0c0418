import type { Directives } from './directives.ts';
import type { ToolChoice } from './tool-choice.ts';

/** The fixed model every protocol answers as when the request names none. */
export const MOCK_MODEL = 'mock-model-1';

/** The default reply; `words=N` repeats these words until N. */
const VOCABULARY = ['Hello', 'from', 'the', 'mock', 'upstream.'];
export const DEFAULT_WORDS = VOCABULARY.length;
/** Longest text produced for an `output_tokens=N` directive; the reported figure stays N. */
const MAX_PLAUSIBLE_WORDS = 4096;
const MAX_SCHEMA_DEPTH = 4;

/** A tool the request declared, in protocol-neutral form. */
export interface DeclaredTool {
  name: string;
  schema: unknown;
}

/** What a protocol reads from a request body. */
export interface ProtocolRequest {
  model: string;
  stream: boolean;
  /** max_tokens / max_completion_tokens / max_output_tokens, when given. */
  maxOutput?: number;
  /** Chat streams only: stream_options.include_usage. Other protocols always carry usage. */
  includeUsage: boolean;
  /** The tool a call would use: the one tool_choice names, else the first declared. */
  tool?: DeclaredTool;
  /** From the request's tool_choice; `auto` when absent. */
  toolChoice?: ToolChoice;
  /** Every declared tool, in order. */
  tools?: DeclaredTool[];
  /** The last turn carries a tool's result: a `tool` directive has been answered. */
  afterToolResult?: boolean;
}

/**
 * What the reply used. `inputTokens` is input neither read from nor written to a cache; each
 * protocol reports the cache parts its own way (promptInputTokens for those that count them
 * inside the prompt).
 */
export interface PlannedUsage {
  inputTokens: number;
  outputTokens: number;
  cacheRead: number;
  /** Five-minute cache writes. */
  cacheWrite: number;
  /** One-hour cache writes (Anthropic tells them apart). */
  cacheWrite1h: number;
  reasoningTokens: number;
}

/**
 * The prompt count of the protocols that count cached tokens inside it (OpenAI's prompt and input
 * tokens, Gemini's promptTokenCount): every input token. Neither reports cache writes, which they
 * bill as ordinary input.
 */
export function promptInputTokens(usage: PlannedUsage): number {
  return usage.inputTokens + usage.cacheRead + usage.cacheWrite + usage.cacheWrite1h;
}

export interface PlannedToolCall {
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

/** Everything a protocol needs to render one answer, streamed or not. */
export interface ReplyPlan {
  /** Unique per answer; protocols prefix it (msg_, chatcmpl-, resp_, call_ ...). */
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
  /** Text pieces as streamed: the first word, then each further word with its leading space. */
  pieces: string[];
  text: string;
  /** Reasoning shown before the answer (`thinking` directive). */
  thinking?: string;
  /** Calls made in parallel; empty for a text answer. */
  toolCalls: PlannedToolCall[];
  stop: 'end' | 'max' | 'tool';
  /** Absent under `no_usage`. */
  usage?: PlannedUsage;
}

let sequence = 0;
const processTag = process.pid.toString(36);

function nextId(): string {
  sequence += 1;
  return `mock${processTag}x${sequence.toString(36)}`;
}

/** About four request bytes per input token, as documented in the README. */
export function estimateInputTokens(bodyBytes: number): number {
  return Math.max(1, Math.ceil(bodyBytes / 4));
}

function buildPieces(count: number): string[] {
  const pieces = new Array<string>(count);
  for (let index = 0; index < count; index += 1) {
    const word = VOCABULARY[index % VOCABULARY.length]!;
    pieces[index] = index === 0 ? word : ` ${word}`;
  }
  return pieces;
}

/**
 * A value valid for a simple JSON schema: the first enum or const value, the first of anyOf /
 * oneOf / allOf, else by type
 * (string "mock", number/integer 1, boolean true, array [], null null); objects get every declared
 * property filled the same way.
 */
export function sampleValue(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null) return 'mock';
  const described = schema as Record<string, unknown>;
  if ('const' in described) return described.const;
  if (Array.isArray(described.enum) && described.enum.length > 0) return described.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = described[key];
    if (Array.isArray(options) && options.length > 0) return sampleValue(options[0], depth);
  }
  const type = Array.isArray(described.type) ? described.type[0] : described.type;
  switch (type) {
    case 'object':
      return sampleObject(described, depth);
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'null':
      return null;
    case undefined:
      return typeof described.properties === 'object' ? sampleObject(described, depth) : 'mock';
    default:
      return 'mock';
  }
}

function sampleObject(schema: Record<string, unknown>, depth: number): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const properties = schema.properties;
  if (depth >= MAX_SCHEMA_DEPTH || typeof properties !== 'object' || properties === null) return result;
  for (const [name, property] of Object.entries(properties)) {
    result[name] = sampleValue(property, depth + 1);
  }
  return result;
}

/** The arguments the mock passes to a tool: an object filled from its parameter schema. */
export function sampleArguments(schema: unknown): string {
  const value = sampleValue(schema);
  return JSON.stringify(typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {});
}

/** The text of a `thinking` directive's reasoning. */
export const THINKING_TEXT = 'The mock considers the request.';

/** The ids of one answer's calls: the answer's id, then `_1`, `_2`... for parallel ones. */
export function callId(plan: ReplyPlan, index: number): string {
  return index === 0 ? plan.id : `${plan.id}_${index}`;
}

/**
 * The tools the answer calls: a forced choice calls its tool as a provider must; `none` never
 * does; `auto` only on a directive (`tool`, `tool_name`, `tools=N`) and not once the last turn
 * is a tool's result, so an agent loop gets its call and then an answer.
 */
function calledTools(request: ProtocolRequest, directives: Directives): DeclaredTool[] {
  const choice = request.toolChoice ?? 'auto';
  if (choice === 'none') return [];
  if (choice === 'required') return request.tool ? [request.tool] : [];
  if (request.afterToolResult) return [];
  const declared = request.tools ?? (request.tool ? [request.tool] : []);
  if (directives.toolName !== undefined) {
    return declared.filter((tool) => tool.name === directives.toolName).slice(0, 1);
  }
  if (directives.tools !== undefined) return declared.slice(0, directives.tools);
  return directives.tool && request.tool ? [request.tool] : [];
}

function capped(count: number, maxOutput: number | undefined): number {
  return maxOutput === undefined ? count : Math.min(count, maxOutput);
}

/**
 * Decides the answer: text or tool call, stop reason and usage, all from the request and its
 * directives, so tests can predict every figure.
 */
export function planReply(request: ProtocolRequest, directives: Directives, bodyBytes: number): ReplyPlan {
  const { maxOutput } = request;
  const wanted = directives.words ?? Math.min(directives.outputTokens ?? DEFAULT_WORDS, MAX_PLAUSIBLE_WORDS);
  let pieces: string[] = [];
  let stop: ReplyPlan['stop'];
  let countedOutput: number;
  const toolCalls = calledTools(request, directives).map((tool) => ({
    name: tool.name,
    arguments: sampleArguments(tool.schema),
  }));
  if (toolCalls.length > 0) {
    const bytes = toolCalls.reduce((sum, call) => sum + Buffer.byteLength(call.arguments), 0);
    stop = 'tool';
    countedOutput = capped(Math.max(1, Math.ceil(bytes / 4)), maxOutput);
  } else {
    const count = capped(wanted, maxOutput);
    pieces = buildPieces(count);
    stop = count < wanted ? 'max' : 'end';
    countedOutput = count;
  }
  const usage: PlannedUsage | undefined = directives.noUsage
    ? undefined
    : {
        inputTokens: directives.inputTokens ?? estimateInputTokens(bodyBytes),
        // An explicit figure is reported as given, even above the max output, so tests can
        // simulate a provider that over-reports.
        outputTokens: directives.outputTokens ?? countedOutput,
        cacheRead: directives.cacheRead ?? 0,
        cacheWrite: directives.cacheWrite ?? 0,
        cacheWrite1h: directives.cacheWrite1h ?? 0,
        reasoningTokens: directives.reasoningTokens ?? 0,
      };
  return {
    id: nextId(),
    model: request.model,
    created: Math.floor(Date.now() / 1000),
    pieces,
    text: pieces.join(''),
    ...(directives.thinking ? { thinking: THINKING_TEXT } : {}),
    toolCalls,
    stop,
    usage,
  };
}

/** Splits tool-call arguments into the fragments a provider streams. */
export function splitFragments(text: string, size = 12): string[] {
  const fragments: string[] = [];
  for (let start = 0; start < text.length; start += size) fragments.push(text.slice(start, start + size));
  return fragments;
}

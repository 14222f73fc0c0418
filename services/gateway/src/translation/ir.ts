/**
 * The one internal representation every surface translates through: a request, a response, the
 * parts of a streamed answer, and usage. Each wire protocol has a decoder into it and an encoder
 * out of it (`protocols/<name>/`); no protocol module imports another. Pure data: no I/O.
 *
 * A field the caller sent that some upstream protocol cannot express keeps the caller's own name
 * (`Sourced.field`), so the encoder that cannot express it refuses it with unsupported_parameter
 * naming exactly what the caller wrote.
 */

/** A value with the caller's name for it (`top_k`, `messages[2].content[0].source`). */
export interface Sourced<T> {
  value: T;
  field: string;
}

export type IrImageSource =
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'url'; url: string };

export type IrDocumentSource =
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'url'; url: string }
  | { kind: 'text'; text: string };

export interface IrText {
  type: 'text';
  text: string;
}

export interface IrImage {
  type: 'image';
  source: IrImageSource;
  /** Where the caller wrote it, for a refusal. */
  field: string;
}

export interface IrDocument {
  type: 'document';
  source: IrDocumentSource;
  title?: string;
  field: string;
}

/**
 * Reasoning the model produced. `text` is what it showed (thinking, or a summary); `proof` is what
 * its provider needs to accept it back (an Anthropic signature, OpenAI encrypted content, redacted
 * thinking data), always as the provider issued it and tagged with who issued it (see
 * signatures.ts): never invented, never sent to another provider.
 */
export interface IrReasoning {
  type: 'reasoning';
  text: string;
  proof?: ReasoningProof;
}

export interface ReasoningProof {
  /** Who issued it: a provider tag from signatures.ts. */
  origin: string;
  kind: 'signature' | 'redacted' | 'encrypted';
  value: string;
  /** OpenAI's reasoning item id, which must travel with its encrypted content. */
  itemId?: string;
}

export interface IrToolCall {
  type: 'tool_call';
  /** The provider's call id; tool results name it. */
  callId: string;
  name: string;
  /** Namespace of a Responses namespace tool, if any. */
  namespace?: string;
  /** The arguments as JSON text (a custom tool's input is `{"input": "..."}`). */
  arguments: string;
}

export interface IrToolResult {
  type: 'tool_result';
  callId: string;
  content: Array<IrText | IrImage>;
  isError: boolean;
}

export type IrUserPart = IrText | IrImage | IrDocument;
export type IrAssistantPart = IrText | IrReasoning | IrToolCall;

export type IrMessage =
  | { role: 'user'; content: IrUserPart[] }
  | { role: 'assistant'; content: IrAssistantPart[] }
  | { role: 'tool'; content: IrToolResult[] };

export interface IrTool {
  name: string;
  namespace?: string;
  description?: string;
  /** JSON schema of the arguments (function tools). */
  parameters: Record<string, unknown>;
  /**
   * A Responses custom (freeform) tool: the model writes one string. Upstreams without custom
   * tools get a function with one string argument `input`, turned back into a custom call.
   */
  custom?: { format?: unknown };
  strict?: boolean;
}

export type IrToolChoice =
  | { type: 'auto' }
  | { type: 'required' }
  | { type: 'none' }
  | { type: 'tool'; name: string; namespace?: string };

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Reasoning asked for: an effort, a token budget, or both (each upstream takes what it has). */
export interface IrReasoningRequest {
  effort?: ReasoningEffort;
  budgetTokens?: number;
  /** Whether the caller wants the reasoning text (summaries) shown. */
  summary?: boolean;
  field: string;
}

export interface IrResponseFormat {
  type: 'json_schema' | 'json_object';
  name?: string;
  schema?: Record<string, unknown>;
  strict?: boolean;
  field: string;
}

export interface IrRequest {
  /** Instructions: system prompt, developer messages, `instructions`; in order. */
  system: string[];
  messages: IrMessage[];
  tools: IrTool[];
  toolChoice?: IrToolChoice;
  /** False when the caller forbade parallel tool calls. */
  parallelToolCalls?: Sourced<boolean>;
  /** Already checked and clamped on the caller's field (request/max-output.ts). */
  maxOutputTokens: number;
  temperature?: number;
  topP?: number;
  stopSequences?: Sourced<string[]>;
  reasoning?: IrReasoningRequest;
  responseFormat?: IrResponseFormat;
  /** The caller's end-user id (metadata.user_id, user, safety_identifier). */
  user?: string;
  stream: boolean;
  /**
   * Everything else the caller sent that only some upstreams can express (`top_k`, `seed`,
   * penalties...): mapped by the encoders that know it, refused by the others.
   */
  extras: Array<Sourced<unknown> & { feature: ExtraFeature }>;
}

/** Features with no common meaning: each encoder lists the ones it expresses. */
export type ExtraFeature =
  | 'top_k'
  | 'seed'
  | 'frequency_penalty'
  | 'presence_penalty'
  | 'logit_bias'
  | 'logprobs'
  | 'top_logprobs'
  | 'service_tier';

export type IrStopReason =
  | 'stop'
  | 'stop_sequence'
  | 'length'
  | 'tool_calls'
  | 'content_filter'
  | 'refusal'
  | 'context_window'
  | 'pause';

/**
 * Token usage, exact. `input` counts every input token the provider billed (uncached, cache
 * writes and cache reads); `output` every output token (reasoning included).
 */
export interface IrUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Part of `output`; null when the provider did not say. */
  reasoning: number | null;
}

export interface IrResponse {
  id: string;
  content: IrAssistantPart[];
  stopReason: IrStopReason;
  stopSequence?: string;
  usage: IrUsage;
  /** Unix seconds, when the provider said. */
  created?: number;
}

/**
 * The parts of a streamed answer. Blocks (text, reasoning, tool call) have ids unique within the
 * stream; every delta names its block. `finish` comes once, last, with the final usage.
 */
export type IrStreamPart =
  | { type: 'start'; id: string }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; delta: string }
  | { type: 'reasoning-proof'; id: string; proof: ReasoningProof }
  | { type: 'tool-call-start'; id: string; callId: string; name: string; namespace?: string }
  | { type: 'tool-call-delta'; id: string; delta: string }
  | { type: 'block-end'; id: string }
  | { type: 'finish'; reason: IrStopReason; stopSequence?: string; usage: IrUsage | null };

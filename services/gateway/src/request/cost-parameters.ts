import { AppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import type { HeaderReader } from './inbound.ts';

/*
 * Parameters that change what a call can cost beyond the tokens a reservation covers (input
 * estimate plus maximum output). Each one is reserved for, refused with unsupported_parameter, or
 * allowed because it costs only tokens the provider reports (docs/pricing.md lists them all):
 * - reserved for: chat `n` (the maximum output is per choice, so the reservation multiplies it);
 * - refused: state kept at the provider (Responses `previous_response_id`, `conversation`,
 *   `prompt`; Messages `thread`): it adds input nobody here can count, and it is shared by every
 *   customer of the operator's provider account; tools the provider runs and bills per use or per
 *   container hour (web search, web fetch, code execution, file search, image generation, remote
 *   MCP servers, hosted shells and containers); premium modes priced above the alias's price (fast
 *   speed, priority tier, regional inference, other models as fallbacks); background Responses
 *   (answered later through an endpoint this gateway does not serve);
 * - betas: only the `anthropic-beta` values known to cost nothing but reported tokens pass (plus
 *   any the operator adds with GATEWAY_ANTHROPIC_BETAS); the others (long-context premium prices,
 *   one-hour cache writes at twice the input price, code execution, files, MCP...) are refused.
 */

/**
 * Betas whose features are billed only as tokens the provider reports in `usage`. What Claude
 * Code sends is among them (claude-code, interleaved thinking, fine-grained tool streaming,
 * context management).
 */
export const ALLOWED_ANTHROPIC_BETAS: ReadonlySet<string> = new Set([
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'context-management-2025-06-27',
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'computer-use-2025-11-24',
  'output-128k-2025-02-19',
  'output-300k-2026-03-24',
  'dev-full-thinking-2025-05-14',
  'model-context-window-exceeded-2025-08-26',
  'structured-outputs-2025-11-13',
  'prompt-caching-2024-07-31',
  'pdfs-2024-09-25',
  'token-counting-2024-11-01',
  'token-efficient-tools-2025-02-19',
  'effort-2025-11-24',
]);

export interface CostParameterSettings {
  /** Most chat choices (`n`) one call may ask for. */
  maxChoices: number;
  /** Betas the operator allows on top of ALLOWED_ANTHROPIC_BETAS. */
  extraAnthropicBetas: ReadonlySet<string>;
}

/** What the reservation must multiply: the maximum output is reserved once per choice. */
export interface CostShape {
  choices: number;
}

type Check = (value: unknown, field: string) => void;

const MAX_QUOTED = 64;

function quote(text: string): string {
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}...` : text;
}

function refuse(field: string, why: string): AppError {
  return new AppError('unsupported_parameter', { message: `Unsupported parameter: ${field} (${why}).` });
}

const STORED_STATE = 'state kept at the model provider is not available here; send the whole conversation';
const BILLED_TOOL = 'tools the provider runs and bills itself are not available; define your own tools';
const PREMIUM = 'priced above this model’s price';

/** Refused whenever it is given (null counts as not given). */
const never =
  (why: string): Check =>
  (value, field) => {
    if (value !== null && value !== undefined) throw refuse(field, why);
  };

/** Only these values (or null) are admitted. */
const onlyValues =
  (allowed: readonly unknown[], why: string): Check =>
  (value, field) => {
    if (value !== null && value !== undefined && !allowed.includes(value)) {
      throw refuse(typeof value === 'string' ? `${field} ${quote(value)}` : field, why);
    }
  };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Each tool must be one the client runs itself (the `admits` rule of the surface). */
const clientTools =
  (admits: (tool: Record<string, unknown>) => boolean): Check =>
  (value, field) => {
    if (!Array.isArray(value)) return;
    value.forEach((tool, index) => {
      if (!isRecord(tool) || admits(tool)) return;
      const type = typeof tool.type === 'string' ? ` (type ${quote(tool.type)})` : '';
      throw refuse(`${field}[${index}]${type}`, BILLED_TOOL);
    });
  };

/** Messages: custom tools, and the client-executed tools the provider defines (bash, editor...). */
const MESSAGES_CLIENT_TOOL = /^(?:bash|text_editor|computer|memory)_\d{8}$/;
function messagesToolAdmitted(tool: Record<string, unknown>): boolean {
  return (
    tool.type === undefined ||
    tool.type === 'custom' ||
    (typeof tool.type === 'string' && MESSAGES_CLIENT_TOOL.test(tool.type))
  );
}

/** Responses: tools whose calls come back to the client to run (a shell only on its own machine). */
const RESPONSES_CLIENT_TOOLS = new Set([
  'function',
  'custom',
  'namespace',
  'local_shell',
  'apply_patch',
  'computer',
  'computer_use_preview',
]);
function responsesToolAdmitted(tool: Record<string, unknown>): boolean {
  if (tool.type === 'shell') {
    const environment = tool.environment;
    return isRecord(environment)
      ? environment.type === 'local'
      : environment === undefined || environment === null;
  }
  if (tool.type === 'tool_search') return tool.execution === 'client';
  return typeof tool.type === 'string' && RESPONSES_CLIENT_TOOLS.has(tool.type);
}

const CHAT_CLIENT_TOOLS = new Set(['function', 'custom']);

/** OpenAI's tiers at or below the standard price ("auto" is the project's default tier). */
const OPENAI_TIERS = ['auto', 'default', 'flex'];

const CHECKS: Record<MeteredSurface, Record<string, Check>> = {
  messages: {
    thread: never(STORED_STATE),
    mcp_servers: never(BILLED_TOOL),
    container: never(BILLED_TOOL),
    tools: clientTools(messagesToolAdmitted),
    fallbacks: never('other models are priced differently'),
    speed: onlyValues(['standard'], PREMIUM),
    inference_geo: onlyValues(['global'], PREMIUM),
  },
  chat_completions: {
    web_search_options: never(BILLED_TOOL),
    tools: clientTools((tool) => typeof tool.type === 'string' && CHAT_CLIENT_TOOLS.has(tool.type)),
    service_tier: onlyValues(OPENAI_TIERS, PREMIUM),
  },
  responses: {
    previous_response_id: never(STORED_STATE),
    conversation: never(STORED_STATE),
    prompt: never('prompts stored at the model provider are not available here; send the instructions'),
    background: onlyValues(
      [false],
      'background answers are fetched from an endpoint this gateway does not serve',
    ),
    tools: clientTools(responsesToolAdmitted),
    service_tier: onlyValues(OPENAI_TIERS, PREMIUM),
  },
};

/** Chat `n`: a whole number of choices from 1 to the configured maximum; absent or null is one. */
function choicesOf(body: Record<string, unknown>, maxChoices: number): number {
  const n = body.n;
  if (n === undefined || n === null) return 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxChoices) {
    throw refuse('n', `a whole number of choices from 1 to ${maxChoices}`);
  }
  return n;
}

/** The betas a request names: `anthropic-beta` is a comma-separated list (repeated headers joined). */
function assertBetasAllowed(headers: HeaderReader, extra: ReadonlySet<string>): void {
  const header = headers.get('anthropic-beta');
  if (!header) return;
  for (const raw of header.split(',')) {
    const beta = raw.trim();
    if (beta !== '' && !ALLOWED_ANTHROPIC_BETAS.has(beta) && !extra.has(beta)) {
      throw refuse(`beta ${quote(beta)}`, 'it changes the price or adds work billed outside tokens');
    }
  }
}

const CHECK_LISTS = Object.fromEntries(
  Object.entries(CHECKS).map(([surface, checks]) => [surface, Object.entries(checks)]),
) as Record<MeteredSurface, Array<[string, Check]>>;

/**
 * Refuses a metered call whose parameters would let the provider bill what its reservation
 * cannot cover, and says what the reservation must multiply. Runs after the parameter allow-list
 * and before the reservation.
 */
export function checkCostParameters(
  surface: MeteredSurface,
  body: Record<string, unknown>,
  headers: HeaderReader,
  settings: CostParameterSettings,
  options: { betasReachUpstream?: boolean } = {},
): CostShape {
  for (const [field, check] of CHECK_LISTS[surface])
    if (Object.hasOwn(body, field)) check(body[field], field);
  // A call translated for another kind of provider sends no beta upstream (translation/).
  if (surface === 'messages' && options.betasReachUpstream !== false)
    assertBetasAllowed(headers, settings.extraAnthropicBetas);
  return { choices: surface === 'chat_completions' ? choicesOf(body, settings.maxChoices) : 1 };
}

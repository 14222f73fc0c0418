/*
 * What a client is told when the provider refuses its request (upstream_rejected): built only from
 * what the gateway knows (the alias, the status, a few recognised kinds of refusal, and a field name
 * from the surface's own parameter list), never from the provider's text. The provider's message
 * is read only to recognise its kind; none of its words is passed on, so no model id, organisation
 * or project id, deployment name, host or address can reach the client through it.
 */

/** A provider's error body as the two protocols write it. */
export interface ProviderRefusal {
  status: number;
  /** `error.type` (Anthropic) or `error.type`/`error.code` (OpenAI), when present. */
  kinds: string[];
  /** Read for recognition only; never shown. */
  message: string;
  /** OpenAI's `error.param`, when present. */
  param: string | null;
}

interface KnownRefusal {
  matches: (refusal: ProviderRefusal) => boolean;
  says: (alias: string) => string;
  /** The refusal judges the content, not a field: its `param` is not named (Azure says `prompt`). */
  namesNoField?: true;
}

const has = (refusal: ProviderRefusal, ...kinds: string[]) =>
  refusal.kinds.some((kind) => kinds.includes(kind));

/** In order: the first that matches says what happened. */
const KNOWN: KnownRefusal[] = [
  {
    matches: (refusal) =>
      has(refusal, 'context_length_exceeded', 'string_above_max_length') ||
      /prompt is too long|context (length|window)|maximum context|too many (input )?tokens|input is too long/i.test(
        refusal.message,
      ),
    says: (alias) => `The input is longer than ${alias} accepts.`,
  },
  {
    matches: (refusal) =>
      /max_(completion_|output_)?tokens/i.test(refusal.message) &&
      /exceed|too (large|high|many)|greater than|at most|maximum/i.test(refusal.message),
    says: (alias) => `The maximum output asked for is more than ${alias} allows.`,
  },
  {
    matches: (refusal) => has(refusal, 'content_policy_violation', 'invalid_prompt', 'content_filter'),
    says: (alias) => `${alias} refused the request under its content policy.`,
    namesNoField: true,
  },
  {
    matches: (refusal) => /\bimage\b/i.test(refusal.message) && !/tool/i.test(refusal.message),
    says: (alias) => `${alias} could not use an image in the request.`,
  },
  {
    matches: (refusal) => /\b(tool|function)s?\b/i.test(refusal.message),
    says: (alias) => `${alias} refused a tool definition, tool call or tool result in the request.`,
  },
  {
    matches: (refusal) => /\broles?\b|alternate|first message|last message/i.test(refusal.message),
    says: (alias) => `${alias} refused the roles or the order of the messages.`,
  },
  {
    matches: (refusal) => refusal.status === 404 || has(refusal, 'not_found_error', 'model_not_found'),
    says: (alias) => `${alias} is not available from its provider at the moment.`,
  },
  {
    matches: (refusal) => refusal.status === 413 || has(refusal, 'request_too_large'),
    says: (alias) => `The request is larger than ${alias}'s provider accepts.`,
  },
];

/** A field path of the client's own request: dotted names and indexes, nothing else. */
const FIELD_PATH = /^[a-z_]{1,40}(?:\[\d{1,6}\]|\.[a-z_]{1,40}){0,8}$/;

/**
 * The message of an upstream_rejected answer. `fields` are the top-level parameters the surface
 * accepts: a provider's `param` is named only when it is a path under one of them.
 */
export function refusalMessage(refusal: ProviderRefusal, alias: string, fields: ReadonlySet<string>): string {
  const known = KNOWN.find((candidate) => candidate.matches(refusal));
  const what = known
    ? known.says(alias)
    : `The model provider refused the request for ${alias} (HTTP ${refusal.status}).`;
  const param = known?.namesNoField ? null : refusal.param;
  const top = param?.split(/[.[]/, 1)[0];
  const field =
    param && FIELD_PATH.test(param) && top && fields.has(top) ? ` The field it named: ${param}.` : '';
  return `${what}${field} Nothing was charged.`;
}

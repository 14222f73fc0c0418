import { AppError } from '@tollgate/errors';
import type { Surface } from './surface.ts';

/** The output ceilings that apply to one request. */
export interface OutputCeilings {
  /** The key's allowance: asking for more is refused with max_output_tokens_exceeded. */
  keyMax: number;
  /** The plan ceiling (from the entitlement), if any: larger requests are clamped to it. */
  planMax: number | null;
  /** The alias's own maximum output: larger requests are clamped to it too. */
  aliasMax: number;
  /** The alias's default when the request names no maximum. */
  aliasDefault: number;
}

export interface MaxOutputResolution {
  /** The most output the upstream may produce for this request; the reservation uses it. */
  value: number;
  /**
   * Raw JSON values to write with setTopLevelFields: every max-output field the body carries,
   * pinned to the value checked here (a duplicated key would otherwise reach the upstream with
   * its other copy, which some parsers read instead of the last), or the inserted default.
   */
  edits: Record<string, string>;
}

/** The max-output fields of each surface, and the one inserted when the client sent none. */
const FIELDS: Record<Exclude<Surface, 'count_tokens'>, { read: readonly string[]; insert: string }> = {
  messages: { read: ['max_tokens'], insert: 'max_tokens' },
  chat_completions: { read: ['max_completion_tokens', 'max_tokens'], insert: 'max_completion_tokens' },
  responses: { read: ['max_output_tokens'], insert: 'max_output_tokens' },
};

/*
 * What counts as a positive integer: a JSON number whose value is a whole number >= 1. JSON numbers
 * are values, so `1e3` and `1000.0` denote 1000 and are accepted as such (the parsed body cannot
 * tell them apart from `1000`, and every upstream reads them as 1000). `0`, negatives, fractions
 * such as `1.5`, strings, booleans, arrays and objects are invalid. `null` means "not given" on
 * the OpenAI surfaces, whose references declare these fields nullable; the Messages API has no
 * nullable max_tokens, so there `null` is invalid. Integers too large to be exact (above 2^53) are
 * still integers and simply exceed every ceiling.
 */
function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1;
}

function invalid(field: string): AppError {
  return new AppError('invalid_max_output_tokens', { message: `${field} must be a positive integer.` });
}

function exceeded(field: string, keyMax: number): AppError {
  return new AppError('max_output_tokens_exceeded', {
    message: `${field} is above what this API key permits (${keyMax}).`,
  });
}

/**
 * Validates the surface's max-output field(s) and works out the maximum output the request will be
 * allowed (docs/behaviour.md, gateway rule 4 and Limits):
 * - not a positive integer -> invalid_max_output_tokens;
 * - above the key's allowance -> max_output_tokens_exceeded;
 * - above min(plan ceiling, alias maximum) -> clamped down to it (an edit is returned);
 * - omitted -> the default min(alias default, key, plan, alias maximum) is inserted, so the
 *   upstream can never produce more than was reserved.
 * Chat completions may carry both max_completion_tokens and max_tokens: both are checked and
 * clamped, and the larger of the two is the value, whichever one the upstream honours.
 * count_tokens has no max-output field: value 0, no edits.
 */
export function resolveMaxOutput(
  surface: Surface,
  body: Record<string, unknown>,
  ceilings: OutputCeilings,
): MaxOutputResolution {
  if (surface === 'count_tokens') return { value: 0, edits: {} };
  const { read, insert } = FIELDS[surface];
  const clampTo = Math.min(ceilings.planMax ?? Number.POSITIVE_INFINITY, ceilings.aliasMax);
  const nullMeansOmitted = surface !== 'messages';
  const edits: Record<string, string> = {};
  let value: number | undefined;

  for (const field of read) {
    if (!Object.hasOwn(body, field)) continue;
    const requested = body[field];
    if (requested === null && nullMeansOmitted) {
      edits[field] = 'null';
      continue;
    }
    if (!isPositiveInteger(requested)) throw invalid(field);
    if (requested > ceilings.keyMax) throw exceeded(field, ceilings.keyMax);
    const allowed = Math.min(requested, clampTo);
    edits[field] = String(allowed);
    value = Math.max(value ?? 0, allowed);
  }

  if (value === undefined) {
    value = Math.min(ceilings.aliasDefault, ceilings.keyMax, clampTo);
    edits[insert] = String(value);
  }
  return { value, edits };
}

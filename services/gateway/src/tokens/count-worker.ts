import { AppError } from '@tollgate/errors';
import { parseJsonObject } from '../request/json-object.ts';
import { assertSupportedParameters } from '../request/parameters.ts';
import { estimateInputTokens } from './count-tokens.ts';

/*
 * The work of one count_tokens call, run in a worker thread (token-counter.ts): decoding, parsing
 * and counting a body of megabytes takes the CPU for hundreds of milliseconds, which on the event
 * loop would delay every other client's calls. Only small results cross back.
 */

export interface CountTask {
  body: Uint8Array;
  maxJsonDepth: number;
}

/** Longest model name passed back; aliases are far shorter, so a cut name is still unknown. */
const MAX_MODEL_CHARS = 256;

export type CountResult =
  | {
      ok: true;
      /** The body's `model` if it is a string (cut to MAX_MODEL_CHARS), else null. */
      model: string | null;
      /** The unsupported_parameter message, if the body has fields count_tokens does not accept. */
      unsupported: string | null;
      inputTokens: number;
    }
  | { ok: false; message: string };

/** Parses and counts a count_tokens body; a body that is not a JSON object is refused (invalid_request). */
export default function countBody(task: CountTask): CountResult {
  let body: Record<string, unknown>;
  try {
    body = parseJsonObject(
      Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength),
      task.maxJsonDepth,
    );
  } catch (error) {
    return {
      ok: false,
      message: error instanceof AppError ? error.message : 'The request body is not valid JSON.',
    };
  }
  let unsupported: string | null = null;
  try {
    assertSupportedParameters('count_tokens', body);
  } catch (error) {
    unsupported = error instanceof AppError ? error.message : 'The request has an unsupported parameter.';
  }
  return {
    ok: true,
    model: typeof body.model === 'string' ? body.model.slice(0, MAX_MODEL_CHARS) : null,
    unsupported,
    inputTokens: estimateInputTokens('count_tokens', body),
  };
}

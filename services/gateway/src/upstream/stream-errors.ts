import { type AppError, renderMessagesError, renderOpenAIError } from '@tollgate/errors';
import type { MeteredSurface } from './types.ts';

/**
 * The last event of a stream that failed part-way, in the format each surface's official client
 * raises as an error (docs/behaviour.md, "Errors in the middle of a stream"):
 * - messages: `event: error` with the messages-style error body (@anthropic-ai/sdk throws an
 *   APIError on any `event: error`);
 * - chat completions: a `data:` line holding the openai-style error body (openai-node throws on
 *   a chunk that has an `error` member);
 * - responses: `event: error` with the responses protocol's own error event
 *   `{type:"error", code, message, param, sequence_number}` (openai-node throws on it and reads
 *   `code` from it).
 * `sequenceNumber` continues the upstream's numbering (responses only).
 */
export function renderStreamError(surface: MeteredSurface, error: AppError, sequenceNumber: number): string {
  switch (surface) {
    case 'messages':
      return `event: error\ndata: ${JSON.stringify(renderMessagesError(error).body)}\n\n`;
    case 'chat_completions':
      return `data: ${JSON.stringify(renderOpenAIError(error).body)}\n\n`;
    case 'responses':
      return `event: error\ndata: ${JSON.stringify({
        type: 'error',
        code: error.code,
        message: error.message,
        param: null,
        sequence_number: sequenceNumber,
      })}\n\n`;
  }
}

import { AppError } from '@tollgate/errors';
import type { ProtocolCodec } from '../../protocol.ts';
import { encodeGeminiRequest } from './encode-request.ts';
import { decodeGeminiResponse } from './response.ts';
import { createGeminiStreamDecoder } from './stream.ts';

/**
 * Gemini's generateContent protocol: an upstream protocol only. No caller speaks it to the
 * gateway (it is not a metered surface), so the caller's side is never reached.
 */
function notACallerProtocol(): never {
  throw new AppError('server_error');
}

export const geminiCodec: ProtocolCodec = {
  protocol: 'gemini',
  decodeRequest: notACallerProtocol,
  encodeRequest: encodeGeminiRequest,
  decodeResponse: decodeGeminiResponse,
  encodeResponse: notACallerProtocol,
  createStreamDecoder: createGeminiStreamDecoder,
  createStreamEncoder: notACallerProtocol,
};

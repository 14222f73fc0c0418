import type { ProtocolCodec } from '../../protocol.ts';
import { decodeChatRequest } from './decode-request.ts';
import { encodeChatRequest } from './encode-request.ts';
import { decodeChatResponse, encodeChatResponse } from './response.ts';
import { createChatStreamDecoder, createChatStreamEncoder } from './stream.ts';

/** OpenAI's chat completions protocol (POST /v1/chat/completions). */
export const chatCodec: ProtocolCodec = {
  protocol: 'chat_completions',
  decodeRequest: decodeChatRequest,
  encodeRequest: encodeChatRequest,
  decodeResponse: decodeChatResponse,
  encodeResponse: encodeChatResponse,
  createStreamDecoder: createChatStreamDecoder,
  createStreamEncoder: createChatStreamEncoder,
};

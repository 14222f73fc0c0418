import type { ProtocolCodec } from '../../protocol.ts';
import { decodeMessagesRequest } from './decode-request.ts';
import { encodeMessagesRequest } from './encode-request.ts';
import { decodeMessagesResponse, encodeMessagesResponse } from './response.ts';
import { createMessagesStreamDecoder, createMessagesStreamEncoder } from './stream.ts';

/** Anthropic's Messages protocol (POST /v1/messages). */
export const messagesCodec: ProtocolCodec = {
  protocol: 'messages',
  decodeRequest: decodeMessagesRequest,
  encodeRequest: encodeMessagesRequest,
  decodeResponse: decodeMessagesResponse,
  encodeResponse: encodeMessagesResponse,
  createStreamDecoder: createMessagesStreamDecoder,
  createStreamEncoder: createMessagesStreamEncoder,
};

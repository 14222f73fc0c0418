import type { ProtocolCodec } from '../../protocol.ts';
import { decodeResponsesRequest } from './decode-request.ts';
import { encodeResponsesRequest } from './encode-request.ts';
import { decodeResponsesResponse, encodeResponsesResponse } from './response.ts';
import { createResponsesStreamDecoder } from './stream-decode.ts';
import { createResponsesStreamEncoder } from './stream-encode.ts';

/** OpenAI's Responses protocol (POST /v1/responses). */
export const responsesCodec: ProtocolCodec = {
  protocol: 'responses',
  decodeRequest: decodeResponsesRequest,
  encodeRequest: encodeResponsesRequest,
  decodeResponse: decodeResponsesResponse,
  encodeResponse: encodeResponsesResponse,
  createStreamDecoder: createResponsesStreamDecoder,
  createStreamEncoder: createResponsesStreamEncoder,
};

import type { ProtocolCodec, WireProtocol } from './protocol.ts';
import { chatCodec } from './protocols/chat/index.ts';
import { geminiCodec } from './protocols/gemini/index.ts';
import { messagesCodec } from './protocols/messages/index.ts';
import { responsesCodec } from './protocols/responses/index.ts';

/** Every wire protocol has exactly one codec; a new protocol without one is a compile error. */
const CODECS: Record<WireProtocol, ProtocolCodec> = {
  messages: messagesCodec,
  chat_completions: chatCodec,
  responses: responsesCodec,
  gemini: geminiCodec,
};

export function codecFor(protocol: WireProtocol): ProtocolCodec {
  return CODECS[protocol];
}

import type { Surface } from '../request/surface.ts';
import { collectMessagesRequest } from './messages-text.ts';
import { collectChatRequest, collectResponsesRequest } from './openai-text.ts';
import { type CollectedText, createCollector, type Json, REQUEST_OVERHEAD_TOKENS } from './text-collector.ts';

/** The text segments and fixed estimates of a request on the given surface. */
export function collectRequestText(surface: Surface, body: Json): CollectedText {
  const out = createCollector();
  out.fixed(REQUEST_OVERHEAD_TOKENS);
  if (surface === 'chat_completions') collectChatRequest(body, out);
  else if (surface === 'responses') collectResponsesRequest(body, out);
  else collectMessagesRequest(body, out);
  return out.collected;
}

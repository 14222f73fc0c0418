/** The four inference surfaces of the gateway, named as in the error bodies and the catalogue. */
export const SURFACES = ['messages', 'count_tokens', 'chat_completions', 'responses'] as const;

/**
 * `messages` is POST /v1/messages, `count_tokens` POST /v1/messages/count_tokens,
 * `chat_completions` POST /v1/chat/completions and `responses` POST /v1/responses.
 */
export type Surface = (typeof SURFACES)[number];

import { hash } from 'node:crypto';
import type { MeteredSurface } from '@tollgate/schemas';
import { affinityRecordName } from '@tollgate/service-kit';
import type { HeaderReader } from '../request/inbound.ts';

/** Claude Code names its session in this header on every call of one conversation. */
export const CLAUDE_CODE_SESSION_HEADER = 'x-claude-code-session-id';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : null;

/**
 * What stays the same across the turns of one conversation: the instructions and the first user
 * turn (later turns only append). Null when the request has no user turn to anchor on.
 */
function stablePrefix(surface: MeteredSurface, body: Record<string, unknown>): unknown[] | null {
  if (surface === 'responses') {
    const input = body.input;
    if (typeof input === 'string') return [body.instructions ?? null, input];
    if (!Array.isArray(input)) return null;
    const first = input.find((item) => isRecord(item) && item.role === 'user');
    return first === undefined ? null : [body.instructions ?? null, first];
  }
  const messages = body.messages;
  if (!Array.isArray(messages)) return null;
  const firstUser = messages.findIndex((message) => isRecord(message) && message.role === 'user');
  if (firstUser === -1) return null;
  // Chat puts its instructions in the messages before the first user turn; messages in `system`.
  return [surface === 'messages' ? (body.system ?? null) : null, ...messages.slice(0, firstUser + 1)];
}

/**
 * The conversation a call belongs to, for prompt-cache affinity (docs/routing.md): the caller's
 * explicit `prompt_cache_key`, else the Anthropic `metadata.user_id` (Claude Code puts its session
 * in it), else Claude Code's session header, else a hash of the conversation's stable prefix.
 * Null when none applies (nothing to stick to).
 */
export function conversationOf(
  surface: MeteredSurface,
  body: Record<string, unknown>,
  headers: HeaderReader,
): string | null {
  const cacheKey = text(body.prompt_cache_key);
  if (cacheKey) return `cache-key:${cacheKey}`;
  const user = isRecord(body.metadata) ? text(body.metadata.user_id) : null;
  if (user) return `user:${user}`;
  const session = text(headers.get(CLAUDE_CODE_SESSION_HEADER));
  if (session) return `session:${session}`;
  const prefix = stablePrefix(surface, body);
  if (!prefix) return null;
  return `prefix:${hash('sha256', JSON.stringify(prefix), 'base64url')}`;
}

/**
 * The affinity record's name: one key's conversation on one alias, hashed (no content kept), under
 * its account's hash tag (affinityRecordName), so that the control plane's reserve script can read
 * it (docs/routing.md).
 */
export function affinityKey(accountId: string, keyId: string, alias: string, conversation: string): string {
  return affinityRecordName(
    accountId,
    hash('sha256', `${keyId}\u0000${alias}\u0000${conversation}`, 'base64url'),
  );
}

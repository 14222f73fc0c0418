import type { MeteredSurface } from '@tollgate/schemas';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Anthropic's signed reasoning blocks, which only the provider that issued them accepts. */
const PROOF_BLOCKS = new Set(['thinking', 'redacted_thinking']);

/**
 * A native call's conversation without its reasoning proofs (docs/routing.md): Anthropic thinking
 * and redacted thinking blocks in assistant turns, and Responses `reasoning` items (their
 * encrypted content). Used when a conversation moves to another provider, which would refuse
 * (or be handed) the previous provider's proofs, as translation drops foreign proofs
 * (translation/signatures.ts). Null when nothing was removed, so the body stays as sent.
 */
export function withoutReasoningProofs(
  surface: MeteredSurface,
  body: Record<string, unknown>,
): { field: 'messages' | 'input'; value: unknown[] } | null {
  if (surface === 'messages' && Array.isArray(body.messages)) {
    let removed = false;
    const messages = body.messages.flatMap((message: unknown) => {
      if (!isRecord(message) || message.role !== 'assistant' || !Array.isArray(message.content)) {
        return [message];
      }
      const content = message.content.filter(
        (block) => !(isRecord(block) && PROOF_BLOCKS.has(String(block.type))),
      );
      if (content.length === message.content.length) return [message];
      removed = true;
      // A turn that held only reasoning has nothing left to say.
      return content.length === 0 ? [] : [{ ...message, content }];
    });
    return removed ? { field: 'messages', value: messages } : null;
  }
  if (surface === 'responses' && Array.isArray(body.input)) {
    const input = body.input.filter((item: unknown) => !(isRecord(item) && item.type === 'reasoning'));
    return input.length === body.input.length ? null : { field: 'input', value: input };
  }
  return null;
}

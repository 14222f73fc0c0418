import type { FinishResult, MeteredSurface } from '@tollgate/schemas';
import { editTopLevelValue, readTopLevelValue, setTopLevelFields } from '../request/index.ts';
import { SseParser } from '../upstream/sse.ts';

/**
 * What a call cost, as the control plane's settlement answered (docs/receipts.md): its result, or
 * `unconfirmed` when no answer came within the wait (the settlement still lands later, unchanged).
 */
export type Receipt = { confirmed: true; result: FinishResult } | { confirmed: false };

export const UNCONFIRMED: Receipt = { confirmed: false };

/**
 * The members added to the usage object the caller reads: `cost`, the credits the ledger charged
 * (OpenRouter's `usage.cost`, here in integer credit units), null unless the call was settled; and
 * `cost_details`, what makes it up. A provider's own `cost` is replaced, never passed on.
 */
export function costMembers(receipt: Receipt, requestId: string): Record<string, string> {
  const id = JSON.stringify(requestId);
  if (!receipt.confirmed) {
    return { cost: 'null', cost_details: `{"status":"unconfirmed","request_id":${id}}` };
  }
  const { status, charged, writtenOff } = receipt.result;
  // Amounts are integer strings of digits (QuantityString): written as JSON integers unchanged.
  const details =
    `{"status":"${status}","credits":${charged.credits},"entitlement_tokens":${charged.tokens},` +
    `"written_off_credits":${writtenOff.credits},"written_off_tokens":${writtenOff.tokens},"request_id":${id}}`;
  return { cost: status === 'settled' ? charged.credits : 'null', cost_details: details };
}

/** A JSON object text with its `usage` object given these members; unchanged without one. */
function withCostInUsage(objectText: string, members: Record<string, string>): string | null {
  return editTopLevelValue(objectText, 'usage', (usage) =>
    usage.charCodeAt(0) === 123 /* { */ ? setTopLevelFields(usage, members) : null,
  );
}

/**
 * A whole answer with the cost beside its `usage` (top-level on all three surfaces). Anything
 * unexpected leaves the answer as it was: a receipt never costs the caller the answer.
 */
export function withCostInBody(body: string, members: Record<string, string>): string {
  try {
    return withCostInUsage(body, members) ?? body;
  } catch {
    return body;
  }
}

/** The event data with cost in its usage, if this is the surface's event that carries final usage. */
function withCostInEvent(
  surface: MeteredSurface,
  name: string | undefined,
  data: string,
  members: Record<string, string>,
): string | null {
  if (data.charCodeAt(0) !== 123) return null;
  if (name === undefined && surface !== 'chat_completions') name = typeOf(data);
  switch (surface) {
    case 'chat_completions':
      // The last chunk's usage (`choices: []`); earlier chunks may carry `usage: null`.
      return withCostInUsage(data, members);
    case 'messages':
      return name === 'message_delta' ? withCostInUsage(data, members) : null;
    case 'responses': {
      if (name !== 'response.completed' && name !== 'response.incomplete') return null;
      return editTopLevelValue(data, 'response', (response) =>
        response.charCodeAt(0) === 123 ? withCostInUsage(response, members) : null,
      );
    }
  }
}

/** The event's `type` member, for a stream that names its events only there. */
function typeOf(data: string): string | undefined {
  const type = readTopLevelValue(data, 'type');
  if (type === undefined) return undefined;
  const value: unknown = JSON.parse(type);
  return typeof value === 'string' ? value : undefined;
}

/**
 * The end of a stream (its usage event and what follows, complete SSE blocks in the caller's
 * protocol) with the cost in the last event that carries the final usage. Other blocks stay byte
 * for byte; anything unexpected leaves the text as it was.
 */
export function withCostInStreamEnd(
  surface: MeteredSurface,
  text: string,
  members: Record<string, string>,
): string {
  try {
    const parser = new SseParser();
    const events = [...parser.push(text), ...parser.flush()];
    for (let index = events.length - 1; index >= 0; index -= 1) {
      const event = events[index]!;
      const priced = withCostInEvent(surface, event.event, event.data, members);
      if (priced === null) continue;
      const block = `${event.event === undefined ? '' : `event: ${event.event}\n`}data: ${priced}\n\n`;
      return events.map((other, at) => (at === index ? block : other.raw)).join('');
    }
  } catch {
    // Not the JSON the protocol promises: relayed as it came.
  }
  return text;
}

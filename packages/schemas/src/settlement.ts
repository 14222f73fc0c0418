import { type ReservedLeg, USAGE_PARTS, type Usage, type UsagePart, usageParts } from './billing.ts';

/**
 * What a settle charges when the usage fits within the reservation (docs/billing/rules.md R9):
 * the legs in draw order, each entitlement leg taking whole tokens at its rate, parts in the order
 * of R2a, the credit leg charging each part left at the price fixed at reservation plus its price
 * per call. Null when anything is left beyond the legs, or there are none: R10 then charges from
 * what the account holds at settle time, which only the settlement knows.
 *
 * The gateway tells a call's cost from this at once (docs/receipts.md); the differential test
 * checks it against each engine's own settlement of the same reservation.
 */
export function chargeWithinLegs(
  legs: readonly ReservedLeg[],
  usage: Usage,
): { tokens: string; credits: string } | null {
  if (legs.length === 0) return null;
  const rest = usageParts(usage);
  let tokens = 0n;
  let credits = 0n;
  for (const leg of legs) {
    if (leg.source === 'entitlement') {
      const rate = BigInt(leg.rate);
      tokens += take(rest, BigInt(leg.amount) / rate) * rate;
      continue;
    }
    const cost = costOf(rest, leg.price);
    if (cost > BigInt(leg.amount)) return null;
    credits += cost;
    for (const part of USAGE_PARTS) rest[part] = 0n;
  }
  if (USAGE_PARTS.some((part) => rest[part] > 0n)) return null;
  return { tokens: String(tokens), credits: String(credits) };
}

const minOf = (a: bigint, b: bigint) => (a < b ? a : b);

/** Takes up to `amount` tokens from the parts in order; returns how many were taken. */
function take(parts: Record<UsagePart, bigint>, amount: bigint): bigint {
  let left = amount;
  for (const part of USAGE_PARTS) {
    const taken = minOf(parts[part], left);
    parts[part] -= taken;
    left -= taken;
  }
  return amount - left;
}

/** The parts at the leg's prices, plus the price per call when any token is left to pay. */
function costOf(
  parts: Record<UsagePart, bigint>,
  price: Extract<ReservedLeg, { source: 'credit' }>['price'],
) {
  if (USAGE_PARTS.every((part) => parts[part] === 0n)) return 0n;
  return USAGE_PARTS.reduce((cost, part) => cost + parts[part] * BigInt(price[part]), BigInt(price.request));
}

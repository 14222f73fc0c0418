/**
 * The reference model of spend caps (docs/billing/rules.md R23-R26), for the caps' differential
 * test: bigint arithmetic, every call kept, the clock standing still (every call inside every
 * window). Beside the money model (money-model.ts), which it leaves alone: a cap judges a call
 * before the balance does, and counts what the call used, not what any source paid.
 */
export type CapUnit = 'credits' | 'tokens';
export type CapPrice = { input: bigint; output: bigint } | null;

export interface ModelCap {
  /** null: the whole account. */
  key: string | null;
  unit: CapUnit;
  limit: bigint;
}

interface ModelCall {
  key: string;
  credits: bigint;
  tokens: bigint;
  price: CapPrice;
  state: 'reserved' | 'settled' | 'released' | 'held';
}

export class CapModel {
  /** By `${key ?? ''}|${unit}`: one cap per target and unit (one party, one window). */
  readonly caps = new Map<string, ModelCap>();
  private readonly calls = new Map<string, ModelCall>();

  setCap(key: string | null, unit: CapUnit, limit: bigint | null): void {
    const name = `${key ?? ''}|${unit}`;
    if (limit === null) this.caps.delete(name);
    else this.caps.set(name, { key, unit, limit });
  }

  used(cap: ModelCap): bigint {
    let used = 0n;
    for (const call of this.calls.values()) {
      if (call.state === 'released' || (cap.key !== null && cap.key !== call.key)) continue;
      used += cap.unit === 'credits' ? call.credits : call.tokens;
    }
    return used;
  }

  /** R25: fits every cap on the key and the account, or is refused and counts nothing. */
  reserve(
    id: string,
    key: string,
    price: CapPrice,
    input: bigint,
    output: bigint,
  ): 'ok' | 'rate_limit_exceeded' {
    const credits = price ? input * price.input + output * price.output : 0n;
    const tokens = input + output;
    for (const cap of this.caps.values()) {
      if (cap.key !== null && cap.key !== key) continue;
      if (this.used(cap) + (cap.unit === 'credits' ? credits : tokens) > cap.limit)
        return 'rate_limit_exceeded';
    }
    if ([...this.caps.values()].some((cap) => cap.key === null || cap.key === key)) {
      this.calls.set(id, { key, credits, tokens, price, state: 'reserved' });
    }
    return 'ok';
  }

  /** R24: usage at the prices counted with the call; a release nothing; a hold keeps the estimate. */
  finish(id: string, action: 'settle' | 'release' | 'hold', usage?: { input: bigint; output: bigint }): void {
    const call = this.calls.get(id);
    if (!call || (call.state !== 'reserved' && call.state !== 'held')) return;
    if (action === 'settle' && usage) {
      call.tokens = usage.input + usage.output;
      call.credits = call.price ? usage.input * call.price.input + usage.output * call.price.output : 0n;
      call.state = 'settled';
    } else if (action === 'release') {
      call.credits = 0n;
      call.tokens = 0n;
      call.state = 'released';
    } else {
      call.state = 'held';
    }
  }
}

/**
 * Who is told which accounts just paid for calls (automatic top-ups watch it), without billing
 * importing them. `notify` never waits and never throws into the settlement path: listeners run
 * their work later.
 */
export interface SettlementWatch {
  /** Accounts whose calls were just settled. */
  notify(accountIds: Iterable<string>): void;
  listen(listener: (accountIds: string[]) => void): void;
}

export function createSettlementWatch(): SettlementWatch {
  const listeners: Array<(accountIds: string[]) => void> = [];
  return {
    notify(accountIds) {
      if (listeners.length === 0) return;
      const ids = [...new Set(accountIds)];
      for (const listener of listeners) listener(ids);
    },
    listen(listener) {
      listeners.push(listener);
    },
  };
}

/** The control plane's clock: the time of day every service reads, injected so tests can move it. */
export interface Clock {
  now(): Date;
  /**
   * How far this clock is from real time (ms); absent: none. The billing engines move their own
   * clocks (Postgres tollgate_now(), Redis TIME) by as much (docs/billing/rules.md R16), so a test
   * that moves the clock moves every expiry with it.
   */
  offsetMs?(): number;
}

export const systemClock: Clock = { now: () => new Date() };

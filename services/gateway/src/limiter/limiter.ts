/** Request-rate and concurrency limits, shared by every gateway process through Redis. */
export interface Limiter {
  readonly kind: 'redis' | 'memory';
  close(): Promise<void>;
}

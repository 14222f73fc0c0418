import type { IncomingHttpHeaders } from 'node:http';

/** One request as the mock received it. Headers and body are kept by reference, not copied. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body text (its first 1 MiB characters when larger; see bodyTruncated). */
  body: string;
  bodyBytes: number;
  bodyTruncated?: true;
  tag?: string;
  anthropicVersion?: string;
  anthropicBeta?: string;
  /** Unix milliseconds. */
  receivedAt: number;
}

export interface MockStats {
  calls: number;
  byPath: Record<string, number>;
  byTag: Record<string, number>;
}

export interface Recorder {
  record(entry: RecordedRequest): void;
  stats(): MockStats;
  /** Oldest first; only the last `capacity` requests are kept. */
  requests(tag?: string): RecordedRequest[];
  reset(): void;
}

export const DEFAULT_RECORD_CAPACITY = 200;

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Counts every call and keeps the last `capacity` requests in a ring buffer. */
export function createRecorder(capacity = DEFAULT_RECORD_CAPACITY): Recorder {
  let calls = 0;
  let byPath = new Map<string, number>();
  let byTag = new Map<string, number>();
  let ring: (RecordedRequest | undefined)[] = new Array(capacity);
  let next = 0;

  return {
    record(entry) {
      calls += 1;
      increment(byPath, entry.path);
      if (entry.tag !== undefined) increment(byTag, entry.tag);
      if (capacity === 0) return;
      ring[next] = entry;
      next = (next + 1) % capacity;
    },
    stats() {
      return { calls, byPath: Object.fromEntries(byPath), byTag: Object.fromEntries(byTag) };
    },
    requests(tag) {
      const ordered = [...ring.slice(next), ...ring.slice(0, next)];
      return ordered.filter(
        (entry): entry is RecordedRequest => entry !== undefined && (tag === undefined || entry.tag === tag),
      );
    },
    reset() {
      calls = 0;
      byPath = new Map();
      byTag = new Map();
      ring = new Array(capacity);
      next = 0;
    },
  };
}

import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(16 * 256);
let offset = pool.length;

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix time in ms, then random bits. Reservation ids made
 * this way sort by creation, so the rows Postgres writes for them land at the end of its primary
 * key index, which stays small in memory however large the table grows. Random bytes are drawn in
 * batches, as randomUUID does.
 */
export function timeOrderedUuid(now = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

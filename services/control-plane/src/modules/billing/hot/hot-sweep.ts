import { sql } from 'kysely';
import * as repository from '../engine.repository.ts';
import type { createHotFinish } from './hot-finish.ts';
import { parseRecord } from './hot-records.ts';
import type { HotParts } from './hot-shared.ts';

/** The reconciler's pass over the hot tier's leases (lua/sweep.lua). */
export function createHotSweep(
  { deps, store }: HotParts,
  { persist, forgetWritten }: Pick<ReturnType<typeof createHotFinish>, 'persist' | 'forgetWritten'>,
) {
  /**
   * The reconciler's pass over every open lease: calls in flight past the reservation timeout are
   * held (settlement_missing), finished calls a stopped control plane left unwritten are written,
   * idle leases are returned, and leases whose Redis state is gone are closed.
   */
  async function sweep(): Promise<{ held: string[]; written: number; closed: number }> {
    // What this control plane wrote is forgotten first, so it is not written again as a replay.
    await forgetWritten();
    const open = await deps.db
      .selectFrom('hot_leases')
      .select(['id', 'account_id'])
      .where('closed_at', 'is', null)
      .execute();
    const held: string[] = [];
    let written = 0;
    let closed = 0;
    for (const lease of open) {
      const names = store.keysOf(lease.account_id);
      const reply = await store.run('hotSweep', {
        keys: { lease: names.lease, calls: names.calls, claim: names.claim },
        args: {
          leaseId: lease.id,
          timeoutMs: deps.reservationTimeoutMs,
          unwrittenMs: deps.writeGraceMs,
          idleMs: deps.idleMs,
        },
      });
      if (reply[0] === 'closed' || (reply[0] === 'absent' && Number(reply[1]) === 0)) {
        await deps.db.transaction().execute(async (trx) => {
          await repository.lockAccountRow(trx, lease.account_id);
          await sql`select tollgate_hot_close(${lease.id}::uuid, ${reply[0] === 'closed' ? 'idle' : 'orphaned'})`.execute(
            trx,
          );
        });
        closed += 1;
      } else if (reply[0] === 'open' && reply.length > 1) {
        const records = reply
          .slice(1)
          .map((text) => ({ accountId: lease.account_id, record: parseRecord(text) }));
        const stale = await persist(records, new Map());
        held.push(
          ...records
            .filter(({ record }) => record.outcome === 'settlement_missing' && !stale.includes(record.id))
            .map(({ record }) => record.id),
        );
        written += records.length - stale.length;
      }
    }
    await forgetWritten();
    return { held, written, closed };
  }

  return sweep;
}

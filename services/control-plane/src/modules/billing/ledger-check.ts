import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';

/**
 * Checks the money invariants and returns every violation found (empty = consistent):
 * 1. each entitlement's remaining and reserved equal the sums of its ledger rows;
 * 2. each credit balance's available and reserved equal the sums of its ledger rows;
 * 3. what balances hold in reserve equals what open (reserved or held) reservations hold plus
 *    what open hot-tier leases hold;
 * 4. each lease's figures per source (leased, returned, spent, held) equal the sums of the ledger
 *    rows that moved them.
 */
export async function verifyLedger(db: Kysely<Database>, accountId?: string): Promise<string[]> {
  const account = accountId ?? null;
  const entitlements = await sql<{
    id: string;
    remaining: bigint;
    reserved: bigint;
    available_sum: bigint;
    reserved_sum: bigint;
  }>`
    select e.id, e.remaining, e.reserved,
           coalesce(sum(l.available_delta), 0)::bigint as available_sum,
           coalesce(sum(l.reserved_delta), 0)::bigint as reserved_sum
    from entitlements e left join ledger_entries l on l.entitlement_id = e.id
    where ${account}::uuid is null or e.account_id = ${account}::uuid
    group by e.id
    having e.remaining <> coalesce(sum(l.available_delta), 0) or e.reserved <> coalesce(sum(l.reserved_delta), 0)
  `.execute(db);
  const credits = await sql<{
    account_id: string;
    available: bigint;
    reserved: bigint;
    available_sum: bigint;
    reserved_sum: bigint;
  }>`
    select c.account_id, c.available, c.reserved,
           coalesce(sum(l.available_delta), 0)::bigint as available_sum,
           coalesce(sum(l.reserved_delta), 0)::bigint as reserved_sum
    from credit_balances c
    left join ledger_entries l on l.account_id = c.account_id and l.entitlement_id is null
    where ${account}::uuid is null or c.account_id = ${account}::uuid
    group by c.account_id
    having c.available <> coalesce(sum(l.available_delta), 0) or c.reserved <> coalesce(sum(l.reserved_delta), 0)
  `.execute(db);
  const reserves = await sql<{
    account_id: string;
    held_tokens: bigint;
    open_tokens: bigint;
    held_credits: bigint;
    open_credits: bigint;
  }>`
    with balances as (
      select account_id, sum(reserved) as tokens, 0::numeric as credits from entitlements group by account_id
      union all
      select account_id, 0, reserved from credit_balances
    ), held as (
      select account_id, sum(tokens)::bigint as tokens, sum(credits)::bigint as credits from balances group by account_id
    ), open as (
      select account_id, sum(tokens)::bigint as tokens, sum(credits)::bigint as credits from (
        select account_id, reserved_tokens as tokens, reserved_credits as credits
        from reservations where status in ('reserved', 'held')
        union all
        select l.account_id,
               case when p.entitlement_id is null then 0 else p.leased - p.returned - p.spent - p.held end,
               case when p.entitlement_id is null then p.leased - p.returned - p.spent - p.held else 0 end
        from hot_leases l join hot_lease_parts p on p.lease_id = l.id
        where l.closed_at is null
      ) holders group by account_id
    )
    select coalesce(h.account_id, o.account_id) as account_id,
           coalesce(h.tokens, 0) as held_tokens, coalesce(o.tokens, 0) as open_tokens,
           coalesce(h.credits, 0) as held_credits, coalesce(o.credits, 0) as open_credits
    from held h full join open o on o.account_id = h.account_id
    where (${account}::uuid is null or coalesce(h.account_id, o.account_id) = ${account}::uuid)
      and (coalesce(h.tokens, 0) <> coalesce(o.tokens, 0) or coalesce(h.credits, 0) <> coalesce(o.credits, 0))
  `.execute(db);

  const leases = await sql<{
    lease_id: string;
    entitlement_id: string | null;
    figures: string;
    ledger: string;
  }>`
    select p.lease_id, p.entitlement_id,
           concat_ws('/', p.leased, p.returned, p.spent, p.held) as figures,
           concat_ws('/', coalesce(l.leased, 0), coalesce(l.returned, 0), coalesce(l.spent, 0), coalesce(l.held, 0)) as ledger
    from hot_lease_parts p
    join hot_leases h on h.id = p.lease_id
    left join (
      select lease_id, entitlement_id,
             sum(amount) filter (where kind = 'reserve') as leased,
             sum(amount) filter (where kind = 'release') as returned,
             sum(amount) filter (where kind = 'settle') as spent,
             sum(amount) filter (where kind = 'hold') as held
      from ledger_entries where lease_id is not null group by 1, 2
    ) l on l.lease_id = p.lease_id and l.entitlement_id is not distinct from p.entitlement_id
    where (${account}::uuid is null or h.account_id = ${account}::uuid)
      and (p.leased, p.returned, p.spent, p.held)
          is distinct from (coalesce(l.leased, 0), coalesce(l.returned, 0), coalesce(l.spent, 0), coalesce(l.held, 0))
  `.execute(db);

  return [
    ...leases.rows.map(
      (row) =>
        `lease ${row.lease_id} (${row.entitlement_id ?? 'credit'}): leased/returned/spent/held ${row.figures}, ledger says ${row.ledger}`,
    ),
    ...entitlements.rows.map(
      (row) =>
        `entitlement ${row.id}: remaining ${row.remaining} / reserved ${row.reserved}, ledger says ${row.available_sum} / ${row.reserved_sum}`,
    ),
    ...credits.rows.map(
      (row) =>
        `credit of ${row.account_id}: available ${row.available} / reserved ${row.reserved}, ledger says ${row.available_sum} / ${row.reserved_sum}`,
    ),
    ...reserves.rows.map(
      (row) =>
        `account ${row.account_id}: balances hold ${row.held_tokens} tokens / ${row.held_credits} credits in reserve, open reservations ${row.open_tokens} / ${row.open_credits}`,
    ),
  ];
}

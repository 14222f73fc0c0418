import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// The hot tier (docs/billing/hot-tier.md): with Redis, reservations are answered from Redis by the
// control plane, against a lease of each account's balances; Postgres stays the source of truth.
// - A lease moves what an account can spend (its credit and each usable entitlement) from
//   available to reserved, with a `reserve` ledger row per source, and records it per source in
//   hot_lease_parts. While it is open, calls are reserved and settled in Redis.
// - Finished calls are written here in batches (tollgate_hot_persist): the reservation row, once,
//   in its final state, and one `settle` ledger row per source charged (reserved -> spent), or the
//   `hold` rows of a held call, whose amount leaves the lease for the held row.
// - Closing a lease returns what is left of it (leased - returned - spent - held) with `release`
//   rows. A lease whose Redis state was lost is closed by the next control plane that opens one.
// - Every change of a lease takes a number from tollgate_hot_version, so Redis applies only the
//   newest view of it; api_keys and accounts get one too (a trigger), so a key's state written to
//   Redis can never be replaced by an older read.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create sequence tollgate_hot_version;

    alter table api_keys add column state_version bigint not null default 0;
    alter table accounts add column state_version bigint not null default 0;

    create function tollgate_bump_state_version() returns trigger language plpgsql as $fn$
    begin
      new.state_version := nextval('tollgate_hot_version');
      return new;
    end $fn$;
    create trigger api_keys_state_version before update of status, lookup_hash, expires_at, scope on api_keys
      for each row when (old.status is distinct from new.status or old.lookup_hash is distinct from new.lookup_hash
                         or old.expires_at is distinct from new.expires_at or old.scope is distinct from new.scope)
      execute function tollgate_bump_state_version();
    create trigger accounts_state_version before update of status on accounts
      for each row when (old.status is distinct from new.status)
      execute function tollgate_bump_state_version();

    create table hot_leases (
      id uuid primary key,
      account_id uuid not null references accounts(id),
      version bigint not null,
      opened_at timestamptz not null default now(),
      closed_at timestamptz,
      close_reason text
    );
    create unique index hot_leases_open_idx on hot_leases (account_id) where closed_at is null;

    -- One row per source of a lease: entitlement_id null is the account's credit.
    create table hot_lease_parts (
      lease_id uuid not null references hot_leases(id),
      entitlement_id uuid,
      leased bigint not null default 0,
      returned bigint not null default 0,
      spent bigint not null default 0,
      held bigint not null default 0,
      check (leased - returned - spent - held >= 0)
    );
    create unique index hot_lease_parts_key
      on hot_lease_parts (lease_id, coalesce(entitlement_id, '00000000-0000-0000-0000-000000000000'::uuid));

    alter table ledger_entries add column lease_id uuid;

    -- What a lease holds of one source now.
    create function tollgate_hot_outstanding(p hot_lease_parts) returns bigint language sql immutable as $fn$
      select p.leased - p.returned - p.spent - p.held
    $fn$;

    -- What the open lease of an entitlement's account holds of it (spendable through the hot tier).
    create function tollgate_hot_leased(p_entitlement uuid) returns bigint language sql stable as $fn$
      select coalesce(sum(tollgate_hot_outstanding(p)), 0)::bigint
      from hot_lease_parts p join hot_leases l on l.id = p.lease_id and l.closed_at is null
      where p.entitlement_id = p_entitlement
    $fn$;

    -- Moves p_amount of one source between available and the lease (negative: back to available).
    create function tollgate_hot_move(p_lease uuid, p_account uuid, p_entitlement uuid, p_amount bigint, p_cause text)
    returns void language plpgsql as $fn$
    begin
      if p_amount = 0 then return; end if;
      if p_entitlement is null then
        update credit_balances set available = available - p_amount, reserved = reserved + p_amount,
          updated_at = now() where account_id = p_account;
      else
        update entitlements set remaining = remaining - p_amount, reserved = reserved + p_amount
          where id = p_entitlement;
      end if;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount, lease_id, cause)
      values (p_account, p_entitlement, case when p_amount > 0 then 'reserve' else 'release' end, -p_amount, p_amount,
              abs(p_amount), p_lease, p_cause);
      if p_amount > 0 then
        insert into hot_lease_parts as p (lease_id, entitlement_id, leased) values (p_lease, p_entitlement, p_amount)
        on conflict (lease_id, coalesce(entitlement_id, '00000000-0000-0000-0000-000000000000'::uuid))
        do update set leased = p.leased + excluded.leased;
      else
        update hot_lease_parts set returned = returned - p_amount
          where lease_id = p_lease and entitlement_id is not distinct from p_entitlement;
      end if;
    end $fn$;

    -- Leases everything the account can spend now, keeping each source's lease below p_cap (Redis
    -- counts in doubles: exact below 2^53). Returns whether anything was left behind by the cap.
    create function tollgate_hot_take(p_lease uuid, p_account uuid, p_cap bigint) returns boolean
    language plpgsql as $fn$
    declare
      v_source record;
      v_take bigint;
      v_more boolean := false;
    begin
      for v_source in
        select null::uuid as entitlement_id, c.available as free,
               coalesce((select tollgate_hot_outstanding(p) from hot_lease_parts p
                         where p.lease_id = p_lease and p.entitlement_id is null), 0) as held
        from credit_balances c where c.account_id = p_account and c.available > 0
        union all
        select e.id, e.remaining,
               coalesce((select tollgate_hot_outstanding(p) from hot_lease_parts p
                         where p.lease_id = p_lease and p.entitlement_id = e.id), 0)
        from entitlements e
        where e.account_id = p_account and tollgate_entitlement_usable(e.remaining, e.expires_at, e.aliases, null)
      loop
        v_take := greatest(0, least(v_source.free, p_cap - v_source.held));
        if v_take < v_source.free then v_more := true; end if;
        perform tollgate_hot_move(p_lease, p_account, v_source.entitlement_id, v_take, 'hot tier lease');
      end loop;
      return v_more;
    end $fn$;

    -- What Redis needs of a lease: its sources in draw order (entitlements soonest expiry first,
    -- then credit), each with what the lease holds of it net of returns, and the account's state.
    -- Unexpired entitlements the lease holds nothing of are listed too: an alias one of them
    -- covers is refused as insufficient_tokens rather than insufficient_credits.
    create function tollgate_hot_state(p_lease uuid, p_more boolean) returns jsonb language sql stable as $fn$
      select jsonb_build_object(
        'lease', l.id, 'version', l.version::text, 'more', p_more,
        'accountStatus', a.status, 'accountVersion', a.state_version::text,
        'sources', coalesce((
          select jsonb_agg(s.source order by s.rank, s.expires_at asc nulls last, s.created_at, s.id)
          from (
            select 0 as rank, e.id, e.expires_at, e.created_at,
                   jsonb_build_object('id', e.id,
                     'net', coalesce((select p.leased - p.returned from hot_lease_parts p
                                      where p.lease_id = l.id and p.entitlement_id = e.id), 0)::text,
                     'expiresAt', coalesce(floor(extract(epoch from e.expires_at) * 1000)::bigint, 0)::text,
                     'aliases', e.aliases) as source
            from entitlements e
            where e.account_id = l.account_id and (e.expires_at is null or e.expires_at > now())
            union all
            select 1, null, null, null,
                   jsonb_build_object('id', null,
                     'net', coalesce((select p.leased - p.returned from hot_lease_parts p
                                      where p.lease_id = l.id and p.entitlement_id is null), 0)::text)
          ) s), '[]'::jsonb))
      from hot_leases l join accounts a on a.id = l.account_id
      where l.id = p_lease
    $fn$;

    -- Returns what is left of a lease and closes it. The caller holds the account's lock.
    create function tollgate_hot_close(p_lease uuid, p_reason text) returns boolean language plpgsql as $fn$
    declare
      v_lease hot_leases%rowtype;
      v_part hot_lease_parts%rowtype;
    begin
      select * into v_lease from hot_leases where id = p_lease and closed_at is null;
      if not found then return false; end if;
      for v_part in select * from hot_lease_parts where lease_id = p_lease loop
        perform tollgate_hot_move(p_lease, v_lease.account_id, v_part.entitlement_id,
                                  -tollgate_hot_outstanding(v_part), 'hot tier lease returned: ' || p_reason);
      end loop;
      update hot_leases set closed_at = now(), close_reason = p_reason where id = p_lease;
      return true;
    end $fn$;

    -- A new lease for an account whose Redis state is gone: any lease still open is closed first
    -- (its calls in flight will be charged against the new one). The caller holds the lock and has
    -- made sure in Redis that no other control plane installs a lease meanwhile.
    create function tollgate_hot_open(p_account uuid, p_lease uuid, p_cap bigint) returns jsonb
    language plpgsql as $fn$
    declare
      v_old uuid;
      v_more boolean;
    begin
      for v_old in select id from hot_leases where account_id = p_account and closed_at is null loop
        perform tollgate_hot_close(v_old, 'orphaned');
      end loop;
      insert into hot_leases (id, account_id, version) values (p_lease, p_account, nextval('tollgate_hot_version'));
      v_more := tollgate_hot_take(p_lease, p_account, p_cap);
      return tollgate_hot_state(p_lease, v_more);
    end $fn$;

    -- Adds what became spendable since (grants, returned holds) to an open lease. Null when the
    -- lease is closed. The caller holds the lock.
    create function tollgate_hot_topup(p_lease uuid, p_cap bigint) returns jsonb language plpgsql as $fn$
    declare
      v_account uuid;
      v_more boolean;
    begin
      update hot_leases set version = nextval('tollgate_hot_version')
        where id = p_lease and closed_at is null returning account_id into v_account;
      if not found then return null; end if;
      v_more := tollgate_hot_take(p_lease, v_account, p_cap);
      return tollgate_hot_state(p_lease, v_more);
    end $fn$;

    -- Gives back what Redis took out of an open lease (p_returns: [{entitlementId, amount}]) under
    -- version p_version, drawn before Redis was changed. The caller holds the lock.
    create function tollgate_hot_return(p_lease uuid, p_version bigint, p_returns jsonb) returns boolean
    language plpgsql as $fn$
    declare
      v_account uuid;
      v_item jsonb;
    begin
      update hot_leases set version = greatest(version, p_version)
        where id = p_lease and closed_at is null returning account_id into v_account;
      if not found then return false; end if;
      for v_item in select * from jsonb_array_elements(p_returns) loop
        perform tollgate_hot_move(p_lease, v_account, (v_item->>'entitlementId')::uuid,
                                  -(v_item->>'amount')::bigint, 'hot tier lease returned: recalled');
      end loop;
      return true;
    end $fn$;

    -- Writes finished calls of the hot tier, idempotently by reservation id, durably. One array per
    -- column (cheaper for Postgres to read than JSON), position i of each describing call i; the
    -- charges per source as three arrays of their own: the call's position, the entitlement (null:
    -- credit), the amount. A call already written is a replay (its row is returned); one drawn from
    -- a lease closed meanwhile (its Redis state was lost) is returned as stale, unwritten.
    create function tollgate_hot_persist(
      p_ids uuid[], p_accounts uuid[], p_keys uuid[], p_aliases text[], p_surfaces text[], p_statuses text[],
      p_outcomes text[], p_http int[], p_created timestamptz[], p_estimate_in bigint[], p_estimate_out bigint[],
      p_legs text[], p_reserved_tokens bigint[], p_reserved_credits bigint[], p_input bigint[], p_output bigint[],
      p_charged_tokens bigint[], p_charged_credits bigint[], p_off_tokens bigint[], p_off_credits bigint[],
      p_leases uuid[], p_charge_calls int[], p_charge_entitlements uuid[], p_charge_amounts bigint[])
    returns jsonb language plpgsql as $fn$
    declare
      v_closed uuid[];
      v_results jsonb;
    begin
      -- Every writer of balances locks its accounts first, in id order: no deadlocks.
      perform 1 from credit_balances where account_id = any(p_accounts) order by account_id for update;
      select coalesce(array_agg(id), '{}') into v_closed
      from hot_leases where id = any(p_leases) and closed_at is not null;

      with items as (
        select u.*, u.lease_id = any(v_closed) as stale
        from unnest(p_ids, p_accounts, p_keys, p_aliases, p_surfaces, p_statuses, p_outcomes, p_http, p_created,
                    p_estimate_in, p_estimate_out, p_legs, p_reserved_tokens, p_reserved_credits, p_input, p_output,
                    p_charged_tokens, p_charged_credits, p_off_tokens, p_off_credits, p_leases)
             with ordinality as u(id, account_id, key_id, alias, surface, status, outcome, http_status, created_at,
                                  estimate_input, estimate_output, legs, reserved_tokens, reserved_credits,
                                  input_tokens, output_tokens, charged_tokens, charged_credits, written_off_tokens,
                                  written_off_credits, lease_id, position)
      ), written as (
        insert into reservations (id, account_id, key_id, alias, surface, status, estimate_input, estimate_output,
                                  legs, reserved_tokens, reserved_credits, input_tokens, output_tokens,
                                  charged_tokens, charged_credits, written_off_tokens, written_off_credits,
                                  outcome, http_status, created_at, finished_at, hold_reason)
        select id, account_id, key_id, alias, surface, status, estimate_input, estimate_output, legs::jsonb,
               reserved_tokens, reserved_credits, input_tokens, output_tokens, charged_tokens, charged_credits,
               written_off_tokens, written_off_credits, outcome, http_status, created_at, now(),
               case when status = 'held' then outcome end
        from items where not stale
        on conflict (id) do nothing
        returning id
      ), fresh as (
        select items.* from items join written using (id)
      ), moves as (
        -- Charged: out of the lease (reserved) for good. Held: out of the lease into the held row.
        select f.account_id, f.id, f.lease_id, c.entitlement_id, c.amount, 'settle' as kind,
               'usage reported by the model' as cause
        from fresh f
        join unnest(p_charge_calls, p_charge_entitlements, p_charge_amounts) as c(position, entitlement_id, amount)
          on c.position = f.position
        where f.status = 'settled' and c.amount > 0
        union all
        select f.account_id, f.id, f.lease_id, (leg->>'entitlementId')::uuid, (leg->>'amount')::bigint,
               'hold', 'held: ' || coalesce(f.outcome, 'unknown')
        from fresh f cross join jsonb_array_elements(f.legs::jsonb) leg
        where f.status = 'held' and (leg->>'amount')::bigint > 0
      ), ledger as (
        insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                    reservation_id, lease_id, cause)
        select account_id, entitlement_id, kind, 0, case when kind = 'settle' then -amount else 0 end, amount,
               id, lease_id, cause
        from moves
        union all
        select account_id, null, 'write_off', 0, 0, written_off_tokens, id, lease_id, 'usage beyond balance (tokens)'
        from fresh where written_off_tokens > 0
        union all
        select account_id, null, 'write_off', 0, 0, written_off_credits, id, lease_id, 'usage beyond balance (credits)'
        from fresh where written_off_credits > 0
      ), entitlement_spent as (
        update entitlements e set reserved = e.reserved - s.amount
        from (select entitlement_id, sum(amount) as amount from moves
              where kind = 'settle' and entitlement_id is not null group by 1) s
        where e.id = s.entitlement_id
      ), credit_spent as (
        update credit_balances c set reserved = c.reserved - s.amount, updated_at = now()
        from (select account_id, sum(amount) as amount from moves
              where kind = 'settle' and entitlement_id is null group by 1) s
        where c.account_id = s.account_id
      ), lease_spent as (
        update hot_lease_parts p set spent = p.spent + s.spent, held = p.held + s.held
        from (select lease_id, entitlement_id,
                     sum(case when kind = 'settle' then amount else 0 end) as spent,
                     sum(case when kind = 'hold' then amount else 0 end) as held
              from moves where lease_id is not null group by 1, 2) s
        where p.lease_id = s.lease_id and p.entitlement_id is not distinct from s.entitlement_id
      ), key_use as (
        -- Each key's first and last use (migration 0011), as the reservation functions keep them.
        update api_keys k
        set first_used_at = least(k.first_used_at, f.first), last_used_at = greatest(k.last_used_at, f.last)
        from (select key_id, min(created_at) as first, max(created_at) as last from fresh group by 1) f
        where k.id = f.key_id
          and (k.first_used_at is null or k.first_used_at > f.first or k.last_used_at < f.last - interval '1 hour')
      )
      select jsonb_agg(case
          when i.stale then jsonb_build_object('reservation_id', i.id, 'stale', true)
          when w.id is not null then jsonb_build_object('reservation_id', i.id, 'status', i.status, 'replay', false,
            'charged_tokens', i.charged_tokens::text, 'charged_credits', i.charged_credits::text,
            'written_off_tokens', i.written_off_tokens::text, 'written_off_credits', i.written_off_credits::text)
          else jsonb_build_object('reservation_id', r.id, 'status', r.status, 'replay', true,
            'charged_tokens', r.charged_tokens::text, 'charged_credits', r.charged_credits::text,
            'written_off_tokens', r.written_off_tokens::text, 'written_off_credits', r.written_off_credits::text)
          end order by i.position)
      into v_results
      from items i
      left join written w on w.id = i.id
      left join reservations r on r.id = i.id and w.id is null and not i.stale;
      return coalesce(v_results, '[]'::jsonb);
    end $fn$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop function tollgate_hot_persist(uuid[], uuid[], uuid[], text[], text[], text[], text[], int[], timestamptz[],
      bigint[], bigint[], text[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[],
      uuid[], int[], uuid[], bigint[]);
    drop function tollgate_hot_return(uuid, bigint, jsonb);
    drop function tollgate_hot_topup(uuid, bigint);
    drop function tollgate_hot_open(uuid, uuid, bigint);
    drop function tollgate_hot_close(uuid, text);
    drop function tollgate_hot_state(uuid, boolean);
    drop function tollgate_hot_take(uuid, uuid, bigint);
    drop function tollgate_hot_move(uuid, uuid, uuid, bigint, text);
    drop function tollgate_hot_leased(uuid);
    drop function tollgate_hot_outstanding(hot_lease_parts);
    alter table ledger_entries drop column lease_id;
    drop table hot_lease_parts, hot_leases;
    drop trigger accounts_state_version on accounts;
    drop trigger api_keys_state_version on api_keys;
    drop function tollgate_bump_state_version();
    alter table accounts drop column state_version;
    alter table api_keys drop column state_version;
    drop sequence tollgate_hot_version;
  `.execute(db);
}

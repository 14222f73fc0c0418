-- The hot tier's leases and its persisting of finished calls (R21; docs/billing/hot-tier.md).
-- The functions in force: see README.md before changing one.

-- R21: what a lease part still holds (leased - returned - spent - held).
create or replace function tollgate_hot_outstanding(p hot_lease_parts)
  returns bigint language sql immutable as $fn$
select p.leased - p.returned - p.spent - p.held
$fn$;

-- R7, R21: what open leases hold of an entitlement.
create or replace function tollgate_hot_leased(p_entitlement uuid)
  returns bigint language sql stable as $fn$
select coalesce(sum(tollgate_hot_outstanding(p)), 0)::bigint
from hot_lease_parts p join hot_leases l on l.id = p.lease_id and l.closed_at is null
where p.entitlement_id = p_entitlement
$fn$;

-- R18, R19, R21: moves a source's amount into a lease, with its reserve row.
create or replace function tollgate_hot_move(p_lease uuid, p_account uuid, p_entitlement uuid, p_amount bigint, p_cause text)
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
end
$fn$;

-- R3, R4, R16, R21: leases the usable sources of an account, in draw order, until what the whole
-- lease holds reaches p_cap (every source together, so any sum the hot tier's Lua forms stays
-- exact in a double, docs/decisions/hot-tier-integers.md). Expiry by tollgate_now(). True when
-- the account keeps some of it in Postgres: the lease then holds a prefix of the draw order, up
-- to its cut (tollgate_hot_state).
create or replace function tollgate_hot_take(p_lease uuid, p_account uuid, p_cap bigint)
  returns boolean language plpgsql as $fn$
declare
  v_source record;
  v_take bigint;
  v_more boolean := false;
  v_room bigint;
begin
  select p_cap - coalesce(sum(tollgate_hot_outstanding(p)), 0) into v_room
    from hot_lease_parts p where p.lease_id = p_lease;
  for v_source in
    select e.id as entitlement_id, e.remaining as free, 0 as rank, e.expires_at, e.created_at
    from entitlements e
    where e.account_id = p_account and tollgate_entitlement_usable(e.remaining, e.expires_at, e.aliases, null)
    union all
    select null::uuid, c.available, 1, null, null
    from credit_balances c where c.account_id = p_account and c.available > 0
    order by rank, expires_at asc nulls last, created_at, entitlement_id
  loop
    v_take := greatest(0, least(v_source.free, v_room));
    if v_take < v_source.free then v_more := true; end if;
    perform tollgate_hot_move(p_lease, p_account, v_source.entitlement_id, v_take, 'hot tier lease');
    v_room := v_room - v_take;
  end loop;
  return v_more;
end
$fn$;

-- R2b, R4, R21: a lease as Redis is given it, its sources in draw order. `net` (leased less
-- returned over the lease's life, which spending through it may take past 2^53) goes modulo 2^52,
-- so Redis, counting in doubles, gets its change between two versions exactly (lease.lua). `cut` (p_more: the take
-- left some of the account in Postgres): the first source in draw order still holding some there,
-- the one the take could not lease whole; a call draws no further than it in Redis (reserve.lua).
create or replace function tollgate_hot_state(p_lease uuid, p_more boolean)
  returns jsonb language sql stable as $fn$
select jsonb_build_object(
  'lease', l.id, 'version', l.version::text,
  'cut', case when p_more then coalesce((
    select e.id::text from entitlements e
    where e.account_id = l.account_id and tollgate_entitlement_usable(e.remaining, e.expires_at, e.aliases, null)
    order by e.expires_at asc nulls last, e.created_at, e.id limit 1), 'c') end,
  'accountStatus', a.status, 'accountVersion', a.state_version::text,
  'sources', coalesce((
    select jsonb_agg(s.source order by s.rank, s.expires_at asc nulls last, s.created_at, s.id)
    from (
      select 0 as rank, e.id, e.expires_at, e.created_at,
             jsonb_build_object('id', e.id,
               'net', coalesce((select mod(p.leased - p.returned, 4503599627370496) from hot_lease_parts p
                                where p.lease_id = l.id and p.entitlement_id = e.id), 0)::text,
               'expiresAt', coalesce(floor(extract(epoch from e.expires_at) * 1000)::bigint, 0)::text,
               'aliases', e.aliases, 'weighted', e.weighted) as source
      from entitlements e
      where e.account_id = l.account_id and (e.expires_at is null or e.expires_at > tollgate_now())
      union all
      select 1, null, null, null,
             jsonb_build_object('id', null,
               'net', coalesce((select mod(p.leased - p.returned, 4503599627370496) from hot_lease_parts p
                                where p.lease_id = l.id and p.entitlement_id is null), 0)::text)
    ) s), '[]'::jsonb))
from hot_leases l join accounts a on a.id = l.account_id
where l.id = p_lease
$fn$;

-- R21: opens an account's lease.
create or replace function tollgate_hot_open(p_account uuid, p_lease uuid, p_cap bigint)
  returns jsonb language plpgsql as $fn$
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
end
$fn$;

-- R21: leases more of what the account has since received.
create or replace function tollgate_hot_topup(p_lease uuid, p_cap bigint)
  returns jsonb language plpgsql as $fn$
declare
  v_account uuid;
  v_more boolean;
begin
  update hot_leases set version = nextval('tollgate_hot_version')
    where id = p_lease and closed_at is null returning account_id into v_account;
  if not found then return null; end if;
  v_more := tollgate_hot_take(p_lease, v_account, p_cap);
  return tollgate_hot_state(p_lease, v_more);
end
$fn$;

-- R21: closes a lease, returning what is left of it with release rows.
create or replace function tollgate_hot_close(p_lease uuid, p_reason text)
  returns boolean language plpgsql as $fn$
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
end
$fn$;

-- R21: returns part of a lease, if the lease is still at p_version.
create or replace function tollgate_hot_return(p_lease uuid, p_version bigint, p_returns jsonb)
  returns boolean language plpgsql as $fn$
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
end
$fn$;

-- R9, R10, R13, R19, R21: writes finished hot-tier calls, their settle and hold rows.
create or replace function tollgate_hot_persist(
  p_ids uuid[], p_accounts uuid[], p_keys uuid[], p_aliases text[], p_surfaces text[],
  p_statuses text[], p_outcomes text[], p_http integer[], p_created timestamp with time zone[],
  p_estimate_in bigint[], p_estimate_out bigint[], p_legs text[], p_reserved_tokens bigint[],
  p_reserved_credits bigint[], p_input bigint[], p_output bigint[], p_charged_tokens bigint[],
  p_charged_credits bigint[], p_off_tokens bigint[], p_off_credits bigint[], p_leases uuid[],
  p_charge_calls integer[], p_charge_entitlements uuid[], p_charge_amounts bigint[],
  p_cache_read bigint[], p_cache_write bigint[], p_cache_write_1h bigint[]
)
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
                p_charged_tokens, p_charged_credits, p_off_tokens, p_off_credits, p_leases, p_cache_read,
                p_cache_write, p_cache_write_1h)
         with ordinality as u(id, account_id, key_id, alias, surface, status, outcome, http_status, created_at,
                              estimate_input, estimate_output, legs, reserved_tokens, reserved_credits,
                              input_tokens, output_tokens, charged_tokens, charged_credits, written_off_tokens,
                              written_off_credits, lease_id, cache_read_tokens, cache_write_tokens,
                              cache_write_1h_tokens, position)
  ), written as (
    insert into reservations (id, account_id, key_id, alias, surface, status, estimate_input, estimate_output,
                              legs, reserved_tokens, reserved_credits, input_tokens, output_tokens,
                              cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
                              charged_tokens, charged_credits, written_off_tokens, written_off_credits,
                              outcome, http_status, created_at, finished_at, hold_reason)
    select id, account_id, key_id, alias, surface, status, estimate_input, estimate_output, legs::jsonb,
           reserved_tokens, reserved_credits, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, cache_write_1h_tokens, charged_tokens, charged_credits,
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
end
$fn$;

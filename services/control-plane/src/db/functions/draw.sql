-- What an account may draw and in which order (R2b, R3, R4, R16), and its lock (R18).
-- The functions in force: see README.md before changing one.

-- R18: the account's lock is its credit_balances row, created on first use.
create or replace function tollgate_lock_account(p_account uuid)
  returns void language plpgsql as $fn$
begin
  perform 1 from credit_balances where account_id = p_account for update;
  if not found then
    insert into credit_balances (account_id) values (p_account) on conflict do nothing;
    perform 1 from credit_balances where account_id = p_account for update;
  end if;
end
$fn$;

-- R6: a refused reservation's answer.
create or replace function tollgate_refusal(p_id uuid, p_code text)
  returns jsonb language sql immutable as $fn$
select jsonb_build_object('reservation_id', p_id, 'ok', false, 'code', p_code)
$fn$;

-- R16: Postgres's one clock for every expiry it decides: now() (the transaction's start), moved by
-- the session's tollgate.clock_offset_ms when set (only ever by tests, which move the clock).
create or replace function tollgate_now()
  returns timestamp with time zone language sql stable as $fn$
select now() + coalesce(nullif(current_setting('tollgate.clock_offset_ms', true), '')::bigint, 0)
  * interval '1 millisecond'
$fn$;

-- R3, R16: usable means tokens left, unexpired by tollgate_now(), and covering the alias.
create or replace function tollgate_entitlement_usable(p_remaining bigint, p_expires_at timestamp with time zone, p_aliases text[], p_alias text)
  returns boolean language sql stable as $fn$
select p_remaining > 0 and (p_expires_at is null or p_expires_at > tollgate_now())
  and (p_alias is null or p_aliases is null or p_alias = any(p_aliases))
$fn$;

-- R2b: units of an entitlement one token of an alias costs: the alias's package rate for a weighted
-- entitlement, 1 for one counting raw tokens.
create or replace function tollgate_unit_rate(p_weighted boolean, p_rate bigint)
  returns bigint language sql immutable as $fn$
select case when p_weighted then p_rate else 1 end
$fn$;

-- R4: the usable entitlements in draw order (soonest expiry, no expiry last, oldest grant, id), and
-- what one token costs each (R2b); a weighted one is usable while it has units for a whole token.
create or replace function tollgate_usable_entitlements(p_account uuid, p_alias text, p_rate bigint)
  returns table(id uuid, remaining bigint, rate bigint, draw_order bigint) language sql stable as $fn$
select e.id, e.remaining, tollgate_unit_rate(e.weighted, p_rate),
       row_number() over (order by e.expires_at asc nulls last, e.created_at, e.id)
from entitlements e
where e.account_id = p_account and tollgate_entitlement_usable(e.remaining, e.expires_at, e.aliases, p_alias)
  and e.remaining >= tollgate_unit_rate(e.weighted, p_rate)
$fn$;

-- R2b, R4, R10: what each entitlement gives, in draw order, towards p_need tokens: `tokens` it
-- covers and the units (`take`) it gives for them, whole tokens only.
create or replace function tollgate_draw_plan(p_account uuid, p_alias text, p_need bigint, p_rate bigint)
  returns table(entitlement_id uuid, tokens bigint, take bigint) language sql stable as $fn$
select id, tokens::bigint, (tokens * rate)::bigint from (
  select u.id, u.draw_order, u.rate,
         least(u.remaining / u.rate, p_need - coalesce(sum(u.remaining / u.rate) over (order by u.draw_order
           rows between unbounded preceding and 1 preceding), 0)) as tokens
  from tollgate_usable_entitlements(p_account, p_alias, p_rate) u
) plan
where tokens > 0
order by draw_order
$fn$;

-- Finishing in Postgres alone: settle, release, hold (R9 to R14).
-- The functions in force: see README.md before changing one.

-- R9, R12, R13, R14, R18: a batch of settles, releases and holds, each account locked once.
create or replace function tollgate_finish(p_items jsonb)
  returns jsonb language plpgsql as $fn$
declare
  v_row record;
  v_results jsonb[] := '{}';
  v_locked uuid;
begin
  for v_row in
    select item.value as item, item.ordinality as position, (item.value->>'account_id')::uuid as account_id
    from jsonb_array_elements(p_items) with ordinality as item
    order by 3, 2
  loop
    if v_row.account_id is distinct from v_locked then
      perform 1 from credit_balances where account_id = v_row.account_id for update;
      if not found then perform tollgate_lock_account(v_row.account_id); end if;
      v_locked := v_row.account_id;
    end if;
    v_results[v_row.position] := tollgate_finish_one(v_row.item);
  end loop;
  return to_jsonb(v_results);
end
$fn$;

-- R11: a finish whose reservation was never written keeps the gateway's time (occurred_at).
create or replace function tollgate_finish_unflushed(p_items jsonb)
  returns jsonb language plpgsql as $fn$
declare
  v_results jsonb;
begin
  perform set_config('synchronous_commit', 'off', true);
  v_results := tollgate_finish(p_items);
  update api_keys k
  set first_used_at = least(k.first_used_at, f.first), last_used_at = greatest(k.last_used_at, f.last)
  from (select (i->>'key_id')::uuid as key_id, min(coalesce((i->>'occurred_at')::timestamptz, now())) as first,
               max(coalesce((i->>'occurred_at')::timestamptz, now())) as last
        from jsonb_array_elements(p_items) i group by 1) f
  where k.id = f.key_id
    and (k.first_used_at is null or k.first_used_at > f.first or k.last_used_at < f.last - interval '1 hour');
  return v_results;
end
$fn$;

-- R9 to R14: one settle, release or hold, idempotent by reservation id.
create or replace function tollgate_finish_one(p_item jsonb)
  returns jsonb language plpgsql as $fn$
declare
  v_id uuid := (p_item->>'reservation_id')::uuid;
  v_action text := p_item->>'action';
  v_res reservations%rowtype;
  -- The usage parts in the order a package's tokens cover them (R9): input outside any cache,
  -- five-minute and one-hour cache writes, cache reads, output.
  v_parts bigint[] := array[coalesce((p_item->>'input_tokens')::bigint, 0),
                            coalesce((p_item->>'cache_write_tokens')::bigint, 0),
                            coalesce((p_item->>'cache_write_1h_tokens')::bigint, 0),
                            coalesce((p_item->>'cache_read_tokens')::bigint, 0),
                            coalesce((p_item->>'output_tokens')::bigint, 0)];
  v_legs jsonb;
  v_more jsonb;
  v_rest bigint[];
  v_legs_reserved boolean;
  v_target text;
begin
  select * into v_res from reservations where id = v_id for update;
  if not found then
    -- Never reserved, or forgotten by a crash (reservations commit asynchronously):
    -- nothing is reserved, and a settle still charges what was used.
    insert into reservations (id, account_id, key_id, alias, surface, status, created_at)
    values (v_id, (p_item->>'account_id')::uuid, (p_item->>'key_id')::uuid, p_item->>'alias',
            p_item->>'surface', 'reserved', coalesce((p_item->>'occurred_at')::timestamptz, now()))
    returning * into v_res;
  end if;

  v_target := case v_action when 'settle' then 'settled' when 'release' then 'released' else 'held' end;
  if v_res.status = 'settled' or v_res.status = v_target
     or (v_res.status = 'released' and v_action <> 'settle') then
    return tollgate_finish_result(v_res, true);
  end if;
  v_legs_reserved := v_res.status in ('reserved', 'held');

  if v_action = 'release' then
    perform tollgate_release_legs(v_res, 'release', 'released: ' || coalesce(p_item->>'outcome', 'unknown'));
    update reservations set status = 'released', outcome = p_item->>'outcome',
      http_status = coalesce((p_item->>'http_status')::int, http_status), finished_at = now()
      where id = v_id returning * into v_res;
  elsif v_action = 'hold' then
    perform tollgate_release_legs(v_res, 'hold', 'held: ' || coalesce(p_item->>'outcome', 'unknown'));
    update reservations set status = 'held', outcome = p_item->>'outcome', hold_reason = p_item->>'outcome',
      http_status = coalesce((p_item->>'http_status')::int, http_status), finished_at = now()
      where id = v_id returning * into v_res;
  else
    if v_legs_reserved then
      v_legs := tollgate_settle_legs(v_res, v_parts);
    else
      v_legs := jsonb_build_object('tokens', 0, 'credits', 0, 'rest', to_jsonb(v_parts), 'extra_credits', 0);
    end if;
    v_rest := array(select jsonb_array_elements_text(v_legs->'rest')::bigint);
    if tollgate_parts_total(v_rest) + (v_legs->>'extra_credits')::bigint > 0 then
      v_more := tollgate_charge_available(v_res.account_id, v_res.alias, v_id, v_rest,
        (v_legs->>'extra_credits')::bigint);
    else
      v_more := '{"tokens": 0, "credits": 0, "written_off_tokens": 0, "written_off_credits": 0}';
    end if;
    update reservations set status = 'settled', outcome = coalesce(p_item->>'outcome', 'ok'),
      http_status = coalesce((p_item->>'http_status')::int, http_status), finished_at = now(),
      input_tokens = v_parts[1], cache_write_tokens = v_parts[2], cache_write_1h_tokens = v_parts[3],
      cache_read_tokens = v_parts[4], output_tokens = v_parts[5],
      charged_tokens = (v_legs->>'tokens')::bigint + (v_more->>'tokens')::bigint,
      charged_credits = (v_legs->>'credits')::bigint + (v_more->>'credits')::bigint,
      written_off_tokens = (v_more->>'written_off_tokens')::bigint,
      written_off_credits = (v_more->>'written_off_credits')::bigint
      where id = v_id returning * into v_res;
  end if;
  return tollgate_finish_result(v_res, false);
end
$fn$;

-- R14: what a finish answers, the first time and on a repeat.
create or replace function tollgate_finish_result(p_res reservations, p_replay boolean)
  returns jsonb language sql stable as $fn$
select jsonb_build_object('reservation_id', p_res.id, 'status', p_res.status, 'replay', p_replay,
  'charged_tokens', p_res.charged_tokens::text, 'charged_credits', p_res.charged_credits::text,
  'written_off_tokens', p_res.written_off_tokens::text,
  'written_off_credits', p_res.written_off_credits::text)
$fn$;

-- R9: every token of a usage, whatever its part.
create or replace function tollgate_parts_total(p_parts bigint[])
  returns bigint language sql immutable as $fn$
select coalesce(sum(part), 0)::bigint from unnest(p_parts) as part
$fn$;

-- R9: the parts left after p_take tokens were taken from them, in their order.
create or replace function tollgate_take_parts(p_parts bigint[], p_take bigint)
  returns bigint[] language plpgsql immutable as $fn$
declare
  v_parts bigint[] := p_parts;
  v_left bigint := p_take;
  v_take bigint;
begin
  for i in 1 .. array_length(v_parts, 1) loop
    v_take := least(v_parts[i], v_left);
    v_parts[i] := v_parts[i] - v_take;
    v_left := v_left - v_take;
  end loop;
  return v_parts;
end
$fn$;

-- R9, R10: what the parts cost at these prices (input, 5-minute write, 1-hour write, cache read,
-- output, then per call); the call's price only when some token is paid with credit.
create or replace function tollgate_parts_cost(p_parts bigint[], p_prices bigint[])
  returns numeric language sql immutable as $fn$
select case when tollgate_parts_total(p_parts) = 0 then 0::numeric
       else p_parts[1]::numeric * p_prices[1] + p_parts[2]::numeric * p_prices[2]
          + p_parts[3]::numeric * p_prices[3] + p_parts[4]::numeric * p_prices[4]
          + p_parts[5]::numeric * p_prices[5] + p_prices[6] end
$fn$;

-- R5, R9: the prices a credit leg recorded; a leg recorded before cache parts were priced apart
-- charged every input token at its input price and nothing per call.
create or replace function tollgate_leg_prices(p_leg jsonb)
  returns bigint[] language sql immutable as $fn$
select array[(p_leg->>'inputPrice')::bigint,
             coalesce((p_leg->>'cacheWritePrice')::bigint, (p_leg->>'inputPrice')::bigint),
             coalesce((p_leg->>'cacheWrite1hPrice')::bigint, (p_leg->>'inputPrice')::bigint),
             coalesce((p_leg->>'cacheReadPrice')::bigint, (p_leg->>'inputPrice')::bigint),
             (p_leg->>'outputPrice')::bigint,
             coalesce((p_leg->>'requestPrice')::bigint, 0)]
$fn$;

-- R9, R10: usage charged from the legs in draw order; what is left returns to its source. A
-- weighted leg (R2b) covers whole tokens at the rate it recorded.
create or replace function tollgate_settle_legs(p_res reservations, p_parts bigint[])
  returns jsonb language plpgsql as $fn$
declare
  v_leg jsonb;
  v_amount bigint;
  v_rate bigint;
  v_take bigint;
  v_rest bigint[] := p_parts;
  v_cost numeric;
  v_tokens bigint := 0;
  v_credits bigint := 0;
  v_extra_credits bigint := 0;
begin
  for v_leg in select * from jsonb_array_elements(p_res.legs) loop
    v_amount := (v_leg->>'amount')::bigint;
    if v_leg->>'source' = 'entitlement' then
      v_rate := coalesce((v_leg->>'rate')::bigint, 1);
      v_take := least(v_amount / v_rate, tollgate_parts_total(v_rest));
      v_rest := tollgate_take_parts(v_rest, v_take);
      v_take := v_take * v_rate;
      update entitlements set reserved = reserved - v_amount, remaining = remaining + (v_amount - v_take)
        where id = (v_leg->>'entitlementId')::uuid;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                  reservation_id, cause)
      values (p_res.account_id, (v_leg->>'entitlementId')::uuid, 'settle', v_amount - v_take, -v_amount, v_take,
              p_res.id, 'usage reported by the model');
      v_tokens := v_tokens + v_take;
    else
      v_cost := tollgate_parts_cost(v_rest, tollgate_leg_prices(v_leg));
      v_take := least(v_cost, v_amount)::bigint;
      update credit_balances set reserved = reserved - v_amount, available = available + (v_amount - v_take),
        updated_at = now() where account_id = p_res.account_id;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                  reservation_id, cause)
      values (p_res.account_id, null, 'settle', v_amount - v_take, -v_amount, v_take, p_res.id,
              'usage reported by the model');
      v_credits := v_credits + v_take;
      v_extra_credits := least(v_cost - v_take, 9223372036854775807)::bigint;
      v_rest := array[0, 0, 0, 0, 0];
    end if;
  end loop;
  return jsonb_build_object('tokens', v_tokens, 'credits', v_credits, 'rest', to_jsonb(v_rest),
    'extra_credits', v_extra_credits);
end
$fn$;

-- R10, R11: usage beyond the reservation, from usable entitlements (at today's package rate, R2b)
-- then credit at today's prices; the rest written off.
create or replace function tollgate_charge_available(p_account uuid, p_alias text, p_reservation uuid, p_parts bigint[], p_extra_credits bigint)
  returns jsonb language plpgsql as $fn$
declare
  v_draw record;
  v_rest bigint[] := p_parts;
  v_tokens bigint := 0;
  v_owed numeric := p_extra_credits;
  v_model model_aliases%rowtype;
  v_available bigint;
  v_credits bigint := 0;
  v_off_tokens bigint := 0;
  v_off_credits bigint := 0;
begin
  if tollgate_parts_total(v_rest) > 0 then
    select * into v_model from model_aliases where alias = p_alias;
    for v_draw in select * from tollgate_draw_plan(p_account, p_alias, tollgate_parts_total(v_rest),
                                                   coalesce(v_model.package_rate, 1)) loop
      v_rest := tollgate_take_parts(v_rest, v_draw.tokens);
      update entitlements set remaining = remaining - v_draw.take where id = v_draw.entitlement_id;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, amount, reservation_id, cause)
      values (p_account, v_draw.entitlement_id, 'settle', -v_draw.take, v_draw.take, p_reservation,
              'usage beyond reservation');
      v_tokens := v_tokens + v_draw.take;
    end loop;
  end if;

  if tollgate_parts_total(v_rest) > 0 then
    select * into v_model from model_aliases where alias = p_alias;
    if found and v_model.input_price is not null and v_model.output_price is not null then
      v_owed := v_owed + tollgate_parts_cost(v_rest, array[v_model.input_price,
        coalesce(v_model.cache_write_price, v_model.input_price),
        coalesce(v_model.cache_write_1h_price, v_model.input_price),
        coalesce(v_model.cache_read_price, v_model.input_price), v_model.output_price, v_model.request_price]);
    else
      v_off_tokens := tollgate_parts_total(v_rest);
    end if;
  end if;

  if v_owed > 0 then
    select available into v_available from credit_balances where account_id = p_account;
    v_credits := least(v_owed, coalesce(v_available, 0))::bigint;
    if v_credits > 0 then
      update credit_balances set available = available - v_credits, updated_at = now()
        where account_id = p_account;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, amount, reservation_id, cause)
      values (p_account, null, 'settle', -v_credits, v_credits, p_reservation, 'usage beyond reservation');
    end if;
    v_off_credits := least(v_owed - v_credits, 9223372036854775807)::bigint;
  end if;

  if v_off_tokens > 0 then
    insert into ledger_entries (account_id, entitlement_id, kind, amount, reservation_id, cause)
    values (p_account, null, 'write_off', v_off_tokens, p_reservation, 'usage beyond balance (tokens)');
  end if;
  if v_off_credits > 0 then
    insert into ledger_entries (account_id, entitlement_id, kind, amount, reservation_id, cause)
    values (p_account, null, 'write_off', v_off_credits, p_reservation, 'usage beyond balance (credits)');
  end if;
  return jsonb_build_object('tokens', v_tokens, 'credits', v_credits,
    'written_off_tokens', v_off_tokens, 'written_off_credits', v_off_credits);
end
$fn$;

-- R12, R13: a release returns every leg; a hold keeps them reserved, recorded by hold rows.
create or replace function tollgate_release_legs(p_res reservations, p_kind text, p_cause text)
  returns void language plpgsql as $fn$
declare
  v_leg jsonb;
  v_amount bigint;
begin
  for v_leg in select * from jsonb_array_elements(p_res.legs) loop
    v_amount := (v_leg->>'amount')::bigint;
    if p_kind = 'release' then
      if v_leg->>'source' = 'entitlement' then
        update entitlements set reserved = reserved - v_amount, remaining = remaining + v_amount
          where id = (v_leg->>'entitlementId')::uuid;
      else
        update credit_balances set reserved = reserved - v_amount, available = available + v_amount,
          updated_at = now() where account_id = p_res.account_id;
      end if;
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                  reservation_id, cause)
      values (p_res.account_id, (v_leg->>'entitlementId')::uuid, 'release', v_amount, -v_amount, v_amount,
              p_res.id, p_cause);
    else
      -- A hold moves nothing; the row records that the amount stays reserved for review.
      insert into ledger_entries (account_id, entitlement_id, kind, amount, reservation_id, cause)
      values (p_res.account_id, (v_leg->>'entitlementId')::uuid, 'hold', v_amount, p_res.id, p_cause);
    end if;
  end loop;
end
$fn$;

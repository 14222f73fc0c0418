-- Reserving in Postgres alone (R5 to R8). The hot tier reserves in Redis (billing/hot/).
-- The functions in force: see README.md before changing one.

-- R5, R18: a batch of reservations, each account locked once, in account order; records a key's
-- first and last use.
create or replace function tollgate_reserve(p_items jsonb)
  returns jsonb language plpgsql as $fn$
declare
  v_row record;
  v_results jsonb[] := '{}';
  v_locked uuid;
begin
  -- A crash may forget a reservation (a hold), never money: settle charges even a forgotten one.
  perform set_config('synchronous_commit', 'off', true);
  for v_row in
    select item.value as item, item.ordinality as position, k.id as key_id, k.account_id, k.status,
           k.expires_at, k.scope, k.first_used_at, k.last_used_at, a.status as account_status,
           m.alias as model_alias, m.published,
           m.protocols, m.provider_id, m.upstream_model, m.input_price, m.output_price,
           m.cache_read_price, m.cache_write_price, m.cache_write_1h_price, m.request_price,
           m.package_rate
    from jsonb_array_elements(p_items) with ordinality as item
    left join api_keys k on k.lookup_hash = decode(item.value->>'lookup_hash', 'hex')
    left join accounts a on a.id = k.account_id
    left join model_aliases m on m.alias = item.value->>'alias'
    order by k.account_id nulls first, item.ordinality
  loop
    if v_row.account_id is not null and v_row.account_id is distinct from v_locked then
      perform 1 from credit_balances where account_id = v_row.account_id for update;
      if not found then perform tollgate_lock_account(v_row.account_id); end if;
      v_locked := v_row.account_id;
    end if;
    v_results[v_row.position] := tollgate_reserve_one(v_row.item, v_row);
    -- A new reservation's created_at is now(). A batch that read the key before another's
    -- first use committed moves it back to its own start if that is earlier.
    if v_row.key_id is not null
       and (v_row.first_used_at is null or v_row.last_used_at < now() - interval '1 hour')
       and (v_results[v_row.position]->>'ok')::boolean then
      update api_keys
      set first_used_at = least(first_used_at, now()), last_used_at = greatest(last_used_at, now())
      where id = v_row.key_id
        and (first_used_at is null or first_used_at > now() or last_used_at < now() - interval '1 hour');
    end if;
  end loop;
  return to_jsonb(v_results);
end
$fn$;

-- R5 (draw), R2b (weighted packages), R6 (refusal code), R7 (overrun cover), R8 (idempotent, tombstones).
create or replace function tollgate_reserve_one(p_item jsonb, p_key record)
  returns jsonb language plpgsql as $fn$
declare
  v_id uuid := (p_item->>'reservation_id')::uuid;
  v_alias text := p_item->>'alias';
  v_surface text := p_item->>'surface';
  v_in bigint := (p_item->>'estimate_input')::bigint;
  v_out bigint := (p_item->>'estimate_output')::bigint;
  v_need bigint := v_in + v_out;
  v_existing reservations%rowtype;
  v_model model_aliases%rowtype;
  v_draw record;
  -- Tokens the entitlements cover, and the units they give for them (R2b: more when weighted).
  v_tokens bigint := 0;
  v_units bigint := 0;
  v_rate bigint := coalesce(p_key.package_rate, 1);
  v_cov_in bigint;
  v_cost numeric;
  v_credit bigint := 0;
  v_available bigint;
  v_priced boolean := p_key.input_price is not null and p_key.output_price is not null;
  -- R5: an input token may turn out to be a cache write or read; the estimate pays the highest.
  v_in_price bigint := greatest(p_key.input_price, p_key.cache_read_price, p_key.cache_write_price,
                                p_key.cache_write_1h_price);
  v_covered boolean := true;
  v_cover bigint := coalesce((p_item->>'cover_percent')::bigint, 0);
  v_pool_reserved bigint;
  v_pool_available bigint;
  v_legs jsonb := '[]';
begin
  -- A repeat of the same id, or a reserve arriving after the gateway released that id (the
  -- release left a finished row behind): nothing new is reserved.
  select * into v_existing from reservations where id = v_id;
  if found then
    select * into v_model from model_aliases where alias = v_existing.alias;
    return jsonb_build_object('reservation_id', v_id, 'ok', true, 'key_id', v_existing.key_id,
      'account_id', v_existing.account_id, 'provider_id', v_model.provider_id,
      'upstream_model', v_model.upstream_model, 'reserved_tokens', v_existing.reserved_tokens::text,
      'reserved_credits', v_existing.reserved_credits::text);
  end if;

  if p_key.key_id is null then return tollgate_refusal(v_id, 'invalid_api_key'); end if;
  if p_key.status = 'revoked' then return tollgate_refusal(v_id, 'api_key_revoked'); end if;
  if p_key.status = 'disabled' then return tollgate_refusal(v_id, 'api_key_disabled'); end if;
  if p_key.expires_at is not null and p_key.expires_at <= tollgate_now() then
    return tollgate_refusal(v_id, 'api_key_expired');
  end if;
  if p_key.account_status = 'suspended' then return tollgate_refusal(v_id, 'account_suspended'); end if;

  if p_key.model_alias is null then return tollgate_refusal(v_id, 'invalid_model'); end if;
  if not p_key.published or (p_key.scope is not null and not (v_alias = any(p_key.scope))) then
    return tollgate_refusal(v_id, 'model_not_allowed');
  end if;
  if not (v_surface = any(p_key.protocols)) then return tollgate_refusal(v_id, 'model_unavailable'); end if;

  -- Plan the draw first; change nothing until the whole estimate is covered.
  select coalesce(sum(tokens), 0), coalesce(sum(take), 0) into v_tokens, v_units
    from tollgate_draw_plan(p_key.account_id, v_alias, v_need, v_rate);
  if v_tokens < v_need then
    v_covered := false;
    if v_priced then
      v_cov_in := least(v_tokens, v_in);
      v_cost := (v_in - v_cov_in)::numeric * v_in_price
              + (v_out - (v_tokens - v_cov_in))::numeric * p_key.output_price + p_key.request_price;
      select available into v_available from credit_balances where account_id = p_key.account_id;
      if v_cost <= coalesce(v_available, 0) then
        v_credit := v_cost::bigint;
        v_covered := true;
      end if;
    end if;
    if not v_covered then
      -- Without a credit price only a package can pay; with one, name what the account relies on.
      if not v_priced or exists (select 1 from entitlements where account_id = p_key.account_id
                 and (expires_at is null or expires_at > tollgate_now())
                 and (aliases is null or v_alias = any(aliases))) then
        return tollgate_refusal(v_id, 'insufficient_tokens');
      end if;
      return tollgate_refusal(v_id, 'insufficient_credits');
    end if;
  end if;

  -- R7 counts the entitlements' pool in their units.
  if v_cover > 0 and v_units > 0 then
    select coalesce(sum(reserved), 0) into v_pool_reserved from entitlements where account_id = p_key.account_id;
    select coalesce(sum(remaining), 0) into v_pool_available
      from tollgate_usable_entitlements(p_key.account_id, v_alias, v_rate);
    if v_pool_reserved > 0
       and (v_pool_available - v_units)::numeric * 100 < v_cover::numeric * (v_pool_reserved + v_units) then
      return tollgate_refusal(v_id, 'insufficient_tokens');
    end if;
  end if;
  if v_cover > 0 and v_credit > 0 then
    select available, reserved into v_pool_available, v_pool_reserved
      from credit_balances where account_id = p_key.account_id;
    if v_pool_reserved > 0
       and (v_pool_available - v_credit)::numeric * 100 < v_cover::numeric * (v_pool_reserved + v_credit) then
      return tollgate_refusal(v_id, 'insufficient_credits');
    end if;
  end if;

  for v_draw in select * from tollgate_draw_plan(p_key.account_id, v_alias, v_need, v_rate) loop
    update entitlements set remaining = remaining - v_draw.take, reserved = reserved + v_draw.take
      where id = v_draw.entitlement_id;
    -- R2b: a weighted leg records the rate it was reserved at; none means one unit per token.
    v_legs := v_legs || (jsonb_build_object('source', 'entitlement', 'entitlementId', v_draw.entitlement_id,
      'amount', v_draw.take::text)
      || case when v_draw.take > v_draw.tokens then jsonb_build_object('rate', (v_draw.take / v_draw.tokens)::text)
              else '{}'::jsonb end);
  end loop;
  if v_credit > 0 then
    update credit_balances set available = available - v_credit, reserved = reserved + v_credit,
      updated_at = now() where account_id = p_key.account_id;
    v_legs := v_legs || jsonb_build_object('source', 'credit', 'amount', v_credit::text,
      'inputPrice', p_key.input_price::text, 'outputPrice', p_key.output_price::text,
      'cacheReadPrice', p_key.cache_read_price::text, 'cacheWritePrice', p_key.cache_write_price::text,
      'cacheWrite1hPrice', p_key.cache_write_1h_price::text, 'requestPrice', p_key.request_price::text);
  end if;

  with reservation as (
    insert into reservations (id, account_id, key_id, alias, surface, status, estimate_input, estimate_output,
                              legs, reserved_tokens, reserved_credits)
    values (v_id, p_key.account_id, p_key.key_id, v_alias, v_surface, 'reserved', v_in, v_out, v_legs,
            v_units, v_credit)
  )
  insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                              reservation_id, cause)
  select p_key.account_id, (leg->>'entitlementId')::uuid, 'reserve', -(leg->>'amount')::bigint,
         (leg->>'amount')::bigint, (leg->>'amount')::bigint, v_id, 'request reservation'
  from jsonb_array_elements(v_legs) as leg;

  return jsonb_build_object('reservation_id', v_id, 'ok', true, 'key_id', p_key.key_id,
    'account_id', p_key.account_id, 'provider_id', p_key.provider_id,
    'upstream_model', p_key.upstream_model, 'reserved_tokens', v_units::text,
    'reserved_credits', v_credit::text);
end
$fn$;

import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code. A later change to these functions
// is a new migration with `create or replace`.
//
// Reservation and settlement run as one server-side call per batch: one round trip, all rows of
// an account changed under one lock, the ledger row written with each balance change. Rules
// (docs/billing/rules.md):
// - A reservation draws from usable entitlements covering the alias, soonest expiry first, then
//   from credit if the alias has a price. It must cover the whole estimate or it is refused.
// - Settlement charges the usage reported, never the estimate; entitlement legs cover input
//   tokens first, then output; the credit leg pays the rest at the prices of reservation time.
//   Usage beyond the reservation is charged from what is left; the rest is written off.
// - Every account's rows are locked through its credit_balances row first (an account mutex), and
//   batches visit accounts in id order, so concurrent batches cannot deadlock.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create function tollgate_lock_account(p_account uuid) returns void language plpgsql as $fn$
    begin
      perform 1 from credit_balances where account_id = p_account for update;
      if not found then
        insert into credit_balances (account_id) values (p_account) on conflict do nothing;
        perform 1 from credit_balances where account_id = p_account for update;
      end if;
    end $fn$;

    create function tollgate_refusal(p_id uuid, p_code text) returns jsonb language sql immutable as $fn$
      select jsonb_build_object('reservation_id', p_id, 'ok', false, 'code', p_code)
    $fn$;

    -- One reservation. Returns {ok:true, ...} or {ok:false, code}.
    create function tollgate_reserve_one(p_item jsonb, p_key record) returns jsonb language plpgsql as $fn$
    declare
      v_id uuid := (p_item->>'reservation_id')::uuid;
      v_alias text := p_item->>'alias';
      v_surface text := p_item->>'surface';
      v_in bigint := (p_item->>'estimate_input')::bigint;
      v_out bigint := (p_item->>'estimate_output')::bigint;
      v_need bigint := v_in + v_out;
      v_existing reservations%rowtype;
      v_model model_aliases%rowtype;
      v_ent record;
      v_ent_ids uuid[] := '{}';
      v_ent_takes bigint[] := '{}';
      v_take bigint;
      v_tokens bigint := 0;
      v_cov_in bigint;
      v_cost numeric;
      v_credit bigint := 0;
      v_available bigint;
      v_legs jsonb := '[]';
      i int;
    begin
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
      if p_key.expires_at is not null and p_key.expires_at <= now() then
        return tollgate_refusal(v_id, 'api_key_expired');
      end if;
      if p_key.account_status = 'suspended' then return tollgate_refusal(v_id, 'account_suspended'); end if;

      if p_key.model_alias is null then return tollgate_refusal(v_id, 'invalid_model'); end if;
      if not p_key.published or (p_key.scope is not null and not (v_alias = any(p_key.scope))) then
        return tollgate_refusal(v_id, 'model_not_allowed');
      end if;
      if not (v_surface = any(p_key.protocols)) then return tollgate_refusal(v_id, 'model_unavailable'); end if;

      -- Plan the draw first; change nothing until the whole estimate is covered.
      for v_ent in
        select id, remaining from entitlements
        where account_id = p_key.account_id and remaining > 0
          and (expires_at is null or expires_at > now())
          and (aliases is null or v_alias = any(aliases))
        order by expires_at asc nulls last, created_at, id
      loop
        exit when v_need = 0;
        v_take := least(v_need, v_ent.remaining);
        v_ent_ids := v_ent_ids || v_ent.id;
        v_ent_takes := v_ent_takes || v_take;
        v_tokens := v_tokens + v_take;
        v_need := v_need - v_take;
      end loop;

      if v_need > 0 then
        if p_key.input_price is not null and p_key.output_price is not null then
          v_cov_in := least(v_tokens, v_in);
          v_cost := (v_in - v_cov_in)::numeric * p_key.input_price
                  + (v_out - (v_tokens - v_cov_in))::numeric * p_key.output_price;
          select available into v_available from credit_balances where account_id = p_key.account_id;
          if v_cost <= coalesce(v_available, 0) then
            v_credit := v_cost::bigint;
            v_need := 0;
          end if;
        end if;
        if v_need > 0 then
          if exists (select 1 from entitlements where account_id = p_key.account_id
                     and (expires_at is null or expires_at > now())
                     and (aliases is null or v_alias = any(aliases))) then
            return tollgate_refusal(v_id, 'insufficient_tokens');
          end if;
          return tollgate_refusal(v_id, 'insufficient_credits');
        end if;
      end if;

      for i in 1 .. coalesce(array_length(v_ent_ids, 1), 0) loop
        update entitlements set remaining = remaining - v_ent_takes[i], reserved = reserved + v_ent_takes[i]
          where id = v_ent_ids[i];
        v_legs := v_legs || jsonb_build_object('source', 'entitlement', 'entitlementId', v_ent_ids[i],
          'amount', v_ent_takes[i]::text);
      end loop;
      if v_credit > 0 then
        update credit_balances set available = available - v_credit, reserved = reserved + v_credit,
          updated_at = now() where account_id = p_key.account_id;
        v_legs := v_legs || jsonb_build_object('source', 'credit', 'amount', v_credit::text,
          'inputPrice', p_key.input_price::text, 'outputPrice', p_key.output_price::text);
      end if;

      with reservation as (
        insert into reservations (id, account_id, key_id, alias, surface, status, estimate_input, estimate_output,
                                  legs, reserved_tokens, reserved_credits)
        values (v_id, p_key.account_id, p_key.key_id, v_alias, v_surface, 'reserved', v_in, v_out, v_legs,
                v_tokens, v_credit)
      )
      insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                  reservation_id, cause)
      select p_key.account_id, (leg->>'entitlementId')::uuid, 'reserve', -(leg->>'amount')::bigint,
             (leg->>'amount')::bigint, (leg->>'amount')::bigint, v_id, 'request reservation'
      from jsonb_array_elements(v_legs) as leg;

      return jsonb_build_object('reservation_id', v_id, 'ok', true, 'key_id', p_key.key_id,
        'account_id', p_key.account_id, 'provider_id', p_key.provider_id,
        'upstream_model', p_key.upstream_model, 'reserved_tokens', v_tokens::text,
        'reserved_credits', v_credit::text);
    end $fn$;

    -- A batch of reservations. Items: {reservation_id, lookup_hash (hex), alias, surface,
    -- estimate_input, estimate_output}. Results come back in the order of the items.
    create function tollgate_reserve(p_items jsonb) returns jsonb language plpgsql as $fn$
    declare
      v_row record;
      v_results jsonb[] := '{}';
      v_locked uuid;
    begin
      -- A crash may forget a reservation (a hold), never money: settle charges even a forgotten one.
      perform set_config('synchronous_commit', 'off', true);
      for v_row in
        select item.value as item, item.ordinality as position, k.id as key_id, k.account_id, k.status,
               k.expires_at, k.scope, a.status as account_status, m.alias as model_alias, m.published,
               m.protocols, m.provider_id, m.upstream_model, m.input_price, m.output_price
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
      end loop;
      return to_jsonb(v_results);
    end $fn$;

    -- Charges p_tokens (input first, then output) from what is usable now: entitlements covering
    -- the alias, then credit at the alias's price. Returns {tokens, credits, written_off_tokens,
    -- written_off_credits}. Used for usage beyond a reservation and for forgotten reservations.
    create function tollgate_charge_available(p_account uuid, p_alias text, p_reservation uuid,
                                              p_in bigint, p_out bigint, p_extra_credits bigint)
    returns jsonb language plpgsql as $fn$
    declare
      v_ent record;
      v_take bigint;
      v_t_in bigint;
      v_rem_in bigint := p_in;
      v_rem_out bigint := p_out;
      v_tokens bigint := 0;
      v_owed numeric := p_extra_credits;
      v_model model_aliases%rowtype;
      v_available bigint;
      v_credits bigint := 0;
      v_off_tokens bigint := 0;
      v_off_credits bigint := 0;
    begin
      if v_rem_in + v_rem_out > 0 then
        for v_ent in
          select id, remaining from entitlements
          where account_id = p_account and remaining > 0
            and (expires_at is null or expires_at > now())
            and (aliases is null or p_alias = any(aliases))
          order by expires_at asc nulls last, created_at, id
        loop
          exit when v_rem_in + v_rem_out = 0;
          v_take := least(v_rem_in + v_rem_out, v_ent.remaining);
          v_t_in := least(v_take, v_rem_in);
          v_rem_in := v_rem_in - v_t_in;
          v_rem_out := v_rem_out - (v_take - v_t_in);
          update entitlements set remaining = remaining - v_take where id = v_ent.id;
          insert into ledger_entries (account_id, entitlement_id, kind, available_delta, amount, reservation_id, cause)
          values (p_account, v_ent.id, 'settle', -v_take, v_take, p_reservation, 'usage beyond reservation');
          v_tokens := v_tokens + v_take;
        end loop;
      end if;

      if v_rem_in + v_rem_out > 0 then
        select * into v_model from model_aliases where alias = p_alias;
        if found and v_model.input_price is not null and v_model.output_price is not null then
          v_owed := v_owed + v_rem_in::numeric * v_model.input_price + v_rem_out::numeric * v_model.output_price;
        else
          v_off_tokens := v_rem_in + v_rem_out;
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
    end $fn$;

    -- Returns every leg of a reservation to its balance (release), or charges usage from the
    -- legs (settle), or marks it held. Legs must still be reserved.
    create function tollgate_settle_legs(p_res reservations, p_in bigint, p_out bigint)
    returns jsonb language plpgsql as $fn$
    declare
      v_leg jsonb;
      v_amount bigint;
      v_take bigint;
      v_t_in bigint;
      v_rem_in bigint := p_in;
      v_rem_out bigint := p_out;
      v_cost numeric;
      v_tokens bigint := 0;
      v_credits bigint := 0;
      v_extra_credits bigint := 0;
      v_credit_leg boolean := false;
    begin
      for v_leg in select * from jsonb_array_elements(p_res.legs) loop
        v_amount := (v_leg->>'amount')::bigint;
        if v_leg->>'source' = 'entitlement' then
          v_take := least(v_amount, v_rem_in + v_rem_out);
          v_t_in := least(v_take, v_rem_in);
          v_rem_in := v_rem_in - v_t_in;
          v_rem_out := v_rem_out - (v_take - v_t_in);
          update entitlements set reserved = reserved - v_amount, remaining = remaining + (v_amount - v_take)
            where id = (v_leg->>'entitlementId')::uuid;
          insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                      reservation_id, cause)
          values (p_res.account_id, (v_leg->>'entitlementId')::uuid, 'settle', v_amount - v_take, -v_amount, v_take,
                  p_res.id, 'usage reported by the model');
          v_tokens := v_tokens + v_take;
        else
          v_credit_leg := true;
          v_cost := v_rem_in::numeric * (v_leg->>'inputPrice')::bigint
                  + v_rem_out::numeric * (v_leg->>'outputPrice')::bigint;
          v_take := least(v_cost, v_amount)::bigint;
          update credit_balances set reserved = reserved - v_amount, available = available + (v_amount - v_take),
            updated_at = now() where account_id = p_res.account_id;
          insert into ledger_entries (account_id, entitlement_id, kind, available_delta, reserved_delta, amount,
                                      reservation_id, cause)
          values (p_res.account_id, null, 'settle', v_amount - v_take, -v_amount, v_take, p_res.id,
                  'usage reported by the model');
          v_credits := v_credits + v_take;
          v_extra_credits := least(v_cost - v_take, 9223372036854775807)::bigint;
          v_rem_in := 0;
          v_rem_out := 0;
        end if;
      end loop;
      return jsonb_build_object('tokens', v_tokens, 'credits', v_credits, 'rem_in', v_rem_in, 'rem_out', v_rem_out,
        'extra_credits', v_extra_credits);
    end $fn$;

    create function tollgate_release_legs(p_res reservations, p_kind text, p_cause text)
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
    end $fn$;

    create function tollgate_finish_result(p_res reservations, p_replay boolean) returns jsonb
    language sql stable as $fn$
      select jsonb_build_object('reservation_id', p_res.id, 'status', p_res.status, 'replay', p_replay,
        'charged_tokens', p_res.charged_tokens::text, 'charged_credits', p_res.charged_credits::text,
        'written_off_tokens', p_res.written_off_tokens::text,
        'written_off_credits', p_res.written_off_credits::text)
    $fn$;

    -- One settle, release or hold. Idempotent by reservation id: a repeat changes nothing.
    create function tollgate_finish_one(p_item jsonb) returns jsonb language plpgsql as $fn$
    declare
      v_id uuid := (p_item->>'reservation_id')::uuid;
      v_action text := p_item->>'action';
      v_res reservations%rowtype;
      v_in bigint := coalesce((p_item->>'input_tokens')::bigint, 0);
      v_out bigint := coalesce((p_item->>'output_tokens')::bigint, 0);
      v_legs jsonb;
      v_more jsonb;
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
          v_legs := tollgate_settle_legs(v_res, v_in, v_out);
        else
          v_legs := jsonb_build_object('tokens', 0, 'credits', 0, 'rem_in', v_in, 'rem_out', v_out, 'extra_credits', 0);
        end if;
        if (v_legs->>'rem_in')::bigint + (v_legs->>'rem_out')::bigint + (v_legs->>'extra_credits')::bigint > 0 then
          v_more := tollgate_charge_available(v_res.account_id, v_res.alias, v_id, (v_legs->>'rem_in')::bigint,
            (v_legs->>'rem_out')::bigint, (v_legs->>'extra_credits')::bigint);
        else
          v_more := '{"tokens": 0, "credits": 0, "written_off_tokens": 0, "written_off_credits": 0}';
        end if;
        update reservations set status = 'settled', outcome = coalesce(p_item->>'outcome', 'ok'),
          http_status = coalesce((p_item->>'http_status')::int, http_status), finished_at = now(),
          input_tokens = v_in, output_tokens = v_out,
          charged_tokens = (v_legs->>'tokens')::bigint + (v_more->>'tokens')::bigint,
          charged_credits = (v_legs->>'credits')::bigint + (v_more->>'credits')::bigint,
          written_off_tokens = (v_more->>'written_off_tokens')::bigint,
          written_off_credits = (v_more->>'written_off_credits')::bigint
          where id = v_id returning * into v_res;
      end if;
      return tollgate_finish_result(v_res, false);
    end $fn$;

    -- A batch of finishes, durable (settlements are money). Results in item order.
    create function tollgate_finish(p_items jsonb) returns jsonb language plpgsql as $fn$
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
    end $fn$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop function tollgate_finish(jsonb);
    drop function tollgate_finish_one(jsonb);
    drop function tollgate_finish_result(reservations, boolean);
    drop function tollgate_release_legs(reservations, text, text);
    drop function tollgate_settle_legs(reservations, bigint, bigint);
    drop function tollgate_charge_available(uuid, text, uuid, bigint, bigint, bigint);
    drop function tollgate_reserve(jsonb);
    drop function tollgate_reserve_one(jsonb, record);
    drop function tollgate_refusal(uuid, text);
    drop function tollgate_lock_account(uuid);
  `.execute(db);
}

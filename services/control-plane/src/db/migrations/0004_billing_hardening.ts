import { type Kysely, sql } from 'kysely';
import * as billingFunctions from './0003_billing_functions.ts';

// Frozen in time: migrations never import application code.
//
// One definition of each money rule (docs/billing/rules.md):
// - tollgate_entitlement_usable: the "usable entitlement" rule (tokens left, not expired, covers
//   the alias; a null alias means any), written once; the repository's listings call it too.
// - tollgate_usable_entitlements: which entitlements a call of an alias may draw from, in the
//   order it draws (soonest expiry first).
// - tollgate_draw_plan: how much each of them gives towards a need. Used by the reservation and by
//   the charge of usage beyond a reservation, which used to repeat the loop.
// - tollgate_reserve_one: an alias without a credit price can only be paid from a package, so a
//   shortfall there is insufficient_tokens even when the account holds no entitlement at all.
//   And a bound on what an account runs past its balance in flight: while reservations are open
//   in a pool (credit, or the account's entitlement tokens), a new one must leave `cover_percent`
//   of everything then reserved in that pool unreserved. Usage beyond an estimate is charged from
//   that cover instead of being written off; one call alone is always admitted.

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- A plain SQL expression, so Postgres inlines it into the queries that use it.
    create function tollgate_entitlement_usable(p_remaining bigint, p_expires_at timestamptz,
                                                p_aliases text[], p_alias text)
    returns boolean language sql stable as $fn$
      select p_remaining > 0 and (p_expires_at is null or p_expires_at > now())
        and (p_alias is null or p_aliases is null or p_alias = any(p_aliases))
    $fn$;

    create function tollgate_usable_entitlements(p_account uuid, p_alias text)
    returns table (id uuid, remaining bigint, draw_order bigint) language sql stable as $fn$
      select e.id, e.remaining,
             row_number() over (order by e.expires_at asc nulls last, e.created_at, e.id)
      from entitlements e
      where e.account_id = p_account and tollgate_entitlement_usable(e.remaining, e.expires_at, e.aliases, p_alias)
    $fn$;

    -- Each usable entitlement's share of p_need, in draw order; nothing is changed here.
    create function tollgate_draw_plan(p_account uuid, p_alias text, p_need bigint)
    returns table (entitlement_id uuid, take bigint) language sql stable as $fn$
      select id, take from (
        select u.id, u.draw_order,
               least(u.remaining, p_need - coalesce(sum(u.remaining) over (order by u.draw_order
                 rows between unbounded preceding and 1 preceding), 0)) as take
        from tollgate_usable_entitlements(p_account, p_alias) u
      ) plan
      where take > 0
      order by draw_order
    $fn$;

    create or replace function tollgate_reserve_one(p_item jsonb, p_key record) returns jsonb language plpgsql as $fn$
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
      v_tokens bigint := 0;
      v_cov_in bigint;
      v_cost numeric;
      v_credit bigint := 0;
      v_available bigint;
      v_priced boolean := p_key.input_price is not null and p_key.output_price is not null;
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
      select coalesce(sum(take), 0) into v_tokens from tollgate_draw_plan(p_key.account_id, v_alias, v_need);
      if v_tokens < v_need then
        v_covered := false;
        if v_priced then
          v_cov_in := least(v_tokens, v_in);
          v_cost := (v_in - v_cov_in)::numeric * p_key.input_price
                  + (v_out - (v_tokens - v_cov_in))::numeric * p_key.output_price;
          select available into v_available from credit_balances where account_id = p_key.account_id;
          if v_cost <= coalesce(v_available, 0) then
            v_credit := v_cost::bigint;
            v_covered := true;
          end if;
        end if;
        if not v_covered then
          -- Without a credit price only a package can pay; with one, name what the account relies on.
          if not v_priced or exists (select 1 from entitlements where account_id = p_key.account_id
                     and (expires_at is null or expires_at > now())
                     and (aliases is null or v_alias = any(aliases))) then
            return tollgate_refusal(v_id, 'insufficient_tokens');
          end if;
          return tollgate_refusal(v_id, 'insufficient_credits');
        end if;
      end if;

      if v_cover > 0 and v_tokens > 0 then
        select coalesce(sum(reserved), 0) into v_pool_reserved from entitlements where account_id = p_key.account_id;
        select coalesce(sum(remaining), 0) into v_pool_available
          from tollgate_usable_entitlements(p_key.account_id, v_alias);
        if v_pool_reserved > 0
           and (v_pool_available - v_tokens)::numeric * 100 < v_cover::numeric * (v_pool_reserved + v_tokens) then
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

      for v_draw in select * from tollgate_draw_plan(p_key.account_id, v_alias, v_need) loop
        update entitlements set remaining = remaining - v_draw.take, reserved = reserved + v_draw.take
          where id = v_draw.entitlement_id;
        v_legs := v_legs || jsonb_build_object('source', 'entitlement', 'entitlementId', v_draw.entitlement_id,
          'amount', v_draw.take::text);
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

    create or replace function tollgate_charge_available(p_account uuid, p_alias text, p_reservation uuid,
                                                         p_in bigint, p_out bigint, p_extra_credits bigint)
    returns jsonb language plpgsql as $fn$
    declare
      v_draw record;
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
        for v_draw in select * from tollgate_draw_plan(p_account, p_alias, v_rem_in + v_rem_out) loop
          v_t_in := least(v_draw.take, v_rem_in);
          v_rem_in := v_rem_in - v_t_in;
          v_rem_out := v_rem_out - (v_draw.take - v_t_in);
          update entitlements set remaining = remaining - v_draw.take where id = v_draw.entitlement_id;
          insert into ledger_entries (account_id, entitlement_id, kind, available_delta, amount, reservation_id, cause)
          values (p_account, v_draw.entitlement_id, 'settle', -v_draw.take, v_draw.take, p_reservation,
                  'usage beyond reservation');
          v_tokens := v_tokens + v_draw.take;
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
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Back to the definitions of 0003, then without the helpers they no longer use.
  await billingFunctions.down(db);
  await billingFunctions.up(db);
  await sql`
    drop function tollgate_draw_plan(uuid, text, bigint);
    drop function tollgate_usable_entitlements(uuid, text);
    drop function tollgate_entitlement_usable(bigint, timestamptz, text[], text);
  `.execute(db);
}

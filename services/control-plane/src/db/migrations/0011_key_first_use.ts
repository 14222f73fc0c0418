import { type Kysely, sql } from 'kysely';

// Frozen in time: migrations never import application code.
//
// One key's activity walks the account's index (account_id, created_at desc, id desc, key_id)
// and checks the key in it. For a key with few or no calls among many, that walk read the whole
// account (84 ms with a million calls). Every call of a key lies between the key's first use and
// an hour after its last recorded use, so the walk can start and stop there, and a key never
// used need not walk at all. Both are recorded by the functions that write reservation rows,
// under the account's lock like every other change they make; the last use only once it is an
// hour old, so in steady state the reservation batch reads two more columns of the key it already
// joins and writes nothing more. An index on key_id would bound every walk but costs every call
// (measured: reservations 15 % slower, settlements 20 %).

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table api_keys add column first_used_at timestamptz, add column last_used_at timestamptz;
    -- Keys used before this migration: one pass over the reservations.
    update api_keys k set first_used_at = f.first, last_used_at = f.last
    from (select key_id, min(created_at) as first, max(created_at) as last from reservations group by key_id) f
    where f.key_id = k.id;

    create or replace function tollgate_reserve(p_items jsonb) returns jsonb language plpgsql as $fn$
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
    end $fn$;

    -- A finish of a reservation never written (forgotten by a crash, or released before its
    -- reserve arrived) writes its row with the gateway's time, occurred_at. Any other finish comes
    -- after its reservation, so this changes nothing then (but for calls over an hour long).
    create or replace function tollgate_finish_unflushed(p_items jsonb) returns jsonb language plpgsql as $fn$
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
    end $fn$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function tollgate_finish_unflushed(p_items jsonb) returns jsonb language plpgsql as $fn$
    begin
      perform set_config('synchronous_commit', 'off', true);
      return tollgate_finish(p_items);
    end $fn$;
    create or replace function tollgate_reserve(p_items jsonb) returns jsonb language plpgsql as $fn$
    declare
      v_row record;
      v_results jsonb[] := '{}';
      v_locked uuid;
    begin
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
    alter table api_keys drop column first_used_at, drop column last_used_at;
  `.execute(db);
}

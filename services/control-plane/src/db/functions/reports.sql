-- Reports.
-- The functions in force: see README.md before changing one.

-- The timezone an account's usage days are counted in (docs/decisions/usage-rollup.md): its own
-- (spend_cap_accounts) when Postgres knows the name, else UTC, so a name only the control plane's
-- timezone data knows never stops the rollup. Cheap, unlike a look-up in pg_timezone_names.
create or replace function tollgate_day_zone(zone text)
  returns text language plpgsql stable as $fn$
begin
  if zone is null then
    return 'UTC';
  end if;
  perform now() at time zone zone;
  return zone;
exception when others then
  return 'UTC';
end
$fn$;

-- Trigger functions.
-- The functions in force: see README.md before changing one.

-- The audit log is append-only.
create or replace function tollgate_audit_append_only()
  returns trigger language plpgsql as $fn$
begin
  raise exception 'audit_log is append-only';
end
$fn$;

-- R21: a key's or account's state carries a version, so Redis never takes an older read.
create or replace function tollgate_bump_state_version()
  returns trigger language plpgsql as $fn$
begin
  new.state_version := nextval('tollgate_hot_version');
  return new;
end
$fn$;

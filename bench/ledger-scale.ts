/**
 * Reports at ledger scale (docs/development/benchmarks.md): seeds millions of reservations with
 * their ledger rows into a database of its own, then times `GET /api/v1/me/activity` and
 * `GET /api/v1/me/usage/summary` of a heavy and a light account through a real control plane
 * process, and the hot path (reserve + settle over the internal billing API) on the empty and on
 * the seeded database.
 * Usage: `pnpm bench:scale` (or `node bench/ledger-scale.ts`).
 *
 * Environment: BENCH_DATABASE_URL (admin URL; default postgres://postgres@127.0.0.1:5432/postgres),
 * SCALE_ROWS (reservations to seed, default 10,000,000), SCALE_HEAVY_SHARE (share of the rows that
 * belong to the heavy account, default 0.1), SCALE_CALLS (timed calls per case, default 20),
 * KEEP_DB=1 (keep the database; its name is printed).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { apiKeyDigest } from '@tollgate/schemas';
import {
  findFreePort,
  ROOT,
  removeRedisNamespace,
  run,
  type Service,
  startService,
  waitHealthy,
} from '@tollgate/test-harness';
import pg from 'pg';
import { Pool } from 'undici';
import { internalApiClient } from './src/internal-api.ts';

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.SCALE_ROWS ?? 10_000_000);
const HEAVY_SHARE = Number(process.env.SCALE_HEAVY_SHARE ?? 0.1);
const CALLS = Number(process.env.SCALE_CALLS ?? 20);
const KEEP = process.env.KEEP_DB === '1';
const GOAL_MS = 50;
const FILLER_ACCOUNTS = 2000;
const FILLER_KEYS = 3;
const HEAVY_KEYS = 8;
const CHUNK = 1_000_000;
const HOT_CALLS = 300;
const PASSWORD = 'benchmark password';

const work = mkdtempSync(path.join(tmpdir(), 'tollgate-scale-bench-'));
const databaseName = `tollgate_scale_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${databaseName}`;
const databaseUrl = url.toString();

async function withClient<T>(connectionString: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * fraction) - 1)] ?? Number.NaN;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Account {
  email: string;
  accountId: string;
  keys: Array<{ keyId: string; digest: string }>;
}

async function main() {
  await withClient(adminUrl, (client) => client.query(`create database "${databaseName}"`));
  const ports = { public: await findFreePort(), internal: await findFreePort() };
  const env: Record<string, string> = {
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    KEY_PEPPER: randomBytes(32).toString('hex'),
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    DATABASE_URL: databaseUrl,
    CATALOG_FILE: path.join(ROOT, 'deploy/catalog.example.yaml'),
    CONTROL_PLANE_PORT: String(ports.public),
    CONTROL_PLANE_HOST: '127.0.0.1',
    CONTROL_PLANE_INTERNAL_PORT: String(ports.internal),
    LOG_LEVEL: 'warn',
    // The production shape: reservations answered by the hot tier (Redis), written to Postgres.
    REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: `tollgate-scale-bench:${randomBytes(4).toString('hex')}:`,
  };
  const cli = (...args: string[]) =>
    run(process.execPath, ['bin/tollgate-admin.ts', ...args], {
      cwd: path.join(ROOT, 'services/control-plane'),
      env,
    });
  let controlPlane: Service | null = null;
  const startControlPlane = async () => {
    controlPlane = startService('control-plane', 'services/control-plane', env, work);
    await waitHealthy(`http://127.0.0.1:${ports.public}/api/v1/health`, 60_000, controlPlane);
  };
  const stopControlPlane = async () => {
    await controlPlane?.stop();
    controlPlane = null;
  };
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  try {
    await cli('migrate');
    const createAccount = async (email: string, keys: number): Promise<Account> => {
      const { accountId } = JSON.parse(await cli('create-account', email, '--password', PASSWORD)) as {
        accountId: string;
      };
      await cli('grant-credit', email, '1000000000000000');
      const created: Account['keys'] = [];
      for (let index = 0; index < keys; index += 1) {
        const { keyId, secret } = JSON.parse(await cli('create-key', email)) as {
          keyId: string;
          secret: string;
        };
        created.push({ keyId, digest: apiKeyDigest(secret) });
      }
      return { email, accountId, keys: created };
    };
    // Three more keys than the seed uses: one with a single call 90 days ago; one with a call 90
    // days ago and one now (without the key's own index its page read every call of the account in
    // between); one never used.
    const heavy = await createAccount('heavy@example.test', HEAVY_KEYS + 3);
    const light = await createAccount('light@example.test', 2);
    const hot = await createAccount('hot@example.test', 1);

    await startControlPlane();
    const hotEmpty = await hotPath(ports.internal, env.INTERNAL_TOKEN_SECRET!, hot);
    say(`Load average (1 min) at the start: ${loadavg()[0]!.toFixed(1)}`);
    await stopControlPlane();

    const seedMs = await seed(heavy, light, hot);
    say(`Seeded ${ROWS.toLocaleString('en')} reservations (+ ledger rows) in ${seconds(seedMs)}`);
    await withClient(databaseUrl, async (db) => {
      // The sparse keys' calls: released, so no ledger rows and no balance change.
      await db.query(
        `insert into reservations (id, account_id, key_id, alias, surface, status, created_at, finished_at)
         select gen_random_uuid(), $1, key_id, 'gpt-mock', 'chat_completions', 'released', at, at
         from (values ($2::uuid, now() - interval '90 days'), ($3::uuid, now() - interval '90 days'),
                      ($3::uuid, now() - interval '5 minutes')) as calls(key_id, at)`,
        [heavy.accountId, heavy.keys[HEAVY_KEYS]!.keyId, heavy.keys[HEAVY_KEYS + 1]!.keyId],
      );
      // What the billing functions record of each key's first reservation (and migration 0011's
      // pass on an upgrade does): timed, as the cost of that upgrade.
      const firstUseStarted = performance.now();
      await db.query(`
        update api_keys k set first_used_at = f.first, last_used_at = f.last
        from (select key_id, min(created_at) as first, max(created_at) as last from reservations group by key_id) f
        where f.key_id = k.id`);
      say(
        `Keys' first use from ${ROWS.toLocaleString('en')} reservations (migration 0011's pass): ${seconds(performance.now() - firstUseStarted)}`,
      );
    });
    const sizes = await withClient(
      databaseUrl,
      async (client) =>
        (
          await client.query<{ reservations: string; ledger: string; total: string }>(`
            select pg_size_pretty(pg_total_relation_size('reservations')) as reservations,
                   pg_size_pretty(pg_total_relation_size('ledger_entries')) as ledger,
                   pg_size_pretty(pg_database_size(current_database())) as total`)
        ).rows[0]!,
    );
    say(
      `Sizes with indexes: reservations ${sizes.reservations}, ledger_entries ${sizes.ledger}, database ${sizes.total}`,
    );

    // The control plane's first rollup pass catches up with the seeded history.
    let started = performance.now();
    await startControlPlane();
    await withClient(databaseUrl, async (client) => {
      for (let attempt = 0; attempt < 1200; attempt += 1) {
        const { rows } = await client.query(`select 1 from usage_rollup_state where watermark > '-infinity'`);
        if (rows.length > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      throw new Error('the usage rollup did not catch up within 5 minutes');
    });
    say(
      `First usage rollup pass over the seeded history (control plane start included): ${seconds(performance.now() - started)}`,
    );

    const base = `http://127.0.0.1:${ports.public}/api/v1`;
    const pool = new Pool(`http://127.0.0.1:${ports.public}`, { connections: 4 });
    const signIn = async (email: string) => {
      const response = await fetch(`${base}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      });
      if (response.status !== 200)
        throw new Error(`login ${email}: ${response.status} ${await response.text()}`);
      return response.headers
        .getSetCookie()
        .map((cookie) => cookie.split(';')[0])
        .join('; ');
    };
    const get = async (cookie: string, pathName: string) => {
      const response = await pool.request({ method: 'GET', path: `/api/v1${pathName}`, headers: { cookie } });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`${pathName}: ${response.statusCode} ${text}`);
      return JSON.parse(text) as { data: { nextCursor?: string | null; items?: unknown[] } & unknown[] };
    };
    const time = async (cookie: string, pathName: string) => {
      for (let index = 0; index < 3; index += 1) await get(cookie, pathName);
      const samples: number[] = [];
      for (let index = 0; index < CALLS; index += 1) {
        const start = performance.now();
        await get(cookie, pathName);
        samples.push(performance.now() - start);
      }
      return samples.sort((a, b) => a - b);
    };
    /** A cursor `pages` pages deep (100 rows a page), found by walking there. */
    const deepCursor = async (cookie: string, query: string, pages: number) => {
      let cursor: string | null | undefined = null;
      for (let page = 0; page < pages; page += 1) {
        const body = await get(cookie, `/me/activity?limit=100${query}${cursor ? `&cursor=${cursor}` : ''}`);
        cursor = body.data.nextCursor;
        if (!cursor) break;
      }
      return cursor;
    };
    const today = new Date();
    const day = (offset: number) =>
      new Date(today.getTime() - offset * 86_400_000).toISOString().slice(0, 10);

    const table: string[] = ['| account | call | p50 ms | p99 ms |', '|---|---|---|---|'];
    let worst = 0;
    for (const [label, account] of [
      ['heavy', heavy],
      ['light', light],
    ] as const) {
      const cookie = await signIn(account.email);
      const rareKey = account.keys[account === heavy ? HEAVY_KEYS - 1 : 1]!.keyId;
      const oldKey = account.keys[HEAVY_KEYS]?.keyId;
      const spanKey = account.keys[HEAVY_KEYS + 1]?.keyId;
      const unusedKey = account.keys[HEAVY_KEYS + 2]?.keyId;
      const rows = await withClient(
        databaseUrl,
        async (client) =>
          (
            await client.query<{ n: string }>(
              'select count(*)::text as n from reservations where account_id = $1',
              [account.accountId],
            )
          ).rows[0]!.n,
      );
      say(`${label} account: ${Number(rows).toLocaleString('en')} reservations`);
      const deep = await deepCursor(cookie, '', 50);
      const deepKey = await deepCursor(cookie, `&keyId=${rareKey}`, 20);
      const cases: Array<[string, string]> = [
        ['activity, first page (50)', '/me/activity'],
        ['activity, first page (200)', '/me/activity?limit=200'],
        ['activity, 50 pages deep (cursor)', `/me/activity?cursor=${deep ?? ''}`],
        ['activity, one key (its rarest), first page', `/me/activity?keyId=${rareKey}`],
        ['activity, one key, 20 pages deep', `/me/activity?keyId=${rareKey}&cursor=${deepKey ?? ''}`],
        ...(oldKey && spanKey && unusedKey
          ? ([
              ['activity, a key with one call 90 days ago', `/me/activity?keyId=${oldKey}`],
              ['activity, a key with two calls 90 days apart', `/me/activity?keyId=${spanKey}`],
              ['activity, a key never used', `/me/activity?keyId=${unusedKey}`],
            ] as Array<[string, string]>)
          : []),
        ['usage summary, default (30 days)', '/me/usage/summary'],
        ['usage summary, 90 days', `/me/usage/summary?from=${day(89)}&to=${day(0)}`],
        ['usage summary, 366 days', `/me/usage/summary?from=${day(365)}&to=${day(0)}`],
      ];
      for (const [name, pathName] of cases) {
        const samples = await time(cookie, pathName);
        const p99 = percentile(samples, 0.99);
        worst = Math.max(worst, p99);
        table.push(`| ${label} | ${name} | ${percentile(samples, 0.5).toFixed(1)} | ${p99.toFixed(1)} |`);
      }
    }
    await pool.close();

    const hotSeeded = await hotPath(ports.internal, env.INTERNAL_TOKEN_SECRET!, hot);
    say(
      `Load average (1 min) at the end: ${loadavg()[0]!.toFixed(1)} on this machine's cores, shared with other work`,
    );
    started = performance.now();
    const equal = await withClient(databaseUrl, async (client) => {
      // The rollup's answer against the live aggregate, for the heavy account over 366 days.
      const { rows } = await client.query<{ differences: string }>(
        `with live as (
           select (created_at at time zone 'UTC')::date as day, alias, count(*) as requests,
                  coalesce(sum(input_tokens), 0) as input_tokens, coalesce(sum(output_tokens), 0) as output_tokens,
                  sum(charged_tokens) as charged_tokens, sum(charged_credits) as charged_credits
           from reservations where account_id = $1 and status = 'settled' group by 1, 2),
         rolled as (
           select day, alias, sum(requests) as requests, sum(input_tokens) as input_tokens,
                  sum(output_tokens) as output_tokens, sum(charged_tokens) as charged_tokens,
                  sum(charged_credits) as charged_credits
           from (select day, alias, requests, input_tokens, output_tokens, charged_tokens, charged_credits
                 from usage_daily where account_id = $1
                 union all
                 select (created_at at time zone 'UTC')::date, alias, 1, coalesce(input_tokens, 0),
                        coalesce(output_tokens, 0), charged_tokens, charged_credits
                 from reservations
                 where account_id = $1 and status = 'settled'
                   and finished_at >= (select watermark from usage_rollup_state)) parts
           group by 1, 2)
         select count(*)::text as differences from (
           (select * from live except select * from rolled) union all (select * from rolled except select * from live)) d`,
        [heavy.accountId],
      );
      return rows[0]!.differences === '0';
    });
    say(
      `Rollup + live rows equal the live aggregate for the heavy account: ${equal} (${seconds(performance.now() - started)})`,
    );

    console.log(
      [
        '',
        `Reports with ${ROWS.toLocaleString('en')} reservations (heavy account ${HEAVY_SHARE * 100}% of them; ${CALLS} calls each after 3 warm-up calls; control plane as its own process)`,
        '',
        ...lines.map((line) => `- ${line}`),
        '',
        ...table,
        '',
        `${worst < GOAL_MS ? 'PASS' : 'FAIL'}: worst p99 ${worst.toFixed(1)} ms (goal < ${GOAL_MS} ms)`,
        '',
        `Hot path, one reserve then one settle at a time (${HOT_CALLS} calls, internal API over HTTP):`,
        '',
        '| database | reserve p50 ms | reserve p99 ms | settle p50 ms | settle p99 ms |',
        '|---|---|---|---|---|',
        `| empty | ${hotEmpty.map((value) => value.toFixed(2)).join(' | ')} |`,
        `| seeded | ${hotSeeded.map((value) => value.toFixed(2)).join(' | ')} |`,
        '',
      ].join('\n'),
    );
  } finally {
    await stopControlPlane();
    if (KEEP) console.error(`Kept database ${databaseName}`);
    else {
      await withClient(adminUrl, (client) =>
        client.query(`drop database if exists "${databaseName}" with (force)`),
      );
      await removeRedisNamespace(env.REDIS_URL!, env.REDIS_KEY_PREFIX!);
    }
    rmSync(work, { recursive: true, force: true });
  }
}

/** Reserve + settle one at a time for the hot account: [reserve p50, p99, settle p50, p99] in ms. */
async function hotPath(internalPort: number, secret: string, account: Account): Promise<number[]> {
  const client = await internalApiClient(internalPort, secret, 1);
  const call = async (pathName: string, body: unknown) => {
    const answer = await client.call(pathName, body);
    if (answer.results[0]?.ok === false) throw new Error(`${pathName}: ${JSON.stringify(answer)}`);
  };
  const key = account.keys[0]!;
  const reserve: number[] = [];
  const settle: number[] = [];
  for (let index = 0; index < HOT_CALLS + 20; index += 1) {
    const reservationId = randomUUID();
    let started = performance.now();
    await call('/reservations', {
      items: [
        {
          reservationId,
          keyDigest: key.digest,
          keyId: key.keyId,
          accountId: account.accountId,
          alias: 'gpt-mock',
          surface: 'chat_completions',
          estimate: { inputTokens: '200', outputTokens: '500' },
        },
      ],
    });
    const reserved = performance.now() - started;
    started = performance.now();
    await call('/reservations/finish', {
      items: [
        {
          action: 'settle',
          reservationId,
          keyId: key.keyId,
          accountId: account.accountId,
          alias: 'gpt-mock',
          surface: 'chat_completions',
          httpStatus: 200,
          occurredAt: new Date().toISOString(),
          outcome: 'ok',
          usage: { inputTokens: '180', outputTokens: '120' },
        },
      ],
    });
    // The first 20 warm up.
    if (index >= 20) {
      reserve.push(reserved);
      settle.push(performance.now() - started);
    }
  }
  await client.close();
  reserve.sort((a, b) => a - b);
  settle.sort((a, b) => a - b);
  return [
    percentile(reserve, 0.5),
    percentile(reserve, 0.99),
    percentile(settle, 0.5),
    percentile(settle, 0.99),
  ];
}

/**
 * Seeds ROWS reservations server-side, in time order over the last 90 days as a live system writes
 * them, into the tables with every index the migrations define: the heavy account takes
 * HEAVY_SHARE of them over its keys (the last key one in a thousand), the light account one in 100,000, the
 * rest spread over FILLER_ACCOUNTS accounts of FILLER_KEYS keys. 95% settled, the rest released,
 * 1% of the last day's held. Each has the ledger rows the billing functions write (reserve, then
 * settle, release or hold, all on credit), and each account a grant that covers it, so balances
 * and ledger agree. Returns the milliseconds taken.
 */
async function seed(heavy: Account, light: Account, hot: Account): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    const started = performance.now();
    await client.query(
      `insert into accounts (id, email, password_hash)
       select md5('filler-account-' || n)::uuid, 'filler-' || n || '@example.test', 'x'
       from generate_series(1, ${FILLER_ACCOUNTS}) n`,
    );
    const heavyKeys = `array[${heavy.keys
      .slice(0, HEAVY_KEYS)
      .map((key) => `'${key.keyId}'::uuid`)
      .join(', ')}]`;
    const lightKeys = `array[${light.keys.map((key) => `'${key.keyId}'::uuid`).join(', ')}]`;
    const heavyEvery = Math.max(1, Math.round(1 / HEAVY_SHARE));
    for (let from = 1; from <= ROWS; from += CHUNK) {
      const to = Math.min(ROWS, from + CHUNK - 1);
      const chunkStarted = performance.now();
      await client.query(`
        with spec as (
          select n,
                 now() - interval '90 days' + (interval '90 days' - interval '10 minutes') * (n::float8 / ${ROWS})
                   as created_at,
                 case when n % ${heavyEvery} = 0 then 'heavy' when n % 100000 = 1 then 'light' else 'filler' end as who,
                 (n * 7919) % ${FILLER_ACCOUNTS} + 1 as filler,
                 random() as r, random() as r2, random() as r3
          from generate_series(${from}::bigint, ${to}::bigint) n
        ),
        shaped as (
          select gen_random_uuid() as id,
                 case who when 'heavy' then '${heavy.accountId}'::uuid when 'light' then '${light.accountId}'::uuid
                   else md5('filler-account-' || filler)::uuid end as account_id,
                 case who when 'heavy' then (${heavyKeys})[case when r2 < 0.001 then ${HEAVY_KEYS}
                   else 1 + floor(power(r2, 3) * ${HEAVY_KEYS - 1})::int end]
                   when 'light' then (${lightKeys})[1 + floor(r2 * 2)::int]
                   else md5('filler-key-' || filler || '-' || floor(r2 * ${FILLER_KEYS}))::uuid end as key_id,
                 (array['gpt-mock', 'claude-mock', 'gpt-mock-packages-only'])[1 + floor(r3 * r3 * 3)::int]
                   as alias,
                 case when r < 0.01 and created_at > now() - interval '20 hours' then 'held'
                   when r < 0.05 then 'released' else 'settled' end as status,
                 created_at,
                 created_at + make_interval(secs => 0.3 + r2 * 20) as finished_at,
                 20 + floor(r3 * 180)::bigint as input_tokens,
                 10 + floor(r2 * 490)::bigint as output_tokens
          from spec
        ),
        inserted as (
          insert into reservations (id, account_id, key_id, alias, surface, status, estimate_input, estimate_output,
                                    legs, reserved_credits, input_tokens, output_tokens, charged_credits, outcome,
                                    http_status, created_at, finished_at, hold_reason)
          select id, account_id, key_id, alias, 'chat_completions', status, 200, 500,
                 '[{"source": "credit", "amount": "4400", "inputPrice": "2", "outputPrice": "8"}]', 4400,
                 case when status = 'settled' then input_tokens end, case when status = 'settled' then output_tokens end,
                 case when status = 'settled' then input_tokens * 2 + output_tokens * 8 else 0 end,
                 case status when 'settled' then 'ok' when 'released' then 'upstream_unavailable' else 'client_disconnected' end,
                 case status when 'settled' then 200 when 'released' then 502 else null end,
                 created_at, finished_at, case when status = 'held' then 'client_disconnected' end
          from shaped
          returning id, account_id, status, charged_credits, hold_reason, created_at, finished_at
        )
        insert into ledger_entries (account_id, kind, available_delta, reserved_delta, amount, reservation_id, cause,
                                    created_at)
        select i.account_id, l.kind, l.available_delta, l.reserved_delta, l.amount, i.id, l.cause, l.created_at
        from inserted i cross join lateral (values
          ('reserve', -4400::bigint, 4400::bigint, 4400::bigint, 'request reservation', i.created_at),
          (case i.status when 'settled' then 'settle' when 'released' then 'release' else 'hold' end,
           case i.status when 'settled' then 4400 - i.charged_credits when 'released' then 4400 else 0 end,
           case i.status when 'held' then 0 else -4400 end,
           case i.status when 'settled' then i.charged_credits else 4400 end,
           case i.status when 'settled' then 'usage reported by the model' when 'released' then 'released: upstream_unavailable'
             else 'held: client_disconnected' end,
           i.finished_at)) as l(kind, available_delta, reserved_delta, amount, cause, created_at)
      `);
      console.error(
        `  rows ${from.toLocaleString('en')}..${to.toLocaleString('en')}: ${seconds(performance.now() - chunkStarted)}`,
      );
    }
    // Each account's grant covers what it spent, and what it holds stays reserved.
    await client.query(`
      with spent as (
        select account_id,
               sum(charged_credits) filter (where status = 'settled') + 4400 * count(*) filter (where status = 'held')
                 as spent,
               4400 * count(*) filter (where status = 'held') as held
        from reservations where account_id <> '${hot.accountId}' group by account_id
      ),
      granted as (
        insert into ledger_entries (account_id, kind, available_delta, amount, cause, created_at)
        select account_id, 'grant', spent + 1000000000, spent + 1000000000, 'benchmark seed', now() - interval '91 days'
        from spent
      )
      insert into credit_balances (account_id, available, reserved)
      select account_id, 1000000000, held from spent
      on conflict (account_id) do update set available = credit_balances.available + excluded.available,
        reserved = credit_balances.reserved + excluded.reserved
    `);
    // Rows written behind the rollup's back: it starts again from nothing, as after a restore.
    await client.query(`truncate usage_daily; update usage_rollup_state set watermark = '-infinity'`);
    await client.query('vacuum analyze reservations');
    await client.query('vacuum analyze ledger_entries');
    return performance.now() - started;
  });
}

await main();

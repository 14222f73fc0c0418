#!/usr/bin/env node
// Operator CLI. Configured by the same environment as the control plane (DATABASE_URL or the
// embedded data folder, KEY_PEPPER, ...). Prints one JSON document per command.
import { parseArgs } from 'node:util';
import { ConfigError, createLogger } from '@tollgate/service-kit';

import { COMMANDS, describeFailure, UsageError } from '../src/cli/commands.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { assembleDependencies } from '../src/deps.ts';
import { createMemoryPublisher, createRedisPublisher } from '../src/events.ts';
import { connectRedis } from '../src/redis-connection.ts';

function usage(): string {
  return [
    'usage: tollgate-admin <command> ...',
    ...Object.values(COMMANDS).map((command) => `  ${command.usage}`),
  ].join('\n');
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    password: { type: 'string' },
    name: { type: 'string' },
    scope: { type: 'string' },
    note: { type: 'string' },
    'idempotency-key': { type: 'string' },
    'requests-per-minute': { type: 'string' },
    concurrency: { type: 'string' },
    'max-output-tokens': { type: 'string' },
    'max-request-bytes': { type: 'string' },
    off: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});
const [name, ...rest] = positionals;
const command = name ? COMMANDS[name] : undefined;
if (!command || values.help) {
  console.error(usage());
  process.exit(name && !values.help ? 2 : 0);
}

let exitCode = 0;
try {
  const config = loadConfig();
  const logger = createLogger({
    name: 'tollgate-admin',
    level: 'warn',
    destination: process.stderr as never,
  });
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    poolSize: 2,
    dataDir: config.dataDir,
  });
  const redis = config.redisUrl
    ? connectRedis({ url: config.redisUrl, cluster: config.redisCluster }, { maxRetriesPerRequest: 1 })
    : null;
  const events = redis ? createRedisPublisher(redis, config.redisKeyPrefix, logger) : createMemoryPublisher();
  try {
    if (name !== 'migrate') await migrateToLatest(database.db);
    const deps = assembleDependencies({ config, logger, database, events });
    const result = await command.run(deps, { positionals: rest, options: values });
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await events.close();
    await database.close();
  }
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    exitCode = 2;
  } else {
    console.error(`tollgate-admin ${name}: ${describeFailure(error)}`);
    exitCode = error instanceof UsageError ? 2 : 1;
  }
}
process.exit(exitCode);

#!/usr/bin/env node
// Operator CLI. Configured by the same environment as the control plane (DATABASE_URL or the
// embedded data folder, KEY_PEPPER, ...). Prints one JSON document per command on stdout; which
// database it works on, and any failure as one line, on stderr (never a stack trace).
import { ConfigError, connectRedis, createLogger } from '@tollgate/service-kit';
import { parseArguments, UsageError } from '../src/cli/arguments.ts';
import { COMMANDS, describeDatabase, describeFailure } from '../src/cli/commands.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { assembleDependencies } from '../src/deps.ts';
import { createMemoryPublisher, createRedisPublisher } from '../src/events.ts';

function usage(): string {
  return [
    'usage: tollgate-admin <command> ...',
    ...Object.values(COMMANDS).map((command) => `  ${command.usage}`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  let name: string | undefined;
  try {
    const { positionals, options } = parseArguments(argv);
    const [first, ...rest] = positionals;
    name = first;
    const command = name ? COMMANDS[name] : undefined;
    if (!command || options.help) {
      if (name && !command) console.error(`tollgate-admin: unknown command ${name}`);
      console.error(usage());
      return name && !options.help ? 2 : 0;
    }
    const config = loadConfig();
    const logger = createLogger({
      name: 'tollgate-admin',
      level: 'warn',
      destination: process.stderr as never,
    });
    console.error(`tollgate-admin: database ${describeDatabase(config)}`);
    const database = await openDatabase({
      databaseUrl: config.databaseUrl,
      poolSize: 2,
      dataDir: config.dataDir,
    });
    const redis = config.redisUrl
      ? connectRedis({ url: config.redisUrl, cluster: config.redisCluster }, { maxRetriesPerRequest: 1 })
      : null;
    const events = redis
      ? createRedisPublisher(redis, config.redisKeyPrefix, logger)
      : createMemoryPublisher();
    try {
      if (name !== 'migrate') await migrateToLatest(database.db);
      // Balance changes give back what a hot-tier lease holds free first (the engine's lockAccount).
      const deps = assembleDependencies({ config, logger, database, events });
      try {
        const result = await command.run(deps, { positionals: rest, options });
        console.log(JSON.stringify(result, null, 2));
        return 0;
      } finally {
        await deps.billing.close();
      }
    } finally {
      await events.close();
      await database.close();
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    console.error(`tollgate-admin${name ? ` ${name}` : ''}: ${describeFailure(error)}`);
    if (error instanceof UsageError) console.error('`tollgate-admin --help` lists the commands.');
    return error instanceof UsageError ? 2 : 1;
  }
}

process.exit(await main(process.argv.slice(2)));

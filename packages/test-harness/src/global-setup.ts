import type { TestProject } from 'vitest/node';
import { startTestServices } from './services.ts';
import './provided.ts';

/** vitest globalSetup: finds (or starts) Postgres and Redis once per run. */
export default async function setup(project: TestProject) {
  const services = await startTestServices();
  console.info(
    `test services: postgres from ${services.sources.postgres}, redis from ${services.sources.redis}`,
  );
  project.provide('testServices', { postgresUrl: services.postgresUrl, redisUrl: services.redisUrl });
  return () => services.stop();
}

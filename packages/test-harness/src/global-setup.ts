import type { TestProject } from 'vitest/node';
import { startTestServices } from './services.ts';
import './provided.ts';

/** vitest globalSetup: finds (or starts) Postgres and Redis once per run. */
export default async function setup(project: TestProject) {
  const services = await startTestServices();
  const from = (source: string, image?: string) => (image ? `${source} (${image})` : source);
  console.info(
    `test services: postgres from ${from(services.sources.postgres, services.images.postgres)}, redis from ${from(services.sources.redis, services.images.redis)}`,
  );
  project.provide('testServices', { postgresUrl: services.postgresUrl, redisUrl: services.redisUrl });
  return () => services.stop();
}

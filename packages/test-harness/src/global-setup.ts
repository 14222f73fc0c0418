import type { TestProject } from 'vitest/node';
import { chooseServicesUnderTest, describeServicesUnderTest } from './containers.ts';
import { startTestServices } from './services.ts';
import './provided.ts';

/**
 * vitest globalSetup: finds (or starts) Postgres and Redis once per run. For the e2e project it also
 * decides whether the services under test run as processes or from the built images
 * (TOLLGATE_E2E_IMAGES=1 and a Docker engine that has them), and says which.
 */
export default async function setup(project: TestProject) {
  const e2e = project.name === 'e2e';
  const services = await startTestServices(process.env, {
    network: e2e && process.env.TOLLGATE_E2E_IMAGES === '1',
  });
  const from = (source: string, image?: string) => (image ? `${source} (${image})` : source);
  console.info(
    `test services: postgres from ${from(services.sources.postgres, services.images.postgres)}, redis from ${from(services.sources.redis, services.images.redis)}`,
  );
  project.provide('testServices', { postgresUrl: services.postgresUrl, redisUrl: services.redisUrl });
  const underTest = e2e
    ? await chooseServicesUnderTest(process.env, services)
    : ({ mode: 'processes' } as const);
  if (e2e) console.info(describeServicesUnderTest(underTest));
  project.provide('servicesUnderTest', underTest);
  return () => services.stop();
}

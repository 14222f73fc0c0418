import type { TestProject } from 'vitest/node';
import { chooseServicesUnderTest, describeServicesUnderTest } from './containers.ts';
import { createTemplateDatabase, type TestDatabase } from './database.ts';
import { startTestServices } from './services.ts';
import './provided.ts';

export interface SetupOptions {
  /**
   * Prepares (e.g. migrates) a database once per run and project; every test database is then
   * created as a copy of it (`testServices.templateDatabase`). Must close its connections.
   */
  prepareTemplate?: (databaseUrl: string) => Promise<void>;
}

/**
 * vitest globalSetup: finds (or starts) Postgres and Redis once per run, and builds the template
 * database when asked. For the e2e project it also decides whether the services under test run as
 * processes or from the built images (TOLLGATE_E2E_IMAGES=1 and a Docker engine that has them),
 * and says which.
 */
export async function setupTestServices(project: TestProject, options: SetupOptions = {}) {
  const e2e = project.name === 'e2e';
  const services = await startTestServices(process.env, {
    network: e2e && process.env.TOLLGATE_E2E_IMAGES === '1',
  });
  const from = (source: string, image?: string) => (image ? `${source} (${image})` : source);
  console.info(
    `test services: postgres from ${from(services.sources.postgres, services.images.postgres)}, redis from ${from(services.sources.redis, services.images.redis)}`,
  );
  let template: TestDatabase | undefined;
  try {
    if (options.prepareTemplate) {
      template = await createTemplateDatabase(services.postgresUrl, project.name, options.prepareTemplate);
    }
    project.provide('testServices', {
      postgresUrl: services.postgresUrl,
      redisUrl: services.redisUrl,
      ...(template ? { templateDatabase: template.name } : {}),
    });
    const underTest = e2e
      ? await chooseServicesUnderTest(process.env, services)
      : ({ mode: 'processes' } as const);
    if (e2e) console.info(describeServicesUnderTest(underTest));
    project.provide('servicesUnderTest', underTest);
  } catch (error) {
    await template?.drop().catch(() => {});
    await services.stop();
    throw error;
  }
  return async () => {
    await template?.drop();
    await services.stop();
  };
}

export default function setup(project: TestProject) {
  return setupTestServices(project);
}

import { setupTestServices } from '@tollgate/test-harness/global-setup';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

/**
 * vitest globalSetup of the projects that run a control plane (control-plane, gateway, e2e): the
 * harness's, plus one database migrated once per run that every test database is copied from, so
 * no test file runs the migrations. A control plane started on a copy finds nothing to apply.
 */
export default function setup(project: TestProject) {
  return setupTestServices(project, {
    async prepareTemplate(databaseUrl) {
      const handle = await openDatabase({ databaseUrl, poolSize: 1, dataDir: '' });
      try {
        await migrateToLatest(handle.db);
      } finally {
        await handle.close();
      }
    },
  });
}

export * from './containers.ts';
export * from './database.ts';
export * from './processes.ts';
export * from './redis-cluster.ts';
export * from './secrets.ts';
export * from './services.ts';

import './provided.ts';

export * from './stripe-fake.ts';

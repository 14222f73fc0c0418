export * from './database.ts';
export * from './secrets.ts';
export * from './services.ts';

import './provided.ts';

export * from './app-error.ts';
export * from './catalog.ts';
export * from './render.ts';

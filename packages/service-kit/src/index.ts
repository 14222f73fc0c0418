export * from './config.ts';
export * from './logger.ts';
export * from './serve.ts';
export * from './tracing.ts';

export * from './config.ts';
export * from './limits.ts';
export * from './logger.ts';
export * from './metrics-server.ts';
export * from './periodic.ts';
export * from './redis-connection.ts';
export * from './serve.ts';
export * from './tracing.ts';

export * from './api-key.ts';
export * from './billing.ts';
export * from './management-key.ts';
export * from './money.ts';
export * from './provider-credential.ts';
export * from './provider-kinds.ts';
export * from './quantity.ts';
export * from './status.ts';

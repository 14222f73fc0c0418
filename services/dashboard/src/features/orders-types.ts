import type { Schemas } from '../lib/client.ts';

export type Money = Schemas['Money'];
export type Payment = Schemas['Payment'];
export type Order = Schemas['Order'];

import type { z } from 'zod';
import type { Dependencies } from '../deps.ts';

/**
 * One route of the internal API: validated input in, JSON out. Apart from internal-api.ts, which
 * serves them, so the modules that define routes and the server do not import each other.
 */
export interface InternalRoute<Schema extends z.ZodType = z.ZodType> {
  method: 'GET' | 'POST';
  path: string;
  /** Body schema of POST routes. */
  input?: Schema;
  handle(deps: Dependencies, input: z.infer<Schema>): Promise<unknown>;
}

export function defineInternalRoute<Schema extends z.ZodType>(route: InternalRoute<Schema>): InternalRoute {
  return route as unknown as InternalRoute;
}

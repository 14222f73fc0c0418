import type { Logger } from '@tollgate/service-kit';
import type { Dependencies } from '../deps.ts';

/** Hono context of the control plane's apps. */
export interface AppEnv {
  Variables: {
    deps: Dependencies;
    requestId: string;
    logger: Logger;
  };
}

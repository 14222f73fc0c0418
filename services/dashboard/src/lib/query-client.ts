import { QueryClient } from '@tanstack/react-query';
import { ApiError } from './api.ts';

/**
 * The one query cache of the dashboard's server state. A screen shows what the cache has at once
 * and asks again on every visit (staleTime 0): balances move with every call, and grants made
 * elsewhere (the CLI, another browser, a reseller's software) must show on the next screen. A
 * failed read is retried twice only when the service could not be reached or failed (a 4xx is the
 * answer, not a glitch); mutations are never retried (money moves once) and invalidate what they
 * change. Signing out clears the cache, so the next person sees nothing of the last.
 */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 0,
        retry: (failures, error) => failures < 2 && isTransient(error),
        refetchOnWindowFocus: true,
      },
      mutations: { retry: false },
    },
  });
}

function isTransient(error: unknown): boolean {
  return !(error instanceof ApiError) || error.status === 0 || error.status >= 500;
}

declare module '@tanstack/react-query' {
  interface Register {
    defaultError: ApiError;
  }
}

import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, api } from './api.ts';

/** Server state lives here only: loaded on mount and when `path` changes, reloaded on demand. */
export function useApi<T>(path: string | null): {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
} {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(path !== null);
  const latest = useRef(path);
  latest.current = path;

  const reload = useCallback(async () => {
    if (path === null) return;
    setLoading(true);
    try {
      const result = await api<T>('GET', path);
      if (latest.current === path) {
        setData(result);
        setError(null);
      }
    } catch (caught) {
      if (latest.current === path) setError(caught instanceof ApiError ? caught : toApiError(caught));
    } finally {
      if (latest.current === path) setLoading(false);
    }
  }, [path]);

  useEffect(() => {
    void reload();
  }, [reload]);

  return { data, error, loading, reload };
}

/** A state-changing call with its pending flag and the last error (shown next to the form). */
export function useAction<A extends unknown[], R>(run: (...args: A) => Promise<R>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const execute = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setPending(true);
      setError(null);
      try {
        return await run(...args);
      } catch (caught) {
        setError(caught instanceof ApiError ? caught : toApiError(caught));
        return undefined;
      } finally {
        setPending(false);
      }
    },
    [run],
  );
  return { execute, pending, error, clearError: () => setError(null) };
}

function toApiError(caught: unknown): ApiError {
  return new ApiError(
    0,
    'unknown_error',
    caught instanceof Error ? caught.message : 'Something went wrong.',
    {},
    null,
  );
}

// getRandomValues, not randomUUID: the latter exists only on https or localhost pages.
function newKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) =>
    byte.toString(16).padStart(2, '0'),
  ).join('');
}

/**
 * The idempotency key of one form: the same until `renew` (after the form succeeded or its values
 * changed), so sending the same form twice moves money once.
 */
export function useFormKey(): { key: string; renew: () => void } {
  const [key, setKey] = useState(newKey);
  const renew = useCallback(() => setKey(newKey()), []);
  return { key, renew };
}

import { useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from 'react';
import { ApiError, mayHaveSession } from './api.ts';
import type { Schemas } from './client.ts';
import { read } from './query.ts';

/** The signed-in account, as GET /me answers it. */
export type Account = Schemas['Account'];

interface SessionState {
  /** undefined while the first GET /me is in flight; null when signed out. */
  account: Account | null | undefined;
  setAccount(account: Account | null): void;
  refresh(): Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

export function SessionProvider(props: { children: ReactNode }) {
  const [account, setKnownAccount] = useState<Account | null | undefined>(undefined);
  const queryClient = useQueryClient();
  // Signed out: nothing the last person loaded stays in the cache for the next.
  const setAccount = useCallback(
    (next: Account | null) => {
      if (next === null) queryClient.clear();
      setKnownAccount(next);
    },
    [queryClient],
  );
  const [attempt, setAttempt] = useState(0);
  const refresh = useCallback(async () => {
    if (!mayHaveSession()) {
      setAccount(null);
      return;
    }
    try {
      setAccount(await read('/api/v1/me'));
    } catch (error) {
      // Only the service saying so signs the user out: a network error or a 5xx keeps what is
      // known (a signed-in user stays on the screen) and asks again shortly.
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) setAccount(null);
      else setAttempt((count) => count + 1);
    }
  }, [setAccount]);
  useEffect(() => {
    void refresh();
  }, [refresh]);
  useEffect(() => {
    if (attempt === 0) return;
    const timer = setTimeout(() => void refresh(), Math.min(1_000 * 2 ** (attempt - 1), 15_000));
    return () => clearTimeout(timer);
  }, [attempt, refresh]);
  return <SessionContext value={{ account, setAccount, refresh }}>{props.children}</SessionContext>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}

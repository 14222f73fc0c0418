import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from 'react';
import { ApiError, api } from './api.ts';

export interface Account {
  id: string;
  email: string;
  displayName: string | null;
  status: 'active' | 'suspended';
  isAdmin: boolean;
  isReseller: boolean;
  resellerId: string | null;
  createdAt: string;
}

interface SessionState {
  /** undefined while the first GET /me is in flight; null when signed out. */
  account: Account | null | undefined;
  setAccount(account: Account | null): void;
  refresh(): Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

export function SessionProvider(props: { children: ReactNode }) {
  const [account, setAccount] = useState<Account | null | undefined>(undefined);
  const refresh = useCallback(async () => {
    try {
      setAccount(await api<Account>('GET', '/me'));
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) setAccount(null);
      else setAccount(null);
    }
  }, []);
  useEffect(() => {
    void refresh();
  }, [refresh]);
  return <SessionContext value={{ account, setAccount, refresh }}>{props.children}</SessionContext>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}

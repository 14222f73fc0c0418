import { api } from '../lib/api.ts';
import { formatDate } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Button, Card, ErrorMessage, Loading, Page } from '../lib/ui.tsx';

interface SessionView {
  id: string;
  createdAt: string;
  lastSeenAt: string;
  userAgent: string | null;
  ip: string | null;
  current: boolean;
}

export function SessionsScreen() {
  const sessions = useApi<SessionView[]>('/me/sessions');
  const end = useAction(async (id: string) => {
    await api('DELETE', `/me/sessions/${id}`);
    await sessions.reload();
  });
  const endOthers = useAction(async () => {
    for (const session of sessions.data ?? []) {
      if (!session.current) await api('DELETE', `/me/sessions/${session.id}`);
    }
    await sessions.reload();
  });
  const others = (sessions.data ?? []).filter((session) => !session.current).length;
  return (
    <Page
      title="Sessions"
      actions={
        <Button onClick={() => void endOthers.execute()} pending={endOthers.pending} disabled={others === 0}>
          End all other sessions
        </Button>
      }
    >
      <ErrorMessage error={sessions.error ?? end.error ?? endOthers.error} />
      {sessions.loading && !sessions.data ? <Loading /> : null}
      <Card>
        {others === 0 && sessions.data ? <p className="muted">This is your only signed-in browser.</p> : null}
        <ul className="sessions">
          {sessions.data?.map((session) => (
            <li key={session.id}>
              <div>
                <strong>{session.userAgent ?? 'Unknown browser'}</strong>
                {session.current ? <span className="badge state-active"> this browser</span> : null}
                <p className="muted">
                  {session.ip ?? 'unknown address'} · signed in {formatDate(session.createdAt)} · last seen{' '}
                  {formatDate(session.lastSeenAt)}
                </p>
              </div>
              {session.current ? null : (
                <Button
                  onClick={() => void end.execute(session.id)}
                  pending={end.pending}
                  label={`End session from ${session.ip ?? 'unknown address'}`}
                >
                  End
                </Button>
              )}
            </li>
          ))}
        </ul>
      </Card>
    </Page>
  );
}

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { client, unwrap } from '../lib/client.ts';
import { formatDate } from '../lib/format.ts';
import { Button, Card, ErrorMessage, Loading, Page } from '../lib/ui.tsx';

const SESSIONS = ['/api/v1/me/sessions'] as const;

function endSession(id: string) {
  return unwrap(client.DELETE('/api/v1/me/sessions/{id}', { params: { path: { id } } }));
}

export function SessionsScreen() {
  const queryClient = useQueryClient();
  const sessions = useQuery({ queryKey: SESSIONS, queryFn: () => unwrap(client.GET('/api/v1/me/sessions')) });
  const onSettled = () => queryClient.invalidateQueries({ queryKey: SESSIONS });
  const end = useMutation({ mutationFn: endSession, onSettled });
  const endOthers = useMutation({
    mutationFn: async () => {
      for (const session of sessions.data ?? []) if (!session.current) await endSession(session.id);
    },
    onSettled,
  });
  const others = (sessions.data ?? []).filter((session) => !session.current).length;
  return (
    <Page
      title="Sessions"
      actions={
        <Button onClick={() => endOthers.mutate()} pending={endOthers.isPending} disabled={others === 0}>
          End all other sessions
        </Button>
      }
    >
      <ErrorMessage error={sessions.error ?? end.error ?? endOthers.error} />
      {sessions.isPending ? <Loading /> : null}
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
                  onClick={() => end.mutate(session.id)}
                  pending={end.isPending}
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

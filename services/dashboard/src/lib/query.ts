import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ClientPathsWithMethod, FetchResponse, MaybeOptionalInit } from 'openapi-fetch';
import { useCallback, useState } from 'react';
import { ApiError } from './api.ts';
import type { paths } from './api-schema.d.ts';
import { client, type DataOf, unwrap } from './client.ts';

/** A path of the API that answers GET. */
export type ReadPath = ClientPathsWithMethod<typeof client, 'get'>;
/** The parameters (`{params: {path, query}}`) of a GET of `P`. */
export type ReadInit<P extends ReadPath> = MaybeOptionalInit<paths[P], 'get'>;
/** What a GET of `P` answers in its `{data}` body, as the OpenAPI document defines it. */
export type ReadData<P extends ReadPath> = DataOf<
  NonNullable<FetchResponse<paths[P]['get'], ReadInit<P>, `${string}/${string}`>['data']>
>;

/** A GET of the API through the typed client (the path as the OpenAPI document names it). */
export function read<P extends ReadPath>(path: P, init?: ReadInit<P>): Promise<ReadData<P>> {
  // The client's own overloads cannot be followed through a generic path; the types above are its.
  return unwrap(client.GET(path, init as never)) as Promise<ReadData<P>>;
}

/** The cache key of a read: the path first, so invalidating a path reaches every read of it. */
export function readKey(path: ReadPath, init?: { params?: unknown }): readonly unknown[] {
  return init?.params === undefined ? [path] : [path, init.params];
}

/**
 * A GET of the API through the query cache, typed by the OpenAPI document; `null` for a read
 * not (yet) to be made.
 */
export function useRead<P extends ReadPath>(
  path: P | null,
  init?: ReadInit<P>,
): {
  data: ReadData<P> | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
} {
  const query = useQuery({
    queryKey: path === null ? ['none'] : readKey(path, init),
    queryFn: () => read(path as P, init),
    enabled: path !== null,
  });
  const { refetch } = query;
  const reload = useCallback(async () => {
    await refetch();
  }, [refetch]);
  return { data: query.data, error: query.error, loading: query.isFetching, reload };
}

/** A list of the API read page by page through its cursor, as `usePagedRead` gives it. */
export interface PagedList<T> {
  /** Every page loaded so far, as one list. */
  data: { items: T[] } | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
  hasMore: boolean;
  loadingMore: boolean;
  loadMore: () => void;
}

type PagedPath = {
  [P in ReadPath]: ReadData<P> extends { items: unknown[]; nextCursor?: string | null } ? P : never;
}[ReadPath];
type QueryOf<P extends ReadPath> = paths[P]['get'] extends { parameters: { query?: infer Q } } ? Q : never;
type ItemOf<P extends PagedPath> = ReadData<P> extends { items: Array<infer T> } ? T : never;

/**
 * A list route (`{items, nextCursor}`) read through the cache one page at a time: the first page
 * on mount, the next (`after=`, or `cursor=` for the routes that name it so) on `loadMore`.
 * Reloading or invalidating its path refetches the pages loaded.
 */
export function usePagedRead<P extends PagedPath>(
  path: P,
  query?: Omit<NonNullable<QueryOf<P>>, 'after' | 'cursor'>,
  cursorParam: 'after' | 'cursor' = 'after',
): PagedList<ItemOf<P>> {
  const list = useInfiniteQuery({
    queryKey: [path, { query }, 'pages'],
    queryFn: async ({ pageParam }) =>
      (await read(path, {
        params: { query: pageParam ? { ...query, [cursorParam]: pageParam } : query },
      } as never)) as { items: ItemOf<P>[]; nextCursor?: string | null },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor ?? null,
  });
  const { refetch, fetchNextPage } = list;
  const reload = useCallback(async () => {
    await refetch();
  }, [refetch]);
  return {
    data: list.data ? { items: list.data.pages.flatMap((page) => page.items) } : undefined,
    error: list.error,
    loading: list.isFetching,
    reload,
    hasMore: list.hasNextPage,
    loadingMore: list.isFetchingNextPage,
    loadMore: () => void fetchNextPage(),
  };
}

/**
 * A state-changing call with its pending flag and the last error (shown next to the form). After
 * it succeeded every cached read is invalidated: the screens shown refetch, the others on their
 * next visit, so no screen shows what the change made stale (typed mutations name what they change).
 */
export function useAction<A extends unknown[], R>(run: (...args: A) => Promise<R>) {
  const queryClient = useQueryClient();
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const execute = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setPending(true);
      setError(null);
      try {
        const result = await run(...args);
        void queryClient.invalidateQueries();
        return result;
      } catch (caught) {
        setError(caught instanceof ApiError ? caught : toApiError(caught));
        return undefined;
      } finally {
        setPending(false);
      }
    },
    [run, queryClient],
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

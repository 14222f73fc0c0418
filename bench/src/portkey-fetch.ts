/**
 * Preloaded into Portkey's process by the benchmarks (`node --import`). Portkey 1.15.2 appends its
 * trace headers to a streamed upstream response as `fetch` returned it, and Node's fetch makes
 * those headers immutable, so every streamed call through Portkey answers 500 (`TypeError:
 * immutable`). A streamed response re-wrapped in a new Response (the same body stream, status and
 * headers; the body is not copied) has mutable headers, as Portkey expects. Non-streamed responses
 * are passed on untouched, so Portkey's JSON rows cost exactly what they did.
 */
const upstreamFetch = globalThis.fetch;

globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const response = await upstreamFetch(input, init);
  if (!response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

/**
 * The gateway's upstream side: provider adapters, transport, SSE reading, usage extraction and
 * the relay. Routes use it in this order:
 *
 *   const adapter = getAdapter(provider.kind);
 *   const target = { provider, credential: credentials.get(provider.credentialRef), upstreamModel, alias };
 *   const { url, headers } = adapter.buildRequest({ target, surface, clientHeaders });
 *   const response = await client.send({ url, headers, body, signal });       // throws AppError
 *   non-streamed: const result = await relayNonStreaming({ response, surface, adapter, alias, upstreamModel });
 *   streamed:     const checked = await checkUpstreamResponse({ response, names, surface, stream: true });
 *                 if (checked.ok) { const { pipe, headers, outcome } = relayStream({ ... }); pipe(sink); }
 */
export { anthropicAdapter, getAdapter, openaiAdapter } from './adapters/index.ts';
export { createUpstreamClient, type UpstreamClient, type UpstreamResponse } from './client.ts';
export { type CredentialStore, loadCredentials } from './credentials.ts';
export { relayNonStreaming } from './relay.ts';
export { relayStream, type StreamOutcome } from './relay-stream.ts';
export { SseParser } from './sse.ts';
export type { MeteredSurface, UpstreamAdapter, UpstreamTarget, UsageFigures } from './types.ts';
export { checkUpstreamResponse, classifyUpstreamStatus } from './upstream-status.ts';

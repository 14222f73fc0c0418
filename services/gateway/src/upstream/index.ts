/**
 * The gateway's upstream side: provider adapters, transport, SSE reading, usage extraction and
 * the relay. Routes use it in this order:
 *
 *   const adapter = getAdapter(provider.kind);
 *   const target = { provider, credential: credentials.get(provider.credentialRef), upstreamModel, alias };
 *   const { url, headers } = adapter.buildRequest({ target, surface, clientHeaders });
 *   const response = await client.send({ url, headers, body, signal });       // throws AppError
 *   non-streamed: const result = await relayNonStreaming({ response, surface, adapter, alias, upstreamModel });
 *   streamed:     const checked = await checkUpstreamResponse({ response, names: { alias, upstreamModel }, stream: true });
 *                 if (checked.ok) { const { body, headers, outcome } = relayStream({ ... }); }
 */
export { anthropicAdapter, DEFAULT_ANTHROPIC_VERSION, getAdapter, openaiAdapter } from './adapters/index.ts';
export {
  createUpstreamClient,
  toTransportError,
  type UpstreamClient,
  type UpstreamClientOptions,
  type UpstreamResponse,
  type UpstreamSendRequest,
} from './client.ts';
export { type CredentialStore, CredentialsFileError, loadCredentials } from './credentials.ts';
export { createModelRewriter } from './model-rewrite.ts';
export {
  type NonStreamingRelay,
  type RelayNonStreamingInput,
  relayNonStreaming,
  type SettleOnFailure,
} from './relay.ts';
export {
  type RelayedStream,
  type RelayStreamInput,
  relayStream,
  STREAM_HEADERS,
  type StreamOutcome,
} from './relay-stream.ts';
export { type SseEvent, SseParser } from './sse.ts';
export { renderStreamError } from './stream-errors.ts';
export type {
  MeteredSurface,
  ProviderKind,
  StreamEventVerdict,
  StreamUsageTracker,
  UpstreamAdapter,
  UpstreamRequest,
  UpstreamTarget,
  UsageFigures,
} from './types.ts';
export {
  checkUpstreamResponse,
  classifyUpstreamStatus,
  type ModelNames,
  sanitizeProviderMessage,
  type UpstreamCheck,
} from './upstream-status.ts';

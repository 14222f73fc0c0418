import { PROVIDER_KIND_SURFACES } from '@tollgate/schemas';
import { findKeyValue, isRecord, parseJson } from '../json-scan.ts';
import type { SseEvent } from '../sse.ts';
import type {
  MeteredSurface,
  StreamEventVerdict,
  StreamUsageTracker,
  UpstreamAdapter,
  UpstreamRequest,
  UpstreamTarget,
} from '../types.ts';
import { ChatUsageTracker, extractUsage, ResponsesUsageTracker } from './openai-adapter.ts';
import { assertSurface, trimBaseUrl } from './surface.ts';

/**
 * Azure OpenAI: OpenAI's chat completions and responses on an Azure resource (docs/providers.md).
 * The alias's upstream model is the deployment name. The wire format is OpenAI's, so usage is read
 * as for the `openai` kind; what differs is the URL, the credential header, a chunk of Azure's own
 * in streams, and answers that name the deployment's model rather than the deployment.
 */

/** The inference API version Azure documents as generally available; `api-version` in the base URL wins. */
export const AZURE_CHAT_API_VERSION = '2024-10-21';
/** Responses exist only in preview API versions. */
export const AZURE_RESPONSES_API_VERSION = '2025-04-01-preview';

/**
 * `{base}/openai/deployments/{deployment}/chat/completions?api-version=V` and
 * `{base}/openai/responses?api-version=V` (the deployment is the body's `model` there). The base is
 * the resource endpoint (`https://NAME.openai.azure.com`), with or without `/openai`.
 */
export function azureUrl(baseUrl: string, surface: MeteredSurface, deployment: string): string {
  const url = new URL(baseUrl);
  const version =
    url.searchParams.get('api-version') ||
    (surface === 'responses' ? AZURE_RESPONSES_API_VERSION : AZURE_CHAT_API_VERSION);
  const base = trimBaseUrl(url.pathname);
  const root = `${url.origin}${base.endsWith('/openai') ? base : `${base}/openai`}`;
  const path =
    surface === 'responses'
      ? '/responses'
      : `/deployments/${encodeURIComponent(deployment)}/chat/completions`;
  return `${root}${path}?api-version=${encodeURIComponent(version)}`;
}

/**
 * The credential is an API key (`api-key` header) or, written `Bearer <token>`, a Microsoft Entra
 * token sent as `Authorization` (its holder refreshes it in the secrets file).
 */
function buildRequest(input: {
  target: UpstreamTarget;
  surface: MeteredSurface;
  clientHeaders: Pick<Headers, 'get'>;
}): UpstreamRequest {
  assertSurface(azureOpenaiAdapter, input.surface);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const credential = input.target.credential;
  if (credential !== null) {
    if (/^bearer /i.test(credential)) headers.authorization = `Bearer ${credential.slice(7).trim()}`;
    else headers['api-key'] = credential;
  }
  return { url: azureUrl(input.target.provider.baseUrl, input.surface, input.target.upstreamModel), headers };
}

/**
 * Azure opens a chat stream with a chunk of its own before any choice: `choices: []`, empty `id`
 * and `model`, and the prompt's `prompt_filter_results`. It is no chunk of the protocol (and would
 * pass for the usage chunk), so it is dropped. Everything else is OpenAI's, read as for `openai`.
 */
class AzureChatUsageTracker implements StreamUsageTracker {
  readonly #chat = new ChatUsageTracker();

  observe(event: SseEvent): StreamEventVerdict {
    if (findKeyValue(event.data, '"prompt_filter_results"') !== -1 && isPromptFilterChunk(event.data))
      return 'drop';
    return this.#chat.observe(event);
  }

  usage() {
    return this.#chat.usage();
  }
}

function isPromptFilterChunk(data: string): boolean {
  const parsed = parseJson(data);
  if (!isRecord(parsed)) return false;
  const noChoices = Array.isArray(parsed.choices) && parsed.choices.length === 0;
  return noChoices && (parsed.usage === undefined || parsed.usage === null);
}

export const azureOpenaiAdapter: UpstreamAdapter = {
  kind: 'azure-openai',
  surfaces: PROVIDER_KIND_SURFACES['azure-openai'],
  wireProtocol: 'chat_completions',
  namesItsOwnModel: true,
  buildRequest,
  extractUsage,
  createStreamUsageTracker(surface) {
    assertSurface(azureOpenaiAdapter, surface);
    return surface === 'responses' ? new ResponsesUsageTracker() : new AzureChatUsageTracker();
  },
};

import type { IncomingHttpHeaders } from 'node:http';
import type { Directives } from '../directives.ts';
import type { ProtocolRequest, ReplyPlan } from '../reply-plan.ts';
import { openAiChatProtocol } from './openai-chat.ts';
import { openAiResponsesProtocol } from './openai-responses.ts';
import type { Protocol, StreamEvent } from './protocol.ts';

/**
 * Azure OpenAI: OpenAI's two protocols on `/openai/deployments/{deployment}/chat/completions` and
 * `/openai/responses`, each with an `api-version` query. What Azure does differently, and the mock
 * with it:
 * - the credential is an `api-key` header (or an Entra token as `Authorization: Bearer`);
 * - answers name the deployment's model (`AZURE_MODEL`), not the deployment called;
 * - content filtering: `prompt_filter_results` in answers, a chat stream opened by a chunk of its
 *   own (`choices: []`, empty id and model) holding them, `content_filter_results` on every choice;
 *   `content_filter=prompt` refuses with 400 `content_filter`, `content_filter=completion` stops
 *   the answer with `finish_reason: content_filter` (its usage still reported, as Azure bills it);
 * - errors are `{error: {code, message}}` with the status as the code.
 */

export const AZURE_MODEL = 'mock-azure-gpt-2024-11-20';

const SAFE = { filtered: false, severity: 'safe' };
const FILTER_RESULTS = { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE };
const FILTERED_RESULTS = { ...FILTER_RESULTS, violence: { filtered: true, severity: 'medium' } };
const PROMPT_FILTER_RESULTS = [{ prompt_index: 0, content_filter_results: FILTER_RESULTS }];

function isAuthorized(headers: IncomingHttpHeaders, expectedApiKey: string): boolean {
  return headers['api-key'] === expectedApiKey || headers.authorization === `Bearer ${expectedApiKey}`;
}

function errorBody(status: number, message: string) {
  return { error: { code: String(status), message } };
}

function refuse(directives: Directives) {
  if (directives.contentFilter !== 'prompt') return undefined;
  return {
    status: 400,
    body: {
      error: {
        message:
          "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        type: null,
        param: 'prompt',
        code: 'content_filter',
        status: 400,
        innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: FILTERED_RESULTS },
      },
    },
  };
}

const asAzure = (plan: ReplyPlan): ReplyPlan => ({ ...plan, model: AZURE_MODEL });

type Json = Record<string, unknown>;

function withChoiceFilters(choices: unknown, results: unknown): unknown {
  return Array.isArray(choices)
    ? choices.map((choice: Json) => ({ ...choice, content_filter_results: results }))
    : choices;
}

export const azureChatProtocol: Protocol = {
  ...openAiChatProtocol,
  isAuthorized,
  errorBody,
  refuse,

  reply(plan, request: ProtocolRequest, directives) {
    const filtered = directives?.contentFilter === 'completion';
    const body = openAiChatProtocol.reply(asAzure(plan), request) as Json;
    const [choice] = body.choices as Json[];
    const message = choice!.message as Json;
    body.choices = [
      {
        ...choice,
        ...(filtered
          ? { finish_reason: 'content_filter', message: { ...message, content: plan.pieces[0] ?? '' } }
          : {}),
        content_filter_results: filtered ? FILTERED_RESULTS : FILTER_RESULTS,
      },
    ];
    body.prompt_filter_results = PROMPT_FILTER_RESULTS;
    return body;
  },

  stream(plan, request, directives) {
    const base = openAiChatProtocol.stream(asAzure(plan), request);
    const promptFilter: StreamEvent = {
      data: {
        choices: [],
        created: 0,
        id: '',
        model: '',
        object: '',
        prompt_filter_results: PROMPT_FILTER_RESULTS,
      },
    };
    let events = base.events.map((event) => {
      const data = event.data as Json;
      const choices = data.choices as unknown[];
      return choices.length === 0
        ? event
        : { data: { ...data, choices: withChoiceFilters(choices, FILTER_RESULTS) } };
    });
    if (directives?.contentFilter === 'completion') {
      // The answer stops after its first content delta; the usage chunk (when asked) still follows.
      const usage = events.filter((event) => ((event.data as Json).choices as unknown[]).length === 0);
      const stop = events.at(-1 - usage.length)!.data as Json;
      const filteredStop = {
        ...stop,
        choices: [
          {
            index: 0,
            delta: {},
            logprobs: null,
            finish_reason: 'content_filter',
            content_filter_results: FILTERED_RESULTS,
          },
        ],
      };
      events = [...events.slice(0, base.firstDelta + 1), { data: filteredStop }, ...usage];
    }
    return { ...base, events: [promptFilter, ...events], firstDelta: base.firstDelta + 1 };
  },
};

export const azureResponsesProtocol: Protocol = {
  ...openAiResponsesProtocol,
  isAuthorized,
  errorBody,
  refuse,
  reply: (plan, request) => openAiResponsesProtocol.reply(asAzure(plan), request),
  stream: (plan, request) => openAiResponsesProtocol.stream(asAzure(plan), request),
};

const CHAT_PATH = /^\/openai\/deployments\/[^/]+\/chat\/completions$/;

/** Azure's protocol for a path, or undefined when the path is not one of Azure's. */
export function azureProtocolFor(path: string): Protocol | undefined {
  if (path === '/openai/responses') return azureResponsesProtocol;
  return CHAT_PATH.test(path) ? azureChatProtocol : undefined;
}

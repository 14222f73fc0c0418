import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** The fixed model every protocol answers as. */
export const MOCK_MODEL = 'mock-model-1';
const REPLY = 'Hello from the mock upstream.';

export interface MockUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Deterministic usage: about four bytes of request per input token, one token per reply word. */
export function usageFor(rawBody: string): MockUsage {
  return {
    inputTokens: Math.max(1, Math.ceil(Buffer.byteLength(rawBody) / 4)),
    outputTokens: REPLY.split(' ').length,
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function messagesReply(model: string, usage: MockUsage) {
  return {
    id: `msg_mock_${Date.now().toString(36)}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: REPLY }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

function chatReply(model: string, usage: MockUsage) {
  return {
    id: `chatcmpl-mock${Date.now().toString(36)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      { index: 0, message: { role: 'assistant', content: REPLY }, finish_reason: 'stop', logprobs: null },
    ],
    usage: {
      prompt_tokens: usage.inputTokens,
      completion_tokens: usage.outputTokens,
      total_tokens: usage.inputTokens + usage.outputTokens,
    },
  };
}

function responsesReply(model: string, usage: MockUsage) {
  return {
    id: `resp_mock${Date.now().toString(36)}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model,
    output: [
      {
        id: 'msg_mock',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: REPLY, annotations: [] }],
      },
    ],
    usage: {
      input_tokens: usage.inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.inputTokens + usage.outputTokens,
    },
  };
}

const ROUTES: Record<string, (model: string, usage: MockUsage) => unknown> = {
  '/v1/messages': messagesReply,
  '/v1/chat/completions': chatReply,
  '/v1/responses': responsesReply,
};

export function createMockUpstream(): Server {
  return createServer(async (request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (request.method === 'GET' && path === '/health') return sendJson(response, 200, { status: 'ok' });
    const reply = request.method === 'POST' ? ROUTES[path] : undefined;
    if (!reply) return sendJson(response, 404, { error: { type: 'not_found_error', message: 'Not found' } });
    const raw = await readBody(request);
    let model = MOCK_MODEL;
    try {
      const parsed = JSON.parse(raw) as { model?: unknown };
      if (typeof parsed.model === 'string') model = parsed.model;
    } catch {
      return sendJson(response, 400, {
        error: { type: 'invalid_request_error', message: 'Body is not JSON' },
      });
    }
    sendJson(response, 200, reply(model, usageFor(raw)));
  });
}

/**
 * CPU cost of the relay alone (not a test): pushes realistic 50-event streams, one event per
 * upstream chunk as providers send them, through relayStream and reads them out as a client would;
 * then a non-streamed answer through relayNonStreaming. Prints microseconds per stream.
 *
 *   node services/gateway/bench/relay-bench.ts [iterations]
 */
import { anthropicAdapter, openaiAdapter } from '../src/upstream/adapters/index.ts';
import { readFixture } from '../src/upstream/fixtures/read-fixture.ts';
import { relayNonStreaming } from '../src/upstream/relay.ts';
import { relayStream } from '../src/upstream/relay-stream.ts';
import { JSON_HEADERS, memoryResponse, SSE_HEADERS } from '../src/upstream/testing/responses.ts';
import type { MeteredSurface, UpstreamAdapter } from '../src/upstream/types.ts';

const EVENTS = 50;
const words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'];

function messagesStream(): string[] {
  const deltas = EVENTS - 6;
  const events = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1250,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
  ];
  for (let index = 0; index < deltas; index++) {
    events.push(
      `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${words[index % 10]}"}}\n\n`,
    );
  }
  events.push(
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${deltas}}}\n\n`,
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  );
  return events;
}

function chatStream(): string[] {
  const head =
    '{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_44709d6fcb","choices":';
  const events: string[] = [];
  for (let index = 0; index < EVENTS - 2; index++) {
    events.push(
      `data: ${head}[{"index":0,"delta":{"content":"${words[index % 10]}"},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
    );
  }
  events.push(
    `data: ${head}[],"usage":{"prompt_tokens":1250,"completion_tokens":48,"total_tokens":1298,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n`,
    'data: [DONE]\n\n',
  );
  return events;
}

function responsesStream(): string[] {
  const text = readFixture('openai-responses-stream-function-call.sse').split(/(?<=\n\n)/);
  const created = text.slice(0, 4);
  const completed = text.at(-1)!;
  const events = [...created];
  for (let index = events.length; index < EVENTS - 1; index++) {
    events.push(
      `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${index},"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"${words[index % 10]}","logprobs":[]}\n\n`,
    );
  }
  events.push(completed);
  return events;
}

async function drain(body: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.length;
  return bytes;
}

async function measureStream(
  label: string,
  surface: MeteredSurface,
  adapter: UpstreamAdapter,
  upstreamModel: string,
  events: string[],
  iterations: number,
): Promise<void> {
  const chunks = events.map((event) => Buffer.from(event));
  const once = async () => {
    const relayed = relayStream({
      response: memoryResponse(200, SSE_HEADERS, chunks),
      surface,
      adapter,
      alias: 'house-model',
      upstreamModel,
      clientAskedForUsage: false,
      abortUpstream() {},
    });
    await drain(relayed.body);
    const outcome = await relayed.outcome;
    if (outcome.kind !== 'completed') throw new Error(`${label}: ${outcome.kind}`);
  };
  for (let index = 0; index < Math.min(500, iterations); index++) await once();
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let index = 0; index < iterations; index++) await once();
  const wallUs = Number(process.hrtime.bigint() - started) / 1_000 / iterations;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuUs = (cpu.user + cpu.system) / iterations;
  console.log(
    `${label.padEnd(18)} ${events.length} events  ${wallUs.toFixed(1).padStart(6)} us wall/stream  ${cpuUs.toFixed(1).padStart(6)} us cpu/stream  ${(cpuUs / events.length).toFixed(2)} us cpu/event`,
  );
}

/** The floor: the same upstream body and ReadableStream, each chunk passed on untouched. */
function passThrough(body: AsyncIterable<Buffer>): ReadableStream<Uint8Array> {
  const iterator = body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
}

async function measureFloor(events: string[], iterations: number): Promise<void> {
  const chunks = events.map((event) => Buffer.from(event));
  const once = () => drain(passThrough(memoryResponse(200, SSE_HEADERS, chunks).body));
  for (let index = 0; index < Math.min(500, iterations); index++) await once();
  const cpuBefore = process.cpuUsage();
  for (let index = 0; index < iterations; index++) await once();
  const cpu = process.cpuUsage(cpuBefore);
  const cpuUs = (cpu.user + cpu.system) / iterations;
  console.log(
    `${'floor (no relay)'.padEnd(18)} ${events.length} events  ${cpuUs.toFixed(1)} us cpu/stream (async body + ReadableStream alone)`,
  );
}

async function measureNonStreaming(iterations: number): Promise<void> {
  const body = Buffer.from(readFixture('anthropic-message-tool-use.json'));
  const once = async () => {
    const result = await relayNonStreaming({
      response: memoryResponse(200, JSON_HEADERS, [body]),
      surface: 'messages',
      adapter: anthropicAdapter,
      alias: 'house-model',
      upstreamModel: 'claude-sonnet-4-5-20250929',
    });
    if (!result.ok) throw result.error;
  };
  for (let index = 0; index < Math.min(500, iterations); index++) await once();
  const cpuBefore = process.cpuUsage();
  for (let index = 0; index < iterations; index++) await once();
  const cpu = process.cpuUsage(cpuBefore);
  console.log(
    `${'non-streamed'.padEnd(18)} ${body.length} bytes  ${((cpu.user + cpu.system) / iterations).toFixed(1)} us cpu/answer`,
  );
}

const iterations = Number(process.argv[2] ?? 2_000);
console.log(`relay cost, ${iterations} iterations each (node ${process.version})`);
await measureFloor(chatStream(), iterations);
await measureStream(
  'messages',
  'messages',
  anthropicAdapter,
  'claude-sonnet-4-5-20250929',
  messagesStream(),
  iterations,
);
await measureStream(
  'chat_completions',
  'chat_completions',
  openaiAdapter,
  'gpt-4o-mini',
  chatStream(),
  iterations,
);
await measureStream('responses', 'responses', openaiAdapter, 'gpt-4.1', responsesStream(), iterations);
await measureNonStreaming(iterations);

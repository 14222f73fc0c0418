/**
 * Prints how long estimateInputTokens takes on /v1/messages bodies of 200 bytes, 20 KB and 500 KB.
 * Run: node services/gateway/bench/measure-count-tokens.ts
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { collectRequestText } from '../src/tokens/collect-text.ts';
import { estimateInputTokens } from '../src/tokens/count-tokens.ts';
import { sampleMessagesBody } from '../test/fixtures/sample-bodies.ts';

const RUNS = 200;

function measure(label: string, bytes: number): void {
  const body = sampleMessagesBody(bytes);
  const size = Buffer.byteLength(JSON.stringify(body));
  estimateInputTokens('messages', body); // warm up
  const times: number[] = [];
  let estimate = 0;
  for (let run = 0; run < RUNS; run += 1) {
    const started = performance.now();
    estimate = estimateInputTokens('messages', body);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const { segments, fixedTokens } = collectRequestText('messages', body);
  const started = performance.now();
  const exact = fixedTokens + countTokens(segments.join('\n'), { disallowedSpecial: new Set() });
  const exactMs = performance.now() - started;
  const p50 = times[Math.floor(RUNS / 2)]!.toFixed(3);
  const p99 = times[Math.floor(RUNS * 0.99)]!.toFixed(3);
  const error = (((estimate - exact) / exact) * 100).toFixed(1);
  console.log(
    `${label.padEnd(7)} body ${String(size).padStart(7)} B  estimate ${String(estimate).padStart(6)}  ` +
      `p50 ${p50} ms  p99 ${p99} ms  | full exact count ${exact} in ${exactMs.toFixed(1)} ms (error ${error}%)`,
  );
}

measure('200 B', 200);
measure('20 KB', 20_000);
measure('500 KB', 500_000);

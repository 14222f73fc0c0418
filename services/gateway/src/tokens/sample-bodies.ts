/*
 * Deterministic request bodies of a chosen size for the token-count tests and measurement: a
 * coding-agent style conversation of varied prose and code, built from a seeded word stream so
 * runs are comparable and the tokenizer's merge cache does not flatter the numbers.
 */

const WORDS = (
  'the request gateway metering token quota reserve settle upstream provider stream chunk usage ' +
  'function const return await async import export interface type string number boolean null ' +
  'error status message content system tools schema property required description model alias ' +
  'refactor the parser so that nested objects keep their order and escapes while the server ' +
  'reads chunked bodies under a byte limit, then release the reservation when the client leaves ' +
  'Überprüfung naïve café 東京 데이터 données — “quoted” {braces} [brackets] (parens) x=1; y+=2;'
).split(' ');

function createWordStream(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const word = WORDS[state % WORDS.length]!;
    // Varied numbers and identifiers keep the text from repeating itself.
    return state % 7 === 0 ? `${word}_${(state >>> 8) % 9973}` : word;
  };
}

/** Text of about `chars` characters. */
export function sampleText(chars: number, seed = 1): string {
  const next = createWordStream(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = next();
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

/** A /v1/messages body of about `bytes` bytes: system prompt, tools and alternating turns. */
export function sampleMessagesBody(bytes: number): Record<string, unknown> {
  const turns = Math.max(1, Math.floor(bytes / 4_000));
  const perTurn = Math.max(20, Math.floor((bytes * 0.8) / turns) - 40);
  const messages = Array.from({ length: turns }, (_, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: [{ type: 'text', text: sampleText(perTurn, index + 2) }],
  }));
  const small = bytes < 1_000;
  return {
    model: 'alias',
    max_tokens: 1024,
    system: small ? undefined : sampleText(Math.floor(bytes * 0.1), 99),
    tools: small
      ? undefined
      : [
          {
            name: 'read_file',
            description: sampleText(Math.floor(bytes * 0.05), 7),
            input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          },
        ],
    messages,
  };
}

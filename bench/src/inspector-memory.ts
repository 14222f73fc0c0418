/**
 * A process's memory after a full collection, read through its inspector (started with
 * `--inspect=127.0.0.1:PORT`): what live objects hold, apart from garbage not yet collected.
 * The benchmark's processes only; nothing in the services depends on it.
 */
export interface CollectedMemory {
  /** All KiB. */
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

async function call(port: number, steps: { method: string; params?: object }[]): Promise<unknown[]> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${port}`);
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  const results: unknown[] = [];
  try {
    for (const [id, step] of steps.entries()) {
      results.push(
        await new Promise((resolve, reject) => {
          socket.onmessage = (message) => {
            const reply = JSON.parse(String(message.data)) as {
              id?: number;
              result?: unknown;
              error?: unknown;
            };
            if (reply.id !== id) return;
            if (reply.error) reject(new Error(JSON.stringify(reply.error)));
            else resolve(reply.result);
          };
          socket.send(JSON.stringify({ id, method: step.method, params: step.params ?? {} }));
        }),
      );
    }
  } finally {
    socket.close();
  }
  return results;
}

/** Collects garbage twice, then reads process.memoryUsage() in the process. */
export async function collectedMemory(port: number): Promise<CollectedMemory> {
  const results = await call(port, [
    { method: 'HeapProfiler.collectGarbage' },
    { method: 'HeapProfiler.collectGarbage' },
    {
      method: 'Runtime.evaluate',
      params: { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true },
    },
  ]);
  const usage = JSON.parse((results[2] as { result: { value: string } }).result.value) as Record<
    string,
    number
  >;
  const kib = (name: string) => (usage[name] ?? 0) / 1024;
  return {
    rss: kib('rss'),
    heapUsed: kib('heapUsed'),
    external: kib('external'),
    arrayBuffers: kib('arrayBuffers'),
  };
}

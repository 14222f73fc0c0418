/** One SSE event as text: `event:` line when named, one `data:` line of JSON. */
export function sseEvent(name: string | undefined, data: unknown): string {
  return `${name === undefined ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;
}

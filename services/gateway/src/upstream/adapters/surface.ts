import { AppError } from '@tollgate/errors';
import type { WireProtocol } from '../../translation/protocol.ts';
import type { UpstreamAdapter } from '../types.ts';

/**
 * An alias configured with a protocol its provider does not speak is a catalogue mistake, not a
 * client one: refuse it as model_unavailable before any upstream call.
 */
export function assertSurface(
  adapter: Pick<UpstreamAdapter, 'surfaces'>,
  surface: WireProtocol,
): asserts surface is UpstreamAdapter['surfaces'][number] {
  if (!(adapter.surfaces as readonly string[]).includes(surface)) throw new AppError('model_unavailable');
}

/** The base URL without trailing slashes, so `{base}/path` never doubles a slash. */
export function trimBaseUrl(baseUrl: string): string {
  let end = baseUrl.length;
  while (end > 0 && baseUrl.charCodeAt(end - 1) === 47) end--;
  return end === baseUrl.length ? baseUrl : baseUrl.slice(0, end);
}

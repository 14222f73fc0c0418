import type { ControlPlaneConfig } from '../../config.ts';

/**
 * A dashboard page's address for an email: on PUBLIC_URL, or, when it is unset (the quick start),
 * on the address the control plane listens at on this machine. Every email that asks the reader
 * to act carries such a link, never a bare token to paste.
 */
export function dashboardLink(config: Pick<ControlPlaneConfig, 'publicUrl' | 'port'>, path: string): string {
  return new URL(path, config.publicUrl ?? `http://127.0.0.1:${config.port}`).toString();
}

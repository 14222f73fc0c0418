import { AppError, isErrorCode, type ServerErrorCode } from '@tollgate/errors';
import {
  CallReceipt,
  FinishBatchResponse,
  type FinishItem,
  GatewayCatalog,
  type GatewayHeartbeat,
  GatewayHeartbeatAnswer,
  KeyStatus,
  type LimiterSettings,
  type RenewSlotsRequest,
  RenewSlotsResponse,
  ReserveBatchResponse,
  type ReserveItem,
  ResolvedKey,
} from '@tollgate/schemas';
import { Pool } from 'undici';
import type { z } from 'zod';
import { createServiceTokenSource } from './service-token.ts';

export interface ControlPlaneClientOptions {
  baseUrl: string;
  secret: string;
  /** Per-call deadline; past it the control plane counts as unreachable. */
  timeoutMs: number;
  connections: number;
  /** The current request's `traceparent`, sent on each call (undefined outside a request). */
  traceparent?: () => string | undefined;
}

/**
 * HTTP client of the control plane's internal billing API: one keep-alive pool, the service
 * token cached. Anything but a clear answer (refused connection, timeout, 5xx, malformed body)
 * becomes billing_unavailable, so the gateway fails closed and meters nothing.
 */
export function createControlPlaneClient(options: ControlPlaneClientOptions) {
  const origin = new URL(options.baseUrl);
  const pool = new Pool(origin.origin, {
    connections: options.connections,
    keepAliveTimeout: 30_000,
    connect: { timeout: options.timeoutMs },
  });
  const tokens = createServiceTokenSource(options.secret);
  const basePath = origin.pathname.replace(/\/+$/, '');

  async function call<T extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: T,
    body?: unknown,
  ): Promise<z.infer<T>> {
    let response: Awaited<ReturnType<typeof pool.request>>;
    const traceparent = options.traceparent?.();
    try {
      response = await pool.request({
        method,
        path: `${basePath}/internal/v1${path}`,
        headers: {
          authorization: `Bearer ${await tokens.token()}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(traceparent ? { traceparent } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
    } catch (error) {
      throw new AppError('billing_unavailable', { cause: error });
    }
    let payload: unknown;
    try {
      payload = await response.body.json();
    } catch (error) {
      throw new AppError('billing_unavailable', { cause: error });
    }
    if (response.statusCode >= 400 && response.statusCode < 500) throw refusalOf(payload);
    if (response.statusCode !== 200) throw new AppError('billing_unavailable');
    const parsed = schema.safeParse(payload);
    if (!parsed.success) throw new AppError('billing_unavailable', { cause: parsed.error });
    return parsed.data;
  }

  return {
    catalog: () => call('GET', '/catalog', GatewayCatalog),
    resolveKey: (keyDigest: string) => call('POST', '/keys/resolve', ResolvedKey, { keyDigest }),
    keyStatus: (keyDigest: string) => call('POST', '/keys/status', KeyStatus, { keyDigest }),
    receipt: (keyDigest: string, requestId: string) =>
      call('POST', '/keys/receipt', CallReceipt, { keyDigest, requestId }),
    /** `limiter`: where the items' limits are counted, when the control plane is to check them. */
    reserve: (items: ReserveItem[], limiter?: LimiterSettings | null) =>
      call('POST', '/reservations', ReserveBatchResponse, limiter ? { items, limiter } : { items }),
    finish: (items: FinishItem[]) => call('POST', '/reservations/finish', FinishBatchResponse, { items }),
    renewSlots: (request: RenewSlotsRequest) =>
      call('POST', '/reservations/slots', RenewSlotsResponse, request),
    heartbeat: (beat: GatewayHeartbeat) => call('POST', '/status/heartbeat', GatewayHeartbeatAnswer, beat),
    close: () => pool.close(),
  };
}

export type ControlPlaneClient = ReturnType<typeof createControlPlaneClient>;

/** A 4xx from the internal API carries a catalogue code (e.g. invalid_api_key). */
function refusalOf(payload: unknown): AppError {
  const code = (payload as { code?: unknown } | null)?.code;
  const gatewayCodes: ServerErrorCode[] = [
    'invalid_api_key',
    'api_key_disabled',
    'api_key_revoked',
    'api_key_expired',
    // A receipt asked for that the key cannot see.
    'not_found',
  ];
  if (isErrorCode(code) && gatewayCodes.includes(code as ServerErrorCode))
    return new AppError(code as ServerErrorCode);
  // Our own request was refused (token, validation): not something the client can fix.
  return new AppError('billing_unavailable');
}

import { AppError } from '@tollgate/errors';
import {
  FinishBatchRequest,
  type FinishBatchResponse,
  ReserveBatchRequest,
  type ReserveBatchResponse,
  ResolveKeyRequest,
} from '@tollgate/schemas';
import { Hono } from 'hono';
import type { z } from 'zod';
import type { AppEnv } from '../../http/env.ts';
import { fieldErrorsOf } from '../../http/errors.ts';
import { readGatewayCatalog } from '../catalog/catalog.service.ts';
import { finish, reserve } from './billing.service.ts';
import { readKeyStatusForGateway, resolveKeyForGateway } from './gateway-keys.service.ts';

async function parse<T extends z.ZodType>(schema: T, request: Request): Promise<z.infer<T>> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    throw AppError.validation({ body: ['Send a valid JSON body.'] });
  }
  const result = schema.safeParse(body);
  if (!result.success) throw AppError.validation(fieldErrorsOf(result.error));
  return result.data;
}

/** The internal billing API the gateway calls (mounted behind the service-token check). */
export function billingInternalRoutes() {
  const app = new Hono<AppEnv>();

  app.get('/catalog', async (c) => c.json(await readGatewayCatalog(c.get('deps'))));

  app.post('/keys/resolve', async (c) => {
    const { keyDigest } = await parse(ResolveKeyRequest, c.req.raw);
    return c.json(await resolveKeyForGateway(c.get('deps'), keyDigest));
  });

  app.post('/keys/status', async (c) => {
    const { keyDigest } = await parse(ResolveKeyRequest, c.req.raw);
    return c.json(await readKeyStatusForGateway(c.get('deps'), keyDigest));
  });

  app.post('/reservations', async (c) => {
    const request = await parse(ReserveBatchRequest, c.req.raw);
    const response: ReserveBatchResponse = await reserve(c.get('deps'), request);
    return c.json(response);
  });

  app.post('/reservations/finish', async (c) => {
    const request = await parse(FinishBatchRequest, c.req.raw);
    const response: FinishBatchResponse = await finish(c.get('deps'), request);
    return c.json(response);
  });

  return app;
}

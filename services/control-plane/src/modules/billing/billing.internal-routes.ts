import {
  FinishBatchRequest,
  ReceiptRequest,
  RenewSlotsRequest,
  ReserveBatchRequest,
} from '@tollgate/schemas';
import { defineInternalRoute, type InternalRoute } from '../../http/internal-route.ts';
import { readGatewayCatalog } from '../catalog/catalog.service.ts';
import { finish, reserve } from './billing.service.ts';
import { readReceipt } from './receipts.service.ts';

/** The internal billing API the gateway calls (paths under /internal/v1). */
export function billingInternalRoutes(): InternalRoute[] {
  return [
    defineInternalRoute({ method: 'GET', path: '/catalog', handle: (deps) => readGatewayCatalog(deps) }),
    defineInternalRoute({
      method: 'POST',
      path: '/keys/receipt',
      input: ReceiptRequest,
      handle: (deps, input) => readReceipt(deps, input.keyDigest, input.requestId),
    }),
    defineInternalRoute({
      method: 'POST',
      path: '/reservations',
      input: ReserveBatchRequest,
      handle: reserve,
    }),
    defineInternalRoute({
      method: 'POST',
      path: '/reservations/finish',
      input: FinishBatchRequest,
      handle: finish,
    }),
    defineInternalRoute({
      method: 'POST',
      path: '/reservations/slots',
      input: RenewSlotsRequest,
      // Only the hot tier takes slots; without it the gateway holds its own (renews none here).
      handle: (deps, input) => deps.billing.renewSlots(input),
    }),
  ];
}

import { useQuery } from '@tanstack/react-query';
import { client, unwrap } from './client.ts';
import { creditsToMoney, perMillionTokens } from './format.ts';

const CREDIT = ['/api/v1/catalog/credit'] as const;

/**
 * What a credit is worth and the bounds of a top-up (GET /catalog/credit), read once per page
 * load: the operator changes it only in the catalogue file, with a restart.
 */
export function useCreditCatalog() {
  return useQuery({
    queryKey: CREDIT,
    queryFn: () => unwrap(client.GET('/api/v1/catalog/credit')),
    staleTime: Number.POSITIVE_INFINITY,
  }).data;
}

/**
 * Money beside a credit figure ("USD 12.34"), or nothing when the catalogue sets no value.
 * `minor` for balances, `exact` for prices, costs and usage (docs/payments.md#money).
 */
export function CreditMoney(props: { credits: string; precision?: 'minor' | 'exact'; testId?: string }) {
  const value = useCreditCatalog()?.value;
  if (!value) return null;
  return (
    <span className="money" data-testid={props.testId}>
      {creditsToMoney(props.credits, value, props.precision ?? 'minor')}
    </span>
  );
}

/** A credit price per token as money per million tokens, or nothing without a credit value. */
export function PricePerMillion(props: { creditsPerToken: string }) {
  const value = useCreditCatalog()?.value;
  if (!value) return null;
  return <span className="money">{perMillionTokens(props.creditsPerToken, value)} / M tokens</span>;
}

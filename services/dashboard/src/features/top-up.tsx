import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { components } from '../lib/api-schema.d.ts';
import { client, unwrap } from '../lib/client.ts';
import { useCreditCatalog } from '../lib/credit.tsx';
import {
  type CreditValue,
  creditsForMinor,
  creditsToMoney,
  decimalToMinor,
  formatMoney,
  groupDigits,
} from '../lib/format.ts';
import { useFormKey } from '../lib/query.ts';
import { navigate } from '../lib/router.tsx';
import { Button, Card, ErrorMessage, Field } from '../lib/ui.tsx';

type AutoTopUp = components['schemas']['AutoTopUp'];
const AUTO_TOP_UP = ['/api/v1/me/auto-top-up'] as const;

/** Credit of any amount within the operator's bounds, paid like a package order. */
export function TopUpCard() {
  const catalog = useCreditCatalog();
  const [amount, setAmount] = useState('');
  const [keepCard, setKeepCard] = useState(false);
  const form = useFormKey();
  const value = catalog?.value;
  const bounds = catalog?.topUp;
  const minor = value ? decimalToMinor(amount, value.exponent) : null;
  const submit = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/api/v1/top-ups', {
          body: {
            amount: minor ?? amount,
            ...(keepCard ? { provider: 'stripe' as const, savePaymentMethod: true } : {}),
          },
          // One key per form: sent twice (a double click, a retry), it orders once.
          params: { header: { 'idempotency-key': form.key } },
        }),
      ),
    onSuccess: (order) => navigate(`/orders/${order.id}`),
  });
  if (!value || !bounds) return null;
  return (
    <section id="top-up" aria-label="Top up credit">
      <Card title="Top up credit">
        <form
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            submit.mutate();
          }}
        >
          <ErrorMessage error={submit.error} fields={['amount', 'provider', 'savePaymentMethod']} />
          <Field
            label={`Amount (${value.currency})`}
            name="amount"
            value={amount}
            onChange={(next) => {
              setAmount(next);
              form.renew();
            }}
            autoComplete="off"
            error={submit.error}
            hint={`Between ${formatMoney(bounds.min)} and ${formatMoney(bounds.max)}; one credit is ${value.currency} ${value.perCredit}.`}
          />
          <p data-testid="top-up-credits" role="status">
            {minor
              ? `You get ${groupDigits(creditsForMinor(minor, value))} credits for ${formatMoney({ amount: minor, currency: value.currency, exponent: value.exponent })}.`
              : 'Type an amount to see the credits it buys.'}
          </p>
          <label className="check">
            <input
              type="checkbox"
              checked={keepCard}
              onChange={(event) => {
                setKeepCard(event.target.checked);
                form.renew();
              }}
            />{' '}
            Pay by card and keep the card for automatic top-ups
          </label>
          <Button type="submit" kind="primary" pending={submit.isPending} disabled={!minor}>
            Top up
          </Button>
        </form>
      </Card>
    </section>
  );
}

/** The figures of the settings as the form shows them: plain decimals of the currency. */
const plain = (text: string, currency: string) => text.replace(`${currency} `, '').replaceAll(',', '');
const thresholdText = (current: AutoTopUp, value: CreditValue) =>
  plain(creditsToMoney(current.threshold, value), value.currency);
const amountText = (current: AutoTopUp) =>
  current.amount ? plain(formatMoney(current.amount), current.amount.currency) : '';

/** Automatic top-up: below a balance, the kept card is charged a set amount once per crossing. */
export function AutoTopUpCard() {
  const catalog = useCreditCatalog();
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: AUTO_TOP_UP,
    queryFn: () => unwrap(client.GET('/api/v1/me/auto-top-up')),
  });
  const [threshold, setThreshold] = useState<string | null>(null);
  const [amount, setAmount] = useState<string | null>(null);
  const value = catalog?.value;
  const save = useMutation({
    mutationFn: (enabled: boolean) => {
      const current = settings.data!;
      const money = threshold ?? thresholdText(current, value!);
      const thresholdMinor = decimalToMinor(money, value!.exponent);
      const typedAmount = amount ?? amountText(current);
      return unwrap(
        client.PUT('/api/v1/me/auto-top-up', {
          body: {
            enabled,
            threshold: thresholdMinor === null ? money : creditsForMinor(thresholdMinor, value!),
            amount: decimalToMinor(typedAmount, value!.exponent) ?? typedAmount,
          },
        }),
      );
    },
    onSuccess: (saved) => queryClient.setQueryData(AUTO_TOP_UP, saved),
  });
  if (!value || !catalog?.topUp || !settings.data) return null;
  const data = settings.data;
  return (
    <Card title="Automatic top-up">
      {!data.cardSaved ? (
        <p>Keep a card first: top up above with “Pay by card and keep the card for automatic top-ups”.</p>
      ) : (
        <form
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate(true);
          }}
        >
          <p role="status" data-testid="auto-top-up-state">
            {data.enabled
              ? `On: when your credit falls below ${creditsToMoney(data.threshold, value)}, the kept card is charged ${data.amount ? formatMoney(data.amount) : ''} once.`
              : 'Off.'}
            {data.lastFailure ? ` The last automatic top-up was not paid: ${data.lastFailure}` : ''}
          </p>
          <ErrorMessage error={save.error} fields={['threshold', 'amount', 'enabled']} />
          <div className="row wrap align-end">
            <Field
              label={`When credit falls below (${value.currency})`}
              name="threshold"
              value={threshold ?? thresholdText(data, value)}
              onChange={setThreshold}
              error={save.error}
              autoComplete="off"
            />
            <Field
              label={`Top up by (${value.currency})`}
              name="amount"
              value={amount ?? amountText(data)}
              onChange={setAmount}
              error={save.error}
              autoComplete="off"
            />
          </div>
          <div className="row wrap">
            <Button type="submit" kind="primary" pending={save.isPending}>
              {data.enabled ? 'Save' : 'Turn on'}
            </Button>
            {data.enabled ? (
              <Button onClick={() => save.mutate(false)} pending={save.isPending}>
                Turn off
              </Button>
            ) : null}
          </div>
        </form>
      )}
    </Card>
  );
}

import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatMoney, groupDigits } from '../lib/format.ts';
import { useAction, useRead } from '../lib/query.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { Button, Card, Empty, ErrorMessage, Field, Loading, Page } from '../lib/ui.tsx';
import { AutoTopUpCard, TopUpCard } from './top-up.tsx';

/** Packages, a promotion code previewed before anything is bought, then an order to pay. */
export function BuyScreen() {
  const { search } = useLocation();
  const packages = useRead('/api/v1/catalog/packages');
  const [selected, setSelected] = useState<string | null>(search.get('package'));
  const [code, setCode] = useState('');
  const [preview, setPreview] = useState<Schemas['PromotionPreview'] | null>(null);
  const check = useAction(async () => {
    setPreview(null);
    setPreview(
      await unwrap(
        client.POST('/api/v1/promotions/preview', { body: { code: code.trim(), packageId: selected ?? '' } }),
      ),
    );
  });
  const order = useAction(async () => {
    const created = await unwrap(
      client.POST('/api/v1/orders', {
        body: { packageId: selected ?? '', ...(code.trim() ? { promotionCode: code.trim() } : {}) },
      }),
    );
    navigate(`/orders/${created.id}`);
  });
  const chosen = packages.data?.find((pack) => pack.id === selected);

  return (
    <Page title="Buy tokens or credit" actions={<Link to="/orders">Order history</Link>}>
      <ErrorMessage error={packages.error} />
      {packages.loading && !packages.data ? <Loading /> : null}
      {packages.data && packages.data.length === 0 ? (
        <Empty title="Nothing is on sale yet">
          The operator has not published a package. Credit can still be granted.
        </Empty>
      ) : null}
      {packages.data && packages.data.length > 0 ? (
        <form
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            void order.execute();
          }}
        >
          <fieldset className="card">
            <legend className="legend-title">Choose a package</legend>
            <ul className="packages">
              {packages.data.map((pack) => (
                <li key={pack.id} className={`package ${selected === pack.id ? 'selected' : ''}`}>
                  <label className="package-choice">
                    <input
                      type="radio"
                      name="package"
                      value={pack.id}
                      checked={selected === pack.id}
                      onChange={() => {
                        setSelected(pack.id);
                        setPreview(null);
                      }}
                    />
                    <span>
                      <strong>{pack.name}</strong>
                      <span className="price">{formatMoney(pack.price)}</span>
                      <span>
                        {groupDigits(pack.tokens)} {pack.counts === 'weighted' ? 'weighted units' : 'tokens'}
                        {pack.validityDays ? `, valid ${pack.validityDays} days` : ''}
                      </span>
                      <span className="muted">
                        {pack.aliases ? `For ${pack.aliases.join(', ')}` : 'For every model'}
                      </span>
                    </span>
                  </label>
                </li>
              ))}
            </ul>
          </fieldset>
          <Card title="Promotion code (optional)">
            <ErrorMessage error={check.error} fields={['code']} />
            <div className="row wrap align-end">
              <Field
                label="Code"
                name="code"
                value={code}
                onChange={setCode}
                error={check.error}
                autoComplete="off"
              />
              <Button
                onClick={() => void check.execute()}
                pending={check.pending}
                disabled={!selected || !code.trim()}
              >
                Apply
              </Button>
            </div>
            {preview ? (
              <p className="alert success" role="status" data-testid="promotion-preview">
                {preview.code}: {formatMoney(preview.priceBefore)} − {formatMoney(preview.discount)} ={' '}
                <strong>{formatMoney(preview.priceAfter)}</strong>
                {preview.bonusTokens !== '0' ? `, plus ${groupDigits(preview.bonusTokens)} bonus tokens` : ''}
                {preview.bonusCredits !== '0'
                  ? `, plus ${groupDigits(preview.bonusCredits)} bonus credits`
                  : ''}
              </p>
            ) : null}
          </Card>
          <Card>
            <ErrorMessage error={order.error} fields={['packageId', 'promotionCode']} />
            {order.error?.fieldErrors.promotionCode ? (
              <p className="field-error">{order.error.fieldErrors.promotionCode.join(' ')}</p>
            ) : null}
            <p>
              {chosen ? (
                <>
                  You order <strong>{chosen.name}</strong> for{' '}
                  <strong>
                    {formatMoney(preview?.packageId === chosen.id ? preview.priceAfter : chosen.price)}
                  </strong>
                  . Payment comes next.
                </>
              ) : (
                'Choose a package above.'
              )}
            </p>
            <Button type="submit" kind="primary" pending={order.pending} disabled={!chosen}>
              Place order
            </Button>
          </Card>
        </form>
      ) : null}
      <TopUpCard />
      <AutoTopUpCard />
    </Page>
  );
}

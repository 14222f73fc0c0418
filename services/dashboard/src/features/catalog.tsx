import { CreditMoney, PricePerMillion, useCreditCatalog } from '../lib/credit.tsx';
import { formatMoney, groupDigits } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Card, Empty, ErrorMessage, Loading, Page, TableWrap } from '../lib/ui.tsx';

export function CatalogScreen() {
  const models = useRead('/api/v1/catalog/models');
  const packages = useRead('/api/v1/catalog/packages');
  return (
    <Page title="Models and pricing">
      <Card title="Models">
        <ErrorMessage error={models.error} />
        {models.loading && !models.data ? <Loading /> : null}
        {models.data && models.data.length === 0 ? (
          <Empty title="No models are published yet">The operator has not published any model alias.</Empty>
        ) : null}
        {models.data && models.data.length > 0 ? (
          <TableWrap label="Models and prices">
            <table>
              <caption className="sr-only">Published model aliases</caption>
              <thead>
                <tr>
                  <th scope="col">Alias</th>
                  <th scope="col">APIs</th>
                  <th scope="col">Credits per input token</th>
                  <th scope="col">Credits per output token</th>
                  <th scope="col">Cache read</th>
                  <th scope="col">Cache write (5 min / 1 h)</th>
                  <th scope="col">Per call</th>
                  <th scope="col">Max output</th>
                  <th scope="col">Weighted package units per token</th>
                </tr>
              </thead>
              <tbody>
                {models.data.map((model) => (
                  <tr key={model.alias}>
                    <th scope="row">
                      <code>{model.alias}</code>
                    </th>
                    <td>{model.protocols.join(', ')}</td>
                    <td>
                      {model.price ? groupDigits(model.price.input) : 'packages only'}
                      {model.price ? <PricePerMillion creditsPerToken={model.price.input} /> : null}
                    </td>
                    <td>
                      {model.price ? groupDigits(model.price.output) : 'packages only'}
                      {model.price ? <PricePerMillion creditsPerToken={model.price.output} /> : null}
                    </td>
                    <td>
                      {model.price ? groupDigits(model.price.cacheRead) : '–'}
                      {model.price ? <PricePerMillion creditsPerToken={model.price.cacheRead} /> : null}
                    </td>
                    <td>
                      {model.price
                        ? `${groupDigits(model.price.cacheWrite)} / ${groupDigits(model.price.cacheWrite1h)}`
                        : '–'}
                    </td>
                    <td>
                      {model.price ? groupDigits(model.price.request) : '–'}
                      {model.price && model.price.request !== '0' ? (
                        <CreditMoney credits={model.price.request} precision="exact" />
                      ) : null}
                    </td>
                    <td>{groupDigits(model.maxOutputTokens)}</td>
                    <td>{groupDigits(model.packageRate)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        ) : null}
      </Card>
      <Card title="What a call costs">
        <p>
          A call paid from credit costs each part of its usage at the model's price: input tokens, output
          tokens (reasoning included), tokens read from the provider's prompt cache, tokens written to it,
          plus the price per call.
        </p>
        <CreditWorth />
        <p>
          A token package counts tokens, one per token of any model, or weighted units: each token of a model,
          whatever its part, counts the model's units per token shown above.
        </p>
      </Card>
      <Card title="Token packages">
        <ErrorMessage error={packages.error} />
        {packages.loading && !packages.data ? <Loading /> : null}
        {packages.data && packages.data.length === 0 ? (
          <Empty title="No packages on sale">Credit can still be granted by the operator.</Empty>
        ) : null}
        <ul className="packages">
          {packages.data?.map((pack) => (
            <li key={pack.id} className="package">
              <h3>{pack.name}</h3>
              <p className="price">{formatMoney(pack.price)}</p>
              <p>
                {groupDigits(pack.tokens)} {pack.counts === 'weighted' ? 'weighted units' : 'tokens'}
                {pack.validityDays ? `, valid ${pack.validityDays} days` : ', no expiry'}
              </p>
              <p className="muted">{pack.aliases ? `For ${pack.aliases.join(', ')}` : 'For every model'}</p>
              {pack.ceilings.requestsPerMinute ? (
                <p className="muted">
                  Up to {groupDigits(pack.ceilings.requestsPerMinute)} requests per minute
                </p>
              ) : null}
            </li>
          ))}
        </ul>
      </Card>
    </Page>
  );
}

/** What one credit is worth, said once on the page (prices show money per million tokens). */
function CreditWorth() {
  const value = useCreditCatalog()?.value;
  if (!value) return null;
  return (
    <p data-testid="credit-worth">
      One credit is worth {value.currency} {value.perCredit}: prices show credits per token and, beneath,
      money per million tokens.
    </p>
  );
}

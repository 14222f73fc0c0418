/** Integer strings stay integers: grouping is done on the digits, never through a float. */
export function groupDigits(value: string | bigint | number): string {
  const text = String(value);
  const negative = text.startsWith('-');
  const digits = negative ? text.slice(1) : text;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return negative ? `-${grouped}` : grouped;
}

/** Money is integer minor units with an exponent: 900 USD exp 2 -> "USD 9.00". */
export function formatMoney(money: { amount: string; currency: string; exponent: number }): string {
  const digits = money.amount.padStart(money.exponent + 1, '0');
  const whole = digits.slice(0, digits.length - money.exponent);
  const fraction = money.exponent > 0 ? `.${digits.slice(digits.length - money.exponent)}` : '';
  return `${money.currency} ${groupDigits(whole)}${fraction}`;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return 'never';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatDay(iso: string): string {
  return new Date(`${iso}T00:00:00Z`).toLocaleDateString(undefined, {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

/** YYYY-MM-DD in UTC, `daysAgo` days before today. */
export function utcDay(daysAgo = 0): string {
  const date = new Date(Date.now() - daysAgo * 86_400_000);
  return date.toISOString().slice(0, 10);
}

/** Bytes as people read them: 10485760 -> "10 MB", 1536 -> "1.5 KB" (1 KB = 1024 bytes). */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1 === 0) {
    value /= 1024;
    unit += 1;
  }
  const text = Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, '');
  return `${text} ${units[unit]}`;
}

/** What a credit is worth (GET /catalog/credit): money = credits × perCredit, an exact decimal. */
export interface CreditValue {
  currency: string;
  exponent: number;
  perCredit: string;
}

/** Digits past the currency's minor unit a price or one call's cost shows (docs/payments.md#money). */
const EXTRA_DIGITS = 6;

/**
 * Credits in money, worked out from integers (never a float) and rounded toward zero:
 * `minor` (balances, totals) to the currency's minor unit, `exact` (prices, one call's cost) with
 * up to six more digits, trailing zeros past the minor unit dropped.
 * 12345678 credits at 0.000001 USD: "USD 12.34" (minor), "USD 12.345678" (exact).
 */
export function creditsToMoney(
  credits: string | bigint,
  value: CreditValue,
  precision: 'minor' | 'exact' = 'minor',
): string {
  const [whole = '0', fraction = ''] = value.perCredit.split('.');
  const units = BigInt(`${whole}${fraction}`);
  const scale = fraction.length;
  const digits = precision === 'minor' ? value.exponent : value.exponent + EXTRA_DIGITS;
  const product = BigInt(credits) * units;
  // BigInt division truncates toward zero: a balance is never shown above what it is.
  const scaled =
    scale <= digits ? product * 10n ** BigInt(digits - scale) : product / 10n ** BigInt(scale - digits);
  const negative = scaled < 0n;
  let text = (negative ? -scaled : scaled).toString().padStart(digits + 1, '0');
  let decimals = digits;
  while (decimals > value.exponent && text.endsWith('0')) {
    text = text.slice(0, -1);
    decimals -= 1;
  }
  const integer = text.slice(0, text.length - decimals);
  const part = decimals > 0 ? `.${text.slice(text.length - decimals)}` : '';
  return `${negative ? '-' : ''}${value.currency} ${groupDigits(integer)}${part}`;
}

/** A price in credits per token as money per million tokens: 3 credits at 0.000001 USD -> "USD 3.00". */
export function perMillionTokens(creditsPerToken: string | bigint, value: CreditValue): string {
  return creditsToMoney(BigInt(creditsPerToken) * 1_000_000n, value, 'exact');
}

/** A decimal typed in the currency ("12.5") as minor units ("1250"); null when not one. */
export function decimalToMinor(text: string, exponent: number): string | null {
  const match = /^(\d{1,15})(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return null;
  const fraction = match[2] ?? '';
  if (fraction.length > exponent) return null;
  return BigInt(`${match[1]}${fraction.padEnd(exponent, '0')}`).toString();
}

/** Credits a top-up of `minor` units buys: rounded down to a whole credit, as the service does. */
export function creditsForMinor(minor: string, value: CreditValue): string {
  const [whole = '0', fraction = ''] = value.perCredit.split('.');
  const units = BigInt(`${whole}${fraction}`);
  return (
    (BigInt(minor) * 10n ** BigInt(fraction.length)) /
    (units * 10n ** BigInt(value.exponent))
  ).toString();
}

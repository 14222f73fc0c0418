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

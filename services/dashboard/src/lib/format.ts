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

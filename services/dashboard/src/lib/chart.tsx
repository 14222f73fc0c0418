import { formatDay, groupDigits } from './format.ts';

export interface UsageRow {
  day: string;
  /** The alias; null in a summary by key. */
  alias: string | null;
  keyId?: string;
  requests: number;
  /** Input read neither from nor into a cache. */
  inputTokens: string;
  outputTokens: string;
  cacheReadTokens?: string;
  cacheWriteTokens?: string;
  cacheWrite1hTokens?: string;
}

/** What a row is about: its alias, or its key in a summary by key. */
export function rowLabel(row: UsageRow): string {
  return row.alias ?? row.keyId ?? '';
}

/** Every token of a row, whichever part. */
export function rowTokens(row: UsageRow): bigint {
  return (
    BigInt(row.inputTokens) +
    BigInt(row.outputTokens) +
    BigInt(row.cacheReadTokens ?? '0') +
    BigInt(row.cacheWriteTokens ?? '0') +
    BigInt(row.cacheWrite1hTokens ?? '0')
  );
}

const COLOURS = ['#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2'];

/**
 * Tokens per day stacked by alias, drawn as SVG by hand: a bar chart is a few dozen lines, and a
 * chart library would cost more of the 250 KB budget than the whole app. Token counts only size
 * the bars (Number is fine for pixels); every figure shown as text comes from the integer strings.
 */
export function UsageChart(props: { rows: UsageRow[]; days: string[] }) {
  const aliases = [...new Set(props.rows.map(rowLabel))].sort();
  const totals = new Map<string, Map<string, bigint>>();
  for (const row of props.rows) {
    const perAlias = totals.get(row.day) ?? new Map<string, bigint>();
    perAlias.set(rowLabel(row), (perAlias.get(rowLabel(row)) ?? 0n) + rowTokens(row));
    totals.set(row.day, perAlias);
  }
  const dayTotal = (day: string) =>
    [...(totals.get(day)?.values() ?? [])].reduce((sum, value) => sum + value, 0n);
  let max = 0n;
  for (const day of props.days) {
    const total = dayTotal(day);
    if (total > max) max = total;
  }
  // Room for the y-axis labels on the left and half a day label on the right, so none is clipped.
  const left = 56;
  const right = 24;
  const top = 10;
  const plotWidth = 640;
  const height = 200;
  const width = left + plotWidth + right;
  const barWidth = plotWidth / Math.max(props.days.length, 1);
  const grandTotal = props.days.reduce((sum, day) => sum + dayTotal(day), 0n);
  const scale = niceCeiling(max);
  const ticks = [0, 1, 2, 3, 4].map((step) => (scale * BigInt(step)) / 4n);
  const y = (value: bigint) =>
    scale === 0n ? height : height - (Number(value) / Number(scale)) * (height - top);

  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${width} ${height + 24}`}
        role="img"
        aria-label={`Tokens per day by model alias: ${groupDigits(grandTotal)} tokens over ${props.days.length} days`}
      >
        {ticks.map((tick) => (
          <g key={String(tick)}>
            <line x1={left} y1={y(tick)} x2={left + plotWidth} y2={y(tick)} className="grid" />
            <text x={left - 6} y={y(tick) + 4} textAnchor="end" className="tick">
              {compact(tick)}
            </text>
          </g>
        ))}
        <line x1={left} y1={top} x2={left} y2={height} className="axis" />
        <line x1={left} y1={height} x2={left + plotWidth} y2={height} className="axis" />
        {props.days.map((day, index) => {
          let offset = height;
          const perAlias = totals.get(day);
          return (
            <g key={day}>
              {aliases.map((alias, aliasIndex) => {
                const value = perAlias?.get(alias) ?? 0n;
                if (value === 0n || scale === 0n) return null;
                const barHeight = Math.max(2, height - y(value));
                offset -= barHeight;
                return (
                  <rect
                    key={alias}
                    x={left + index * barWidth + barWidth * 0.15}
                    y={offset}
                    width={barWidth * 0.7}
                    height={barHeight}
                    fill={COLOURS[aliasIndex % COLOURS.length]}
                  >
                    <title>{`${formatDay(day)} · ${alias}: ${groupDigits(value)} tokens`}</title>
                  </rect>
                );
              })}
              {props.days.length <= 16 || index % Math.ceil(props.days.length / 8) === 0 ? (
                <text
                  x={left + index * barWidth + barWidth / 2}
                  y={height + 16}
                  textAnchor="middle"
                  className="tick"
                >
                  {formatDay(day)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption className="legend">
        {aliases.length === 0 ? (
          <span>No usage in this period.</span>
        ) : (
          aliases.map((alias, index) => (
            <span key={alias}>
              <i style={{ background: COLOURS[index % COLOURS.length] }} aria-hidden="true" /> {alias}
            </span>
          ))
        )}
      </figcaption>
    </figure>
  );
}

/** The axis top: the smallest 1, 2 or 5 × 10^n at or above `value` (0 stays 0). */
export function niceCeiling(value: bigint): bigint {
  if (value <= 0n) return 0n;
  let power = 1n;
  while (power * 10n <= value) power *= 10n;
  for (const step of [1n, 2n, 5n, 10n]) if (step * power >= value) return step * power;
  return 10n * power;
}

/** A y-axis label: 0, 950, 1.5k, 20k, 3M, 1.2B (axis labels only; exact figures are in the table). */
export function compact(value: bigint): string {
  const units: [bigint, string][] = [
    [1_000_000_000n, 'B'],
    [1_000_000n, 'M'],
    [1_000n, 'k'],
  ];
  for (const [size, suffix] of units) {
    if (value >= size) {
      const tenths = (value * 10n) / size;
      const whole = tenths / 10n;
      const fraction = tenths % 10n;
      return `${whole}${fraction === 0n || whole >= 100n ? '' : `.${fraction}`}${suffix}`;
    }
  }
  return String(value);
}

/** Every day from `from` to `to` inclusive (YYYY-MM-DD, UTC). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let time = Date.parse(`${from}T00:00:00Z`); time <= end && days.length < 400; time += 86_400_000) {
    days.push(new Date(time).toISOString().slice(0, 10));
  }
  return days;
}

import { formatDay, groupDigits } from './format.ts';

export interface UsageRow {
  day: string;
  alias: string;
  requests: number;
  inputTokens: string;
  outputTokens: string;
}

const COLOURS = ['#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2'];

/**
 * Tokens per day stacked by alias, drawn as SVG by hand: a bar chart is a few dozen lines, and a
 * chart library would cost more of the 250 KB budget than the whole app. Token counts only size
 * the bars (Number is fine for pixels); every figure shown as text comes from the integer strings.
 */
export function UsageChart(props: { rows: UsageRow[]; days: string[] }) {
  const aliases = [...new Set(props.rows.map((row) => row.alias))].sort();
  const totals = new Map<string, Map<string, bigint>>();
  for (const row of props.rows) {
    const perAlias = totals.get(row.day) ?? new Map<string, bigint>();
    perAlias.set(
      row.alias,
      (perAlias.get(row.alias) ?? 0n) + BigInt(row.inputTokens) + BigInt(row.outputTokens),
    );
    totals.set(row.day, perAlias);
  }
  const dayTotal = (day: string) =>
    [...(totals.get(day)?.values() ?? [])].reduce((sum, value) => sum + value, 0n);
  let max = 0n;
  for (const day of props.days) {
    const total = dayTotal(day);
    if (total > max) max = total;
  }
  const width = 640;
  const height = 200;
  const barWidth = width / Math.max(props.days.length, 1);
  const grandTotal = props.days.reduce((sum, day) => sum + dayTotal(day), 0n);

  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${width} ${height + 24}`}
        role="img"
        aria-label={`Tokens per day by model alias: ${groupDigits(grandTotal)} tokens over ${props.days.length} days`}
      >
        <line x1="0" y1={height} x2={width} y2={height} className="axis" />
        {props.days.map((day, index) => {
          let offset = height;
          const perAlias = totals.get(day);
          return (
            <g key={day}>
              {aliases.map((alias, aliasIndex) => {
                const value = perAlias?.get(alias) ?? 0n;
                if (value === 0n || max === 0n) return null;
                const barHeight = Math.max(2, (Number(value) / Number(max)) * (height - 10));
                offset -= barHeight;
                return (
                  <rect
                    key={alias}
                    x={index * barWidth + barWidth * 0.15}
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
                  x={index * barWidth + barWidth / 2}
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

/** Every day from `from` to `to` inclusive (YYYY-MM-DD, UTC). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let time = Date.parse(`${from}T00:00:00Z`); time <= end && days.length < 400; time += 86_400_000) {
    days.push(new Date(time).toISOString().slice(0, 10));
  }
  return days;
}

/** Postgres refused a number past its column's range (SQLSTATE 22003, numeric_value_out_of_range). */
export function isOutOfRange(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '22003';
}

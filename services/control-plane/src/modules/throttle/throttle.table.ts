export interface ThrottleBucketsTable {
  key: string;
  window_started_at: Date;
  hits: number;
  blocked_until: Date | null;
}

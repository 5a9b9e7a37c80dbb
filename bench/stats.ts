/** Small statistics helpers for the benchmark: median, min–max, percentiles. */

export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
  samples: number[];
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    median: percentile(sorted, 50),
    min: sorted[0] ?? NaN,
    max: sorted[sorted.length - 1] ?? NaN,
    n: sorted.length,
    samples,
  };
}

/** Percentile by linear interpolation between closest ranks; `sorted` ascending. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** Element-wise ratio of two equally long sample lists (paired rounds), summarized. */
export function pairedRatio(a: number[], b: number[]): Summary {
  return summarize(a.map((x, i) => x / b[i]));
}

export function fmt(x: number, digits = 2): string {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString('en-US');
  return x.toFixed(digits);
}

export function fmtBytes(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const abs = Math.abs(x);
  if (abs >= 1024 * 1024) return `${(x / 1024 / 1024).toFixed(2)} MiB`;
  if (abs >= 1024) return `${(x / 1024).toFixed(1)} KiB`;
  return `${Math.round(x)} B`;
}

/** "median (min–max)" */
export function fmtSummary(s: Summary, f: (x: number) => string = fmt): string {
  return s.n <= 1 ? f(s.median) : `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

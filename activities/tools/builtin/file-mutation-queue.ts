/**
 * Per-path async mutex: `write` and `edit` on the same absolute path run one after the other within this process
 * (Pi reference §C.0 "Mutation queue"). Different paths run concurrently.
 */
const tails = new Map<string, Promise<void>>();
const counts = new Map<string, number>();

export async function withFileMutationQueue<T>(absolutePath: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(absolutePath) ?? Promise.resolve();
  let release!: () => void;
  const current = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => current);
  tails.set(absolutePath, tail);
  counts.set(absolutePath, (counts.get(absolutePath) ?? 0) + 1);
  try {
    await previous;
    return await fn();
  } finally {
    release();
    if (tails.get(absolutePath) === tail) tails.delete(absolutePath);
    const left = (counts.get(absolutePath) ?? 1) - 1;
    if (left > 0) counts.set(absolutePath, left);
    else counts.delete(absolutePath);
  }
}

/** How many mutations of `absolutePath` are running or waiting in this process (tests wait on it). */
export function queuedMutations(absolutePath: string): number {
  return counts.get(absolutePath) ?? 0;
}

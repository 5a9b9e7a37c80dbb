/**
 * Per-path async mutex: `write` and `edit` on the same absolute path run one after the other within this process
 * (Pi reference §C.0 "Mutation queue"). Different paths run concurrently.
 */
const tails = new Map<string, Promise<void>>();

export async function withFileMutationQueue<T>(absolutePath: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(absolutePath) ?? Promise.resolve();
  let release!: () => void;
  const current = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => current);
  tails.set(absolutePath, tail);
  try {
    await previous;
    return await fn();
  } finally {
    release();
    if (tails.get(absolutePath) === tail) tails.delete(absolutePath);
  }
}

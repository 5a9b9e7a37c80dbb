/** Pi's abort rule (§C.0): a tool rejects with `Operation aborted` when its signal is aborted. */
export function abortedError(): Error {
  return new Error('Operation aborted');
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError();
}

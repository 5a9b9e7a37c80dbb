/** Pi's `executeBashWithOperations`: user-typed shell commands (not the tool), with a structured result. */
import type { BashOperations } from './bash-operations.js';
import { OutputAccumulator, sanitizeOutput } from './bash-output.js';
import { toolEnvironment } from './tool-env.js';

export interface BashExecutionResult {
  /** Tail-truncated output, ANSI escapes and carriage returns removed. */
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
}

/**
 * Pi's `executeBashWithOperations` (used for user-typed shell commands, not by the tool): same streaming and temp file,
 * output sanitised, and a structured result instead of throwing.
 */
export async function executeBashWithOperations(
  command: string,
  cwd: string,
  operations: BashOperations,
  options: { signal?: AbortSignal; onChunk?: (text: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<BashExecutionResult> {
  const acc = new OutputAccumulator(sanitizeOutput);
  const decoder = new TextDecoder('utf-8');
  let exitCode: number | undefined;
  let cancelled = false;
  try {
    const result = await operations.exec(command, cwd, {
      onData: (data) => {
        acc.push(data);
        if (options.onChunk) options.onChunk(sanitizeOutput(decoder.decode(data, { stream: true })));
      },
      signal: options.signal,
      env: { ...toolEnvironment(), ...options.env },
    });
    exitCode = result.exitCode ?? undefined;
  } catch (error) {
    if (error instanceof Error && error.message === 'aborted') cancelled = true;
    else {
      await acc.close();
      throw error;
    }
  }
  acc.finish();
  await acc.close();
  const t = acc.snapshot();
  return { output: t.content, exitCode, cancelled, truncated: t.truncated, fullOutputPath: acc.fullOutputPath };
}

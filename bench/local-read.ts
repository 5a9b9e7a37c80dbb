/**
 * Section 1, local read (docs/local-tools.md): Keel runs with one built-in `read` per turn, placed as a regular
 * activity and as a local activity, measured in the overhead section's rounds beside the engine floor (one model
 * activity + one tool activity per turn). The local placement saves the tool's round trip through the server, so its
 * target is below the floor.
 */
import type { AgentClient } from '../client/agent-client.js';
import type { AgentRunInput } from '../common/run.js';
import { keelInput, keelRun } from './runs.js';
import { pairedRatio, summarize, type Summary } from './stats.js';

export const LOCAL_READ_VARIANTS = [
  { name: 'keel + read (activity)', model: 'bench-read', tool: 'read' },
  { name: 'keel + read (local activity)', model: 'bench-read-local', tool: 'read_local' },
] as const;

/** One contender per variant, for the overhead rounds; each run is checked to have made all its turns. */
export function localReadContenders(
  keel: AgentClient,
  turns: number,
): { name: string; run: () => Promise<{ ms: number; workflowId: string }> }[] {
  return LOCAL_READ_VARIANTS.map((v) => {
    const input: AgentRunInput = keelInput(v.model, [v.tool], turns);
    return {
      name: v.name,
      run: async () => {
        const k = await keelRun(keel, input);
        if (k.result.turns !== turns || k.result.status !== 'stopped')
          throw new Error(`${v.name}: ${k.result.status}, ${k.result.turns} turns`);
        return k;
      },
    };
  });
}

export interface LocalReadResult {
  variants: {
    name: string;
    tool: string;
    msPerTurn: Summary;
    overFloor: Summary;
    cpuPerTurn: unknown;
    /** From the last run's history: events, workflow tasks and activities per turn. */
    profile: { eventsPerTurn: number; workflowTasksPerTurn: number; activities: Record<string, { perTurn: number }> };
  }[];
  /** Keel with `read` as a local activity ÷ the floor, paired by round (target < 1). */
  localOverFloor: Summary;
  /** The local placement ÷ the activity placement, paired by round. */
  localOverActivity: Summary;
}

export async function localReadResult(
  wall: Map<string, number[]>,
  floor: number[],
  cpuPerTurn: (name: string) => unknown,
  profile: (name: string) => Promise<LocalReadResult['variants'][number]['profile']>,
): Promise<LocalReadResult> {
  const [activity, local] = LOCAL_READ_VARIANTS.map((v) => wall.get(v.name)!);
  return {
    variants: await Promise.all(
      LOCAL_READ_VARIANTS.map(async (v) => ({
        name: v.name,
        tool: v.tool,
        msPerTurn: summarize(wall.get(v.name)!),
        overFloor: pairedRatio(wall.get(v.name)!, floor),
        cpuPerTurn: cpuPerTurn(v.name),
        profile: await profile(v.name),
      })),
    ),
    localOverFloor: pairedRatio(local, floor),
    localOverActivity: pairedRatio(local, activity),
  };
}

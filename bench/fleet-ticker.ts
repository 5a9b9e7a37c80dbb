/**
 * The model of the fleet stream section (bench/fleet-stream.ts), run in a bench worker process: each reply streams
 * BENCH_FLEET_TOKENS (default 40) tokens, one every BENCH_FLEET_TICK_MS (default 20) ms, each token the wall-clock ms
 * it left the provider (`@<ms> `), so a reader in another process measures token → consumer on the shared clock; every
 * reply ends with a no-op tool call (runs stop by `maxTurns`).
 */
import type { ModelProvider } from '../activities/model/provider.js';
import { emptyUsage, type AssistantMessage } from '../common/messages.js';

export const FLEET_TOKENS = Math.max(1, Number(process.env.BENCH_FLEET_TOKENS ?? 40));
const TICK_MS = Math.max(1, Number(process.env.BENCH_FLEET_TICK_MS ?? 20));

/** The send stamps (wall-clock ms) of the tokens in `text`. */
export const tokenStamps = (text: string): number[] => [...text.matchAll(/@(\d+) /g)].map((m) => Number(m[1]));

export function fleetTicker(): ModelProvider {
  return {
    async stream(request, signal, onPartial) {
      const message: AssistantMessage = {
        role: 'assistant',
        content: [{ type: 'text', text: '' }],
        api: 'bench',
        provider: 'bench',
        model: request.modelId,
        usage: emptyUsage(),
        stopReason: 'toolUse',
        timestamp: Date.now(),
      };
      const block = message.content[0] as { text: string };
      for (let i = 0; i < FLEET_TOKENS && !signal.aborted; i++) {
        await new Promise((r) => setTimeout(r, TICK_MS));
        const token = `@${Date.now()} `;
        block.text += token;
        onPartial({ ...message, content: [{ type: 'text', text: block.text }] }, { block: 0, text: token });
      }
      message.content.push({ type: 'toolCall', id: `noop-${Date.now()}`, name: 'noop', arguments: {} });
      return message;
    },
  };
}

/**
 * Section 9, codec (`BENCH_ONLY=codec`): what payload encryption (README "Encryption") costs per turn. One worker
 * process serves two Keel task queues, one without encryption and one with a key ring (a throwaway bench key); the
 * same 20-turn no-op runs go to each, alternating after a warm-up, BENCH_ROUNDS pairs × BENCH_CODEC_RUNS runs each.
 * Reports both medians in ms/turn, the added ms per turn and the ratio (paired by round). Goal: ≤ 5 % of a turn.
 */
import { AgentClient } from '../client/agent-client.js';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, isEncrypted, newKeyRingJson, parseKeyRing } from '../node-common/encryption.js';
import { ROUNDS, type Bench } from './context.js';
import { keelInput, keelRun } from './runs.js';
import { fmt, pairedRatio, summarize, type Summary } from './stats.js';

const TURNS = 20;
const PLAIN_QUEUE = 'bench-keel-codec-plain';
const SEALED_QUEUE = 'bench-keel-codec-sealed';

export interface CodecResult {
  turns: number;
  runsPerRound: number;
  plainMsPerTurn: Summary;
  sealedMsPerTurn: Summary;
  addedMsPerTurn: Summary;
  ratio: Summary;
  /**
   * The codec alone, in this process: opening and sealing again every sealed payload of one encrypted run's history,
   * per turn (each payload is sealed once and opened at least once by the parties), and how many payloads that is.
   */
  codecCpuMsPerTurn: number;
  sealedPayloadsPerTurn: number;
}

export async function codecSection(b: Bench): Promise<CodecResult> {
  const runsPerRound = Math.max(1, Number(process.env.BENCH_CODEC_RUNS ?? 3));
  const keys = newKeyRingJson('bench');
  b.log(`codec: ${TURNS}-turn runs with and without encryption, ${ROUNDS} rounds × ${runsPerRound} runs each`);
  const w = b.spawnWorker('codec', [PLAIN_QUEUE, SEALED_QUEUE], undefined, false, {
    encryptedQueues: [SEALED_QUEUE],
    encryptionKeys: keys,
  });
  await w.ready;
  const address = b.server.address;
  const plain = await AgentClient.connect({ address, taskQueue: PLAIN_QUEUE, encryption: false });
  const sealed = await AgentClient.connect({
    address,
    taskQueue: SEALED_QUEUE,
    encryption: { keyRing: parseKeyRing(keys, 'bench') },
  });
  try {
    const input = keelInput('bench-noop', ['noop'], TURNS);
    const perTurn = async (client: AgentClient) => {
      let ms = 0;
      for (let i = 0; i < runsPerRound; i++) {
        const k = await keelRun(client, input);
        if (k.result.turns !== TURNS || k.result.status !== 'stopped')
          throw new Error(`codec run: ${k.result.status}, ${k.result.turns} turns`);
        ms += k.ms;
      }
      return ms / runsPerRound / TURNS;
    };
    await perTurn(plain); // warm-up
    await perTurn(sealed);
    const a: number[] = [];
    const s: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        a.push(await perTurn(plain));
        s.push(await perTurn(sealed));
      } else {
        s.push(await perTurn(sealed));
        a.push(await perTurn(plain));
      }
      b.log(`  round ${r + 1}: plain ${fmt(a[r])}, encrypted ${fmt(s[r])} ms/turn`);
    }
    // the codec's own cost: every sealed payload of one run's raw history, opened and sealed again
    const codec = new EncryptionCodec(parseKeyRing(keys, 'bench'));
    const one = await keelRun(sealed, input);
    const raw = await sealed.client.workflowService.getWorkflowExecutionHistory({
      namespace: 'default',
      execution: { workflowId: one.workflowId },
    });
    const found: Payload[] = [];
    const walk = (v: unknown) => {
      if (!v || typeof v !== 'object') return;
      if (isEncrypted(v as Payload) && (v as Payload).data) found.push(v as Payload);
      else for (const x of Object.values(v)) walk(x);
    };
    walk(raw.history?.events ?? []);
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) await codec.encode(await codec.decode(found));
    const codecCpuMsPerTurn = (performance.now() - t0) / 20 / TURNS;
    b.log(`  codec alone: ${found.length} sealed payloads, ${fmt(codecCpuMsPerTurn, 3)} ms/turn`);
    return {
      codecCpuMsPerTurn,
      sealedPayloadsPerTurn: found.length / TURNS,
      turns: TURNS,
      runsPerRound,
      plainMsPerTurn: summarize(a),
      sealedMsPerTurn: summarize(s),
      addedMsPerTurn: summarize(s.map((x, i) => x - a[i])),
      ratio: pairedRatio(s, a),
    };
  } finally {
    await plain.close();
    await sealed.close();
    await w.stop();
  }
}

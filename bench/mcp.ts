/**
 * Section 11, mcp (`BENCH_ONLY=mcp`): what an MCP tool call costs over a local tool call (issue 24). One worker process
 * serves two Keel task queues, one with the MCP server `@modelcontextprotocol/server-everything` over stdio; 20-turn
 * runs call a tool every turn — the local no-op tool on one queue, the server's `echo` on the other — alternating after
 * a warm-up (which also starts the server), BENCH_ROUNDS pairs × BENCH_MCP_RUNS runs each. Reports both medians in
 * ms/turn, the added ms per call (paired by round) and the ratio.
 */
import { fileURLToPath } from 'node:url';
import { AgentClient } from '../client/agent-client.js';
import { ROUNDS, type Bench } from './context.js';
import { keelInput, keelRun } from './runs.js';
import { fmt, pairedRatio, summarize, type Summary } from './stats.js';

const TURNS = 20;
const LOCAL_QUEUE = 'bench-keel-mcp-local';
const MCP_QUEUE = 'bench-keel-mcp-server';
const EVERYTHING = fileURLToPath(new URL('../node_modules/.bin/mcp-server-everything', import.meta.url));

export interface McpResult {
  turns: number;
  runsPerRound: number;
  localMsPerTurn: Summary;
  mcpMsPerTurn: Summary;
  addedMsPerCall: Summary;
  ratio: Summary;
}

export async function mcpSection(b: Bench): Promise<McpResult> {
  const runsPerRound = Math.max(1, Number(process.env.BENCH_MCP_RUNS ?? 3));
  b.log(`mcp: ${TURNS}-turn runs, one tool call a turn: local vs MCP (stdio), ${ROUNDS} rounds × ${runsPerRound} runs`);
  const w = b.spawnWorker('mcp', [LOCAL_QUEUE, MCP_QUEUE], undefined, false, {
    mcpQueues: [MCP_QUEUE],
    // echo has no annotations (MCP's default: destructive, so it would wait for approval): the bench says never
    mcpServers: { everything: { command: EVERYTHING, args: ['stdio'], tools: { echo: { approval: 'never' } } } },
  });
  await w.ready;
  const address = b.server.address;
  const local = await AgentClient.connect({ address, taskQueue: LOCAL_QUEUE, encryption: false });
  const mcp = await AgentClient.connect({ address, taskQueue: MCP_QUEUE, encryption: false });
  try {
    const perTurn = async (client: AgentClient, model: string, tool: string) => {
      let ms = 0;
      for (let i = 0; i < runsPerRound; i++) {
        const k = await keelRun(client, keelInput(model, [tool], TURNS));
        if (k.result.turns !== TURNS || k.result.status !== 'stopped')
          throw new Error(`mcp run (${tool}): ${k.result.status}, ${k.result.turns} turns`);
        ms += k.ms;
      }
      return ms / runsPerRound / TURNS;
    };
    const localTurn = () => perTurn(local, 'bench-noop', 'noop');
    const mcpTurn = () => perTurn(mcp, 'bench-mcp-echo', 'everything__echo');
    await localTurn(); // warm-up; the MCP server starts at its first use
    await mcpTurn();
    const a: number[] = [];
    const m: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        a.push(await localTurn());
        m.push(await mcpTurn());
      } else {
        m.push(await mcpTurn());
        a.push(await localTurn());
      }
      b.log(`  round ${r + 1}: local tool ${fmt(a[r])}, MCP tool ${fmt(m[r])} ms/turn`);
    }
    return {
      turns: TURNS,
      runsPerRound,
      localMsPerTurn: summarize(a),
      mcpMsPerTurn: summarize(m),
      addedMsPerCall: summarize(m.map((x, i) => x - a[i])),
      ratio: pairedRatio(m, a),
    };
  } finally {
    await local.close();
    await mcp.close();
    await w.stop();
  }
}

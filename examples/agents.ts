/**
 * A tools module with a sub-agent (README "Sub-agents"): `npx keel dev --tools-module examples/agents.ts` registers the
 * `researcher` sub-agent; then `npx keel run "Compare durable agent runtimes." --model
 * scripted/examples/lead-rules.json --tools researcher`. Offline: both models are scripted rule files. Outside this
 * repository import from 'keel' instead.
 */
import { defineAgent } from '../index.js';

export const researcher = defineAgent({
  name: 'researcher',
  description: 'Researches one topic and answers in one sentence.',
  systemPrompt: 'You are a careful researcher. Answer in one sentence.',
  tools: [],
  model: 'scripted/examples/researcher-rules.json',
  maxTurns: 5,
});

export const agents = [researcher];

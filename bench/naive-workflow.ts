/**
 * A deliberately naive agent loop (bench only): what peers do, sending the whole transcript into every model
 * activity. Same scripted replies and tools as Keel's history section, so the two histories compare turn for turn.
 * Its model activity input grows by a tool result per turn and hits Temporal's 2 MB payload limit.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { AssistantMessage, Message, ToolCall } from '../common/messages.js';
import type { BenchActivities } from './bench-activities.js';

const { naiveCallModel, naiveRunTool } = proxyActivities<BenchActivities>({
  startToCloseTimeout: '1m',
  retry: { maximumAttempts: 3 },
});

export interface NaiveInput {
  model: string;
  prompt: string;
  tools: string[];
  maxTurns: number;
}

export async function naiveWorkflow(input: NaiveInput): Promise<{ turns: number }> {
  const transcript: Message[] = [{ role: 'user', content: input.prompt, timestamp: 0 }];
  let turns = 0;
  while (turns < input.maxTurns) {
    const assistant: AssistantMessage = await naiveCallModel({
      model: input.model,
      messages: transcript,
      tools: input.tools,
    });
    transcript.push(assistant);
    turns += 1;
    const calls = assistant.content.filter((b): b is ToolCall => b.type === 'toolCall');
    if (calls.length === 0) break;
    for (const call of calls) transcript.push(await naiveRunTool(call));
  }
  return { turns };
}

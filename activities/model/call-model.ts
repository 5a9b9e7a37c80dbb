import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ModelHeartbeat } from '../../common/events.js';
import type { CallModelInput, CallModelResult } from '../../common/wire.js';
import type { AgentHooks } from '../hooks.js';
import { startHeartbeat } from '../heartbeat.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import type { TranscriptCache } from '../transcript.js';
import type { ModelProvider, ModelRegistry } from './provider.js';

export interface CallModelDeps {
  models: ModelRegistry;
  tools: Map<string, ToolDefinition>;
  hooks: AgentHooks;
  transcript: TranscriptCache;
}

/** The provider serving `provider/model-id`: its own entry, else `*`. */
export function providerFor(models: ModelRegistry, model: string): { provider?: ModelProvider; prefix: string; modelId: string } {
  const slash = model.indexOf('/');
  const prefix = model.slice(0, slash);
  return { provider: models[prefix] ?? models['*'], prefix, modelId: model.slice(slash + 1) };
}

/**
 * Activity `callModel`: reads transcript[0, messageCount) by reference, applies `transformContext`, streams the
 * provider's answer with the partial message heartbeated (≤ 4/s), and returns the final message only.
 */
export function createCallModel(deps: CallModelDeps) {
  return async function callModel(input: CallModelInput): Promise<CallModelResult> {
    const ctx = Context.current();
    const { provider, prefix, modelId } = providerFor(deps.models, input.model);
    if (!provider) {
      throw ApplicationFailure.nonRetryable(`No model provider for "${input.model}" on this worker (providers: ${Object.keys(deps.models).join(', ')})`, 'ModelError.NotFound');
    }
    let messages = await deps.transcript.messages(input.run, input.messageCount);
    if (deps.hooks.transformContext) {
      messages = await deps.hooks.transformContext(messages, ctx.cancellationSignal, { workflowId: input.run.workflowId, model: input.model, turn: input.turn });
    }
    const tools = input.tools.flatMap((name) => {
      const t = deps.tools.get(name);
      return t ? [{ name: t.name, description: t.description, parameters: t.parameters }] : [];
    });
    const heartbeat = startHeartbeat(ctx);
    try {
      const message = await provider.stream(
        { provider: prefix, modelId, systemPrompt: input.systemPrompt, messages, tools, options: input.options },
        ctx.cancellationSignal,
        (partial) => heartbeat.update({ kind: 'model', partial } satisfies ModelHeartbeat),
      );
      return { message };
    } finally {
      heartbeat.stop();
    }
  };
}

/**
 * The tool batch's view of today's `Session` (issue 22: no tool-batch function takes the session). One adapter, used
 * at the one call site in turn-loop.ts, until the session is an object with these members itself. Getters and
 * setters read and write the session live: `abort` changes while a batch runs.
 */
import type { AgentEvent } from '../../common/events.js';
import type { Message, ToolCall } from '../../common/messages.js';
import { awaitApproval, isPending } from './approvals.js';
import { appendMessage, runCancellable, type Session } from './session.js';
import type { ToolBatchHost } from './tool-batch.js';
import type { ToolHome } from './tool-placement.js';
import { publishDetails } from './visibility.js';

export function toolBatchHost(s: Session): ToolBatchHost {
  const home: ToolHome = {
    get homeQueue() {
      return s.state.homeQueue;
    },
    set homeQueue(queue: string | undefined) {
      s.state.homeQueue = queue;
    },
    get rehomed() {
      return s.state.rehomed;
    },
    set rehomed(text: string | undefined) {
      s.state.rehomed = text;
    },
    get notHome() {
      return s.notHome;
    },
    set notHome(queue: string | undefined) {
      s.notHome = queue;
    },
    get rehoming() {
      return s.rehoming;
    },
    set rehoming(move: Promise<void> | undefined) {
      s.rehoming = move;
    },
  };
  return {
    get config() {
      return s.state.config;
    },
    get tools() {
      return s.state.tools;
    },
    run: s.run,
    get digests() {
      return s.digests;
    },
    get toolSummaries() {
      return s.toolSummaries;
    },
    get abort() {
      return s.abort;
    },
    home,
    runningTools: s.runningTools,
    get continueAsNewRetryAt() {
      return s.continueAsNewRetryAt;
    },
    set continueAsNewRetryAt(size: number) {
      s.continueAsNewRetryAt = size;
    },
    append: (message: Message) => appendMessage(s, message),
    emit: (event: AgentEvent) => s.events.emit(event),
    publishDetails: () => publishDetails(s),
    runCancellable: <T>(fn: () => Promise<T>) => runCancellable(s, fn),
    awaitApproval: (call: ToolCall, assistantIndex: number, args: unknown, argsDigest: string) =>
      awaitApproval(s, call, assistantIndex, args, argsDigest),
    isPending: (toolCallId: string, assistantIndex: number) => isPending(s, toolCallId, assistantIndex),
  };
}

/**
 * Keel's versioning policy, in code. Every change of `agentWorkflow`'s or `agentBatchWorkflow`'s command sequence
 * (activities, local activities, timers, child workflows, signals sent, search-attribute upserts, markers,
 * continue-as-new, the terminal command) made after a release is guarded by one of these ids: `patched(id)` is true
 * for executions that reach the point on a worker with the change, and false when replaying a history recorded
 * before it, so runs in flight across a deploy replay the path they took. The replay corpus of every release
 * (test/fixtures/histories/<version>/) proves it in CI. An id may be moved to `deprecatePatch` once no open run can
 * predate it, and deleted one release after that (docs/versioning.md). Since 0.13.0 the ids before `impliesEarlier` are
 * asked through `since(id)` (workflows/since.ts): a run that has that one marker records none of theirs.
 */
export const PATCH = {
  /** 0.2.0: a `cancel` signal asks Temporal to cancel the run from a local activity (no failed workflow task). */
  cancelFromLocalActivity: 'keel-0.2-cancel-local-activity',
  /** 0.2.0: a session that goes idle with queued messages starts the next agent run instead of waiting. */
  answerQueued: 'keel-0.2-answer-queued',
  /** 0.2.0: an idle session continues-as-new onto the deployment's new current version. */
  upgradeOnIdle: 'keel-0.2-upgrade-on-idle',
  /** 0.2.0: a session started with neither prompt nor messages waits for its first message (was: InvalidAgentInput). */
  sessionAwaitsFirstMessage: 'keel-session-awaits-first-message',
  /** 0.2.0: a session whose last agent run ended in a model error ends Failed. */
  sessionFailed: 'keel-0.2-session-failed',
  /** 0.2.0: a later tool call reusing an earlier call's id in one message is refused, not executed. */
  duplicateCallIds: 'keel-0.2-duplicate-call-ids',
  /** 0.2.0: continue-as-new when this run's history grew past the limit, not when the carried transcript is large. */
  historyGrowth: 'keel-0.2-history-growth',
  /** 0.2.0: a malformed assistant message from the model activity becomes an error message. */
  malformedModelOutput: 'keel-0.2-malformed-model-output',
  /** 0.3.0: a turn end upserts search attributes only every `TURN_UPSERT_STRIDE` turns (status changes still do). */
  coarseTurnUpserts: 'keel-0.3-coarse-turn-upserts',
  /** 0.3.0: worker-local tools run on the run's home worker (its own task queue); a lost home is replaced. */
  workerAffinity: 'keel-0.3-worker-affinity',
  /**
   * 0.4.0: a run whose Keel search attributes already hold the values (set at start by `AgentClient`, or carried by
   * continue-as-new) does not upsert them again at its first publish; a run failing with them stale marks KeelStatus.
   */
  startAttributes: 'keel-0.4-start-attributes',
  /**
   * 0.4.0: calls of tools reported with `localActivity` (and a batch's preparation when every call is one) run as local
   * activities, a marker each instead of activity events; a worker-local call refused off its home runs as before.
   */
  localTools: 'keel-0.4-local-tools',
  /**
   * 0.4.0: a batch is a sliding window (workflows/batch/window.ts): children started with `ParentClosePolicy.ABANDON`
   * report their outcome by signal and keep running across the batch's continue-as-new, which no longer drains. Checked
   * once at the start of every batch run (false: the 0.3.0 loop, workflows/batch/drain.ts), and by a batch's child before it
   * sends its `keelBatchTaskFinished` signal.
   */
  slidingWindowBatch: 'keel-0.4-sliding-window-batch',
  /**
   * 0.4.1: a batch with a repeated tool call id, carried across continue-as-new while a call awaits approval, resumes
   * its unique calls only and refuses the later duplicates (was: every call keyed by id, so a duplicate of the pending
   * call was approved and executed with it). Checked only when such a batch resumes.
   */
  resumedRepeatedIds: 'keel-0.4.1-resumed-repeated-ids',
  /**
   * 0.4.1: a state-shaped second argument is taken as carried state only in a run continued from another; a first run
   * given one (a raw start) fails as `InvalidAgentInput` like any other second argument (was: taken unchecked).
   */
  carriedStateOnlyByContinue: 'keel-0.4.1-carried-state-only-by-continue',
  /**
   * 0.4.2: tool activities (preparation, execution, `workerHome`) go to `<taskQueue>-tools` (common/task-queues.ts), not
   * the run's task queue, so tools can run in a worker started without provider keys (role `tools`); calls on a home
   * queue and local activities are placed as before.
   */
  toolQueue: 'keel-0.4.2-tool-queue',
  /**
   * 0.4.2: a model reply whose tool call has its `arguments` as a string (a JSON text sent unparsed) is kept, and the
   * call gets its validation error as result (was: the reply refused as malformed, the run failed). Checked only for
   * such a reply.
   */
  stringToolArguments: 'keel-0.4.2-string-tool-arguments',
  /**
   * 0.4.2: `approve` / `deny` decide once every job of their workflow task is applied, and refuse (`Cannot approve: the
   * run is being cancelled` / `… interrupted`) when a cancel or interrupt came with them (was: answered `approved`, and
   * the call was then aborted without running).
   */
  decideAfterTaskJobs: 'keel-0.4.2-decide-after-task-jobs',
  /**
   * 0.4.2: a run input nested more than `MAX_INPUT_NESTING` levels deep (a raw start) fails as `InvalidAgentInput`
   * before the input check activity, which could not be sent such a value (was: a failing workflow task, retried).
   */
  deepInputRefused: 'keel-0.4.2-deep-input-refused',
  /**
   * 0.5.0: in a run whose worker verifies approvals (`startRun` said so), `approve` / `deny` run the `verifyApproval`
   * local activity (a marker) before the decision applies (README "Who may approve"). Checked only in such runs.
   */
  verifiedApprovals: 'keel-0.5.0-verified-approvals',
  /**
   * 0.5.0: a batch grades its tasks (`expected` / `grader`, activity `gradeBatchTask`), runs each task per variant and
   * `repeat` times (children `<batchId>-<variant>-<index>-r<j>`). Checked once per batch run, only when its input has
   * variants or repeats or a task it starts carries a grader (workflows/batch/grading.ts).
   */
  batchGrading: 'keel-0.5.0-batch-grading',
  /**
   * 0.6.0: a sub-agent (memo `keelTree`) or a batch's task (memo `keelBatch`) whose calls awaiting approval change
   * signals `keelTreeApprovals` to its tree's root or its batch (workflows/tree/approvals.ts), which lists them.
   * Checked only in such a run, when its list changes.
   */
  treeApprovals: 'keel-0.6.0-tree-approvals',
  /**
   * 0.6.0: a call of a sub-agent (`ToolInfo.agent`, README "Sub-agents") is prepared as any call, then starts a child
   * `agentWorkflow` `<workflowId>-<toolCallId>` (and, with an `output` schema, runs the `checkSubAgentOutput` local
   * activity) instead of a tool activity. Checked only at such a call.
   */
  subAgents: 'keel-0.6.0-sub-agents',
  /**
   * 0.6.0: a budgeted batch keeps a tree-budget ledger (common/tree/budget.ts): its tasks (memo `keelBatch` with
   * `treeBudget`) reserve each model request from it, so it no longer tightens their budgets nor signals `budgetStop`.
   * Checked once, at the start of a budgeted batch's first run; a 0.5.0 batch keeps the old pool across its
   * continues-as-new.
   */
  treeBudget: 'keel-0.6.0-tree-budget',
  /**
   * 0.6.2: a batch's first run asks the `checkBatchStart` activity whether it was started without encryption on
   * an encrypting worker (README "Encryption"), and fails as `InvalidAgentBatchInput` when it was. Checked once, at the
   * start of a batch's first run; a batch started before keeps running unchecked.
   */
  sealedBatchStart: 'keel-0.6.2-sealed-batch-start',
  /**
   * 0.6.3: a desk (a root run, a batch) lists a `keelTreeApprovals` report only from a member of its tree: the first
   * report of a run it does not know yet runs the `checkTreeMember` local activity (the run's memo must name the desk);
   * any other report is ignored and logged (workflows/tree/approvals.ts). Checked in the signal's handler, for a
   * well-formed report; a desk replaying an older history lists every report as before.
   */
  treeMembers: 'keel-0.6.3-tree-members',
  /**
   * 0.6.3: a tree budget's root (workflows/tree/budget.ts) answers a reservation that only other reservations in
   * flight keep out with `wait` (the activity asks again) instead of refusing it (was: the run stopped). Asked only
   * when the 0.6.0 rule refuses a reservation while the settled spend is below every limit.
   */
  treeBudgetWaits: 'keel-0.6.3-tree-budget-waits',
  /**
   * 0.6.3: a sub-agent's child run is started with the caller's `modelOptions` under the definition's (README
   * "Sub-agents"). Checked only at a sub-agent call.
   */
  subAgentModelOptions: 'keel-0.6.3-sub-agent-model-options',
  /**
   * 0.6.3: a sub-agent is offered only the tools of its definition its tree's bound allows (the root run's `tools`,
   * memo `keelTree.tools`), unless the definition has `ownTools`. Checked only at a sub-agent call.
   */
  subAgentToolBound: 'keel-0.6.3-sub-agent-tool-bound',
  /**
   * 0.8.0: a sliding-window batch whose history is full keeps its window full while it hands over (was: it stopped
   * starting children at once, so the window drained during the hand-over's signals): the children it starts after
   * the cut carry `reportBySignal` in their `keelBatch` memo and are not signalled; once the children started before
   * are asked, it stops starting children and continues-as-new (workflows/batch/window.ts). Asked at a cut by history
   * (events, bytes, Temporal's suggestion); a run that reached its `continueAsNewAfterTasks` still stops at once.
   */
  batchFullWindow: 'keel-0.8-batch-full-window',
  /**
   * 0.8.0: a sub-agent call costs about what a tool call costs (issue 35 item 5). A call of a sub-agent the run recorded
   * as `direct` (nothing on its worker sees a call before it runs), whose arguments the workflow finds valid as they
   * are (common/tree/plain-arguments.ts), starts its child without the `prepareToolCalls` activity; the child's
   * `keelTree` memo says whether its tree's root keeps a budget (`rootBudgeted`: when not, the child's model requests
   * reserve from no one). Checked only at a sub-agent call, first: it implies `subAgents`, `subAgentModelOptions` and
   * `subAgentToolBound`, which a run that has it no longer asks (one marker per run instead of four).
   */
  subAgentCalls: 'keel-0.8-sub-agent-calls',
  /**
   * 0.8.0: in a run started by a worker with role `all` (`startRun` said `toolsOnRunQueue`), a tool call that is not
   * worker-local runs on the run's own task queue, where the activity is dispatched eagerly to the worker completing
   * the workflow task (was: `<taskQueue>-tools`, one more queue's matching per call). A worker with role `model` that
   * gets one refuses it before anything runs; the call, and the run's later ones, then go to the tool queue. Checked
   * only in such runs, at such a call.
   */
  toolsOnRunQueue: 'keel-0.8-tools-on-run-queue',
  /**
   * 0.9.0: a session forked or rewound to a turn (memo `keelForkedFrom`, docs/runs.md#fork-and-rewind) without a prompt,
   * whose transcript ends with the model's answer, waits for its next message (was: failed with `InvalidAgentInput`
   * "give a prompt"). Checked only in such a run, at its start (workflows/agent/fork-start.ts).
   */
  forkWaits: 'keel-0.9-fork-waits',
  /**
   * 0.9.0: a model request whose provider is down after its retries (`ModelError.Server`, `.Timeout`, `.Network`) is
   * sent again to the next of the run's `fallbackModels` (workflows/agent/fallback.ts): one more `callModel` activity
   * instead of the error message. Checked only at such a switch, in a run that has `fallbackModels`.
   */
  fallbackModel: 'keel-0.9-fallback-model',
  /**
   * 0.11.0: in a counterfactual replay (input `replay`, docs/runs.md#counterfactual-replay) a call of a `direct`
   * sub-agent is prepared by the `prepareToolCalls` activity like any call, so it is served from the record (no child
   * run), answered "not in the record", or runs by `liveTools` (was: its child started at once, even under `none`).
   * Checked only in a replaying run, at a call that would start its child directly (workflows/agent/replay-calls.ts).
   */
  replaySubAgents: 'keel-0.11-replay-sub-agents',
  /**
   * 0.11.0: the provider limiter (workflows/limits/limiter.ts) sets a timer for the earliest lapse of what it holds (a
   * grant's deadline, a silent worker's lease, a ticket's lease) and reclaims it then, even when no ask comes (was: at
   * the next ask or settlement only: a dead worker's slot stayed taken while the key was quiet). Checked once per
   * limiter run, at its start.
   */
  limiterWakes: 'keel-0.11-limiter-wakes',
  /**
   * 0.11.1: Temporal's suggestion to continue-as-new is deferred while this run's history is below
   * `continueAsNewAfterBytes` (and under 10,000 events) and the transcript it would carry is larger than what the run's
   * history grew by: continuing then writes more (the carried transcript, to the payload store) than it sheds (was: every
   * suggestion followed; a 2,000-turn run with 50 KB tool results continued 26 times, carrying 1.3 GB in all). Checked
   * only at such a suggestion (workflows/agent/continue-as-new.ts).
   */
  largeCarryDefers: 'keel-0.11.1-large-carry-defers',
  /**
   * 0.12.0: a sub-agent's child starts lean (workflows/tree/sub-agent.ts): its memo says `leanStart`, its Keel search
   * attributes are set in its start, and the child checks its input in a local activity (a marker instead of six
   * activity and workflow-task events), skips the start upsert and records no `coarseTurnUpserts` or `startAttributes`
   * marker (both implied). The child's path is decided by this memo field, set by the parent under this patch, as 0.8.0's
   * `rootBudgeted` is. Implies `subAgentCalls` (and through it `subAgents`, `subAgentModelOptions`, `subAgentToolBound`):
   * a parent that has it records none of their markers. Asked at the run's first sub-agent call.
   */
  leanSubAgentStart: 'keel-0.12-lean-sub-agent-start',
  /**
   * 0.12.0: a sliding-window batch starts its tasks lean (workflows/batch/window.ts): its memo `keelBatch` says
   * `leanStart`, and the child checks its input in a local activity and records no `coarseTurnUpserts`,
   * `startAttributes` or `slidingWindowBatch` marker (all three implied), as a lean sub-agent does
   * (`leanSubAgentStart`). Asked when the batch run starts its first task.
   */
  leanBatchTasks: 'keel-0.12-lean-batch-tasks',
  /**
   * 0.13.0: every id above (and `LOST_ATTEMPT_USAGE_PATCH`), in one marker. Asked at the start of every run of
   * `agentWorkflow` (but a sub-agent or batch task started lean, which asks it at its first patch point, if any),
   * `agentBatchWorkflow` and `providerLimiterWorkflow`; a run that has it takes every earlier id's new path without
   * recording their markers (workflows/since.ts). Each first `patched()` of a run costs two history events, the marker
   * and the SDK's `TemporalChangeVersion` upsert (a visibility write): a plain tool run recorded four or five.
   */
  impliesEarlier: 'keel-0.13-implies-earlier',
} as const;

/** A patch id of the table. */
export type PatchId = (typeof PATCH)[keyof typeof PATCH];

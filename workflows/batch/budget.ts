/**
 * A batch's budget (README "Budgets"): one pool for all its tasks.
 *
 * Since 0.6.0 (`PATCH.treeBudget`, decided at the start of a budgeted batch's first run and carried): the batch is the
 * root of a tree budget (common/tree/budget.ts). It keeps a ledger; its tasks (memo `keelBatch` with `treeBudget`)
 * reserve each model request's worst case from it and settle the real usage after, so running tasks together pass the
 * limit by at most what was reserved when it was reached. Spent = the tasks' settled attempts plus graders' usage.
 * Once the settled spend reaches a limit no further task starts (the rest are recorded `stopped`); a running task's
 * next reservation is refused and it stops with `Budget exceeded: … (batch budget)`.
 *
 * Before (a 0.5.0 batch, carried across its continues-as-new): spent = the usage of finished tasks. Each task starts
 * with its own budget tightened to what is left of the pool; once the pool is spent the batch starts no further task
 * and signals `budgetStop` to the running ones, which stop before their next model call; running tasks could together
 * overshoot by what each was allowed when it started. Everything that changes commands (the signals, the tasks'
 * inputs, the stop point) is behind `patched('keel-batch-budget')`: a 0.1.0 batch never had a budget applied.
 */
import { getExternalWorkflowHandle, isCancellation } from '@temporalio/workflow';
import {
  budgetExceededText,
  budgetLines,
  budgetReached,
  describeLine,
  tighter,
  type Budget,
  type BudgetLine,
  type Spent,
} from '../../common/budget.js';
import type { BatchBudgetProgress } from '../../common/batch-definitions.js';
import type { AgentRunInput } from '../../common/run.js';
import { budgetStopSignal } from '../definitions.js';
import { PATCH } from '../patches.js';
import { emptyLedger, TreeLedger, type TreeLedgerState } from '../../common/tree/budget.js';
import { since } from '../since.js';

export const BATCH_BUDGET_PATCH = 'keel-batch-budget';

/** What the batch carries across continue-as-new for its budget (in `BatchCarried`). */
export interface BatchBudgetCarried {
  tokens: number;
  cost: number;
  /** Model requests of finished tasks (absent in state carried by 0.1.0). */
  modelCalls?: number;
  /** The pool was found spent and the running tasks were asked to stop. */
  budgetSpent?: boolean;
  /** The tree-budget ledger of a batch started since 0.6.0 (`PATCH.treeBudget`). */
  ledger?: TreeLedgerState;
}

export class BatchBudget {
  private readonly budget: Budget | undefined;
  /** The tree-budget ledger (a budgeted batch started since 0.6.0). */
  readonly ledger: TreeLedger | undefined;

  /** `fresh`: this is the batch's first run (only then may a batch take up the ledger). */
  constructor(
    budget: Budget | undefined,
    private readonly st: BatchBudgetCarried,
    fresh = false,
  ) {
    this.budget = budget && since(BATCH_BUDGET_PATCH) ? budget : undefined;
    if (this.budget && !st.ledger && fresh && since(PATCH.treeBudget)) st.ledger = emptyLedger();
    this.ledger =
      this.budget && st.ledger
        ? new TreeLedger(this.budget, st.ledger, () => ({ tokens: 0, costUsd: 0, modelCalls: 0 }), 'batch budget')
        : undefined;
  }

  /** Settled spend: the ledger's (tasks' attempts and graders), else the finished tasks' usage. */
  private spentSoFar(): Spent {
    if (this.ledger) return this.ledger.settled();
    return { tokens: this.st.tokens, costUsd: this.st.cost, modelCalls: this.st.modelCalls ?? 0 };
  }

  /** The memo fields of a task: with a ledger, its model requests reserve from the batch. */
  membership(): { treeBudget?: true } {
    return this.ledger ? { treeBudget: true } : {};
  }

  /** A grader's model usage (it runs in the batch, reserving nothing): spent from the pool. */
  graderSpent(u: { tokens: number; cost: number; modelCalls: number }): void {
    this.ledger?.addSpent({ tokens: u.tokens, costUsd: u.cost, modelCalls: u.modelCalls });
  }

  /** The limit the finished tasks reached, if any: then no task may start. */
  reached(): BudgetLine | undefined {
    return budgetReached(this.budget, this.spentSoFar());
  }

  /**
   * The `error` of a task not started: with a ledger `Budget exceeded: tokens 2,000 spent, 0 reserved of 2,000 (batch
   * budget)`; the old pool's (and its `budgetStop` text) `Budget exceeded: tokens 2000 of 2000 (batch budget)`.
   */
  text(line: BudgetLine): string {
    return this.ledger ? this.ledger.text(line) : budgetExceededText(line, 'batch budget');
  }

  /** A task's input: its own budget tightened to what is left of the pool (unchanged without a batch budget). */
  taskInput(task: AgentRunInput): AgentRunInput {
    if (!this.budget || this.ledger) return task;
    const spent = this.spentSoFar();
    const left: Budget = {};
    if (this.budget.maxTokens !== undefined) left.maxTokens = Math.max(1, this.budget.maxTokens - spent.tokens);
    if (this.budget.maxCostUsd !== undefined)
      left.maxCostUsd = Math.max(1e-6, Math.round((this.budget.maxCostUsd - spent.costUsd) * 1e6) / 1e6);
    if (this.budget.maxModelCalls !== undefined)
      left.maxModelCalls = Math.max(1, this.budget.maxModelCalls - spent.modelCalls);
    return { ...task, budget: tighter(task.budget, left) };
  }

  /** After a task finished: counts its model calls; the first time the pool is spent, asks `running` to stop. */
  recorded(modelCalls: number, running: Iterable<string>): void {
    this.st.modelCalls = (this.st.modelCalls ?? 0) + modelCalls;
    const line = this.reached();
    if (!line || this.st.budgetSpent) return;
    this.st.budgetSpent = true;
    // with a ledger the running tasks' next reservations are refused: nothing to signal
    if (this.ledger) return;
    const text = this.text(line);
    for (const workflowId of running) {
      getExternalWorkflowHandle(workflowId)
        .signal(budgetStopSignal, text)
        .catch((err: unknown) => {
          if (isCancellation(err)) throw err;
          // the task finished meanwhile: nothing to stop
        });
    }
  }

  progress(): { budget?: BatchBudgetProgress } {
    return this.budget
      ? {
          budget: {
            lines: budgetLines(this.budget, this.spentSoFar()),
            spent: this.st.budgetSpent === true,
            ...(this.ledger ? { tree: this.ledger.lines() } : {}),
          },
        }
      : {};
  }

  /** A line of the batch's current details: `budget: tokens 1200 of 2000 · spent — no further task starts`. */
  details(): string[] {
    if (!this.budget) return [];
    const lines = this.ledger
      ? this.ledger
          .lines()
          .map((l) => `${l.kind} ${l.spent} spent + ${l.reserved} reserved of ${l.limit}`)
          .join(' · ')
      : budgetLines(this.budget, this.spentSoFar()).map(describeLine).join(' · ');
    return [`budget: ${lines}${this.st.budgetSpent ? ' · spent — no further task starts' : ''}`];
  }
}

/**
 * A batch's budget (README "Budgets"): one pool for all its tasks. Spent = the usage of finished tasks. Each task starts
 * with its own budget tightened to what is left of the pool; once the pool is spent the batch starts no further task
 * (the rest are recorded `stopped`) and signals `budgetStop` to the running ones, which stop before their next model
 * call. Everything that changes commands (the signals, the tasks' inputs, the stop point) is behind
 * `patched('keel-batch-budget')`: a 0.1.0 batch never had a budget applied.
 */
import { getExternalWorkflowHandle, isCancellation, patched } from '@temporalio/workflow';
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

export const BATCH_BUDGET_PATCH = 'keel-batch-budget';

/** What the batch carries across continue-as-new for its budget (in `BatchCarried`). */
export interface BatchBudgetCarried {
  tokens: number;
  cost: number;
  /** Model requests of finished tasks (absent in state carried by 0.1.0). */
  modelCalls?: number;
  /** The pool was found spent and the running tasks were asked to stop. */
  budgetSpent?: boolean;
}

export class BatchBudget {
  private readonly budget: Budget | undefined;

  constructor(
    budget: Budget | undefined,
    private readonly st: BatchBudgetCarried,
  ) {
    this.budget = budget && patched(BATCH_BUDGET_PATCH) ? budget : undefined;
  }

  private spentSoFar(): Spent {
    return { tokens: this.st.tokens, costUsd: this.st.cost, modelCalls: this.st.modelCalls ?? 0 };
  }

  /** The limit the finished tasks reached, if any: then no task may start. */
  reached(): BudgetLine | undefined {
    return budgetReached(this.budget, this.spentSoFar());
  }

  /** The `error` of a task not started, and the `budgetStop` text: `Budget exceeded: tokens 2000 of 2000 (batch budget)`. */
  text(line: BudgetLine): string {
    return budgetExceededText(line, 'batch budget');
  }

  /** A task's input: its own budget tightened to what is left of the pool (unchanged without a batch budget). */
  taskInput(task: AgentRunInput): AgentRunInput {
    if (!this.budget) return task;
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
      ? { budget: { lines: budgetLines(this.budget, this.spentSoFar()), spent: this.st.budgetSpent === true } }
      : {};
  }

  /** A line of the batch's current details: `budget: tokens 1200 of 2000 · spent — no further task starts`. */
  details(): string[] {
    if (!this.budget) return [];
    const lines = budgetLines(this.budget, this.spentSoFar()).map(describeLine).join(' · ');
    return [`budget: ${lines}${this.st.budgetSpent ? ' · spent — no further task starts' : ''}`];
  }
}

/**
 * A run's budget (README "Budgets"), `RunBudget`, held by the session: checked before each model request and after it, from the session's usage (every
 * attempt, failed and lost ones included) and its count of model requests — both carried across continue-as-new.
 * Everything here changes the command sequence only for runs with a `budget` (or stopped by a batch's), behind
 * `patched('keel-budget')`: a 0.1.0 run has neither, so its history replays unchanged.
 */

import {
  BUDGET_WARNING_FRACTION,
  budgetExceededText,
  budgetLines,
  budgetReached,
  describeLine,
  remaining,
  spentOf,
  type Budget,
  type BudgetLine,
  type Spent,
} from '../../common/budget.js';
import { addUsage, type Usage } from '../../common/messages.js';
import type { AgentEvent } from '../../common/events.js';
import type { CallModelInput } from '../../common/wire.js';
import type { SessionState } from './state.js';
import { estimateContext } from '../../common/compaction.js';
import {
  DEFAULT_RESERVED_OUTPUT_TOKENS,
  emptyLedger,
  TreeLedger,
  type TreeBudgetLine,
} from '../../common/tree/budget.js';
import type { RunTree } from '../tree/context.js';
import { since } from '../since.js';

/** How the budget reports `budget_warning` / `budget_exceeded` (the session's `emit`). */
export type Emit = (event: AgentEvent) => void;

/** The patch id guarding budget behaviour (stop points, the `BudgetExceeded` handling, `budgetLeft`). */
export const BUDGET_PATCH = 'keel-budget';

/**
 * The budget of one agent session. It owns its slice of the carried state — `usage`, `modelCalls`, `budgetWarned`,
 * `budgetStop` and a root's `treeLedger` — and reads the run's configuration and transcript.
 */
export class RunBudget {
  constructor(
    private readonly st: SessionState,
    private readonly emit: Emit,
    private readonly tree: RunTree,
  ) {}

  /**
   * Before a model request: when a limit is reached (or a batch asked to stop) the run's `lastError` is set to the
   * `Budget exceeded: …` text and true is returned — the caller makes no request and ends the run. Otherwise the
   * request is counted and false returned.
   */
  stopBeforeModelCall(): boolean {
    const st = this.st;
    const budget = this.limits();
    const external = st.budgetStop !== undefined && since(BUDGET_PATCH) ? st.budgetStop : undefined;
    // the root of a tree whose runs reserved from it: what they settled and reserve counts too
    const ledger = budget && st.treeLedger ? this.ledger() : undefined;
    const line = ledger ? ledger.reached() : budget ? budgetReached(budget, this.spent()) : undefined;
    if (external !== undefined || line) {
      const error = external ?? (ledger ? ledger.text(line!) : budgetExceededText(line!));
      st.lastError = error;
      this.emit({ type: 'budget_exceeded', kind: line?.kind ?? (this.tree.isSubAgent() ? 'tree' : 'batch'), error });
      return true;
    }
    st.modelCalls = (st.modelCalls ?? 0) + 1;
    return false;
  }

  /** What a model request may still spend, for the activity to stop retrying once its failed attempts spent it. */
  left(): Pick<CallModelInput, 'budgetLeft' | 'treeBudget'> {
    const tree = this.tree.budgetRef(() => this.worstTokens());
    const budget = this.limits();
    if (!budget || (budget.maxTokens === undefined && budget.maxCostUsd === undefined)) return tree;
    const spent = this.st.treeLedger ? this.ledger().committed() : this.spent();
    return { budgetLeft: remaining(budget, spent), ...tree };
  }

  /**
   * The ledger of a root run (common/tree/budget.ts): its own usage and model calls, plus what the runs of its tree
   * settled and reserve. Created by the first reservation a run of its tree makes (a run without one carries none).
   */
  ledger(): TreeLedger {
    const st = this.st;
    return new TreeLedger(
      st.config.budget,
      st.config.budget ? (st.treeLedger ??= emptyLedger()) : emptyLedger(),
      () => this.spent(),
      'tree budget',
    );
  }

  /** A root's own model request in flight, reserved in its own ledger (no command) while its tree reserves from it. */
  holdOwnRequest(): void {
    if (this.st.treeLedger && this.st.config.budget)
      this.ledger().hold({ tokens: this.worstTokens(), costUsd: 0, modelCalls: 0 });
  }

  /** The root's own request settled (its usage is in the session's). */
  releaseOwnRequest(): void {
    if (this.st.treeLedger) this.ledger().release();
  }

  /**
   * A budget above this run's is spent — a refusal from the tree's root (`TreeBudgetExceeded`) or a batch's
   * `budgetStop` signal: the run stops before its next request with that text (the first one given is kept).
   */
  stopWith(text: string): void {
    this.st.budgetStop ??= text;
  }

  /** After a model request: its usage (every attempt) counts; a `budget_warning`, once per limit, when it passed 80 %. */
  spend(...usages: (Usage | undefined)[]): void {
    const st = this.st;
    for (const usage of usages) st.usage = addUsage(st.usage, usage);
    const budget = this.limits();
    if (!budget) return;
    const warned = (st.budgetWarned ??= []);
    for (const line of this.lines(budget)) {
      if (line.used < line.limit * BUDGET_WARNING_FRACTION || warned.includes(line.kind)) continue;
      warned.push(line.kind);
      this.emit({ type: 'budget_warning', kind: line.kind, used: line.used, limit: line.limit });
    }
  }

  /** The `state` query's `budget` and `treeBudget`: each limit with what was spent (and, for a root, reserved). */
  state(): { budget?: BudgetLine[]; treeBudget?: TreeBudgetLine[] } {
    const budget = this.st.config.budget;
    return { ...(budget ? { budget: this.lines(budget) } : {}), ...this.treeState() };
  }

  /** Lines of the current details: `budget: tokens 850 of 1000 (85 %) — over 80 %`. No I/O, no commands. */
  details(): string[] {
    const budget = this.st.config.budget;
    if (!budget) return [];
    const tree = this.treeState().treeBudget;
    const treeLine = tree?.length
      ? [
          `tree budget: ${tree.map((l) => `${l.kind} ${l.spent} spent + ${l.reserved} reserved of ${l.limit}`).join(' · ')}`,
        ]
      : [];
    const parts = this.lines(budget).map((l) => {
      const pct = Math.floor((l.used / l.limit) * 100);
      return `${describeLine(l)} (${pct} %)${l.used >= l.limit ? ' — reached' : l.used >= l.limit * BUDGET_WARNING_FRACTION ? ' — over 80 %' : ''}`;
    });
    return parts.length ? [`budget: ${parts.join(' · ')}`, ...treeLine] : treeLine;
  }

  /** The run's limits, when it has a budget and this code path is patched in. */
  private limits(): Budget | undefined {
    const budget = this.st.config.budget;
    return budget && since(BUDGET_PATCH) ? budget : undefined;
  }

  private spent(): Spent {
    return spentOf(this.st.usage, this.st.modelCalls ?? 0);
  }

  private lines(budget: Budget): BudgetLine[] {
    return budgetLines(budget, this.spent());
  }

  /** A root whose tree reserved from it: each limit's spent, reserved and limit. */
  private treeState(): { treeBudget?: TreeBudgetLine[] } {
    return this.st.treeLedger && this.st.config.budget ? { treeBudget: this.ledger().lines() } : {};
  }

  /** A request's worst case in tokens: the context the run estimates plus the output it allows (`maxTokens`). */
  private worstTokens(): number {
    const output = this.st.config.modelOptions?.maxTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
    return estimateContext(this.st.transcript, this.st.config.systemPrompt ?? '') + output;
  }
}

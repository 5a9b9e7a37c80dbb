/**
 * One budget for a tree of runs (README "Budgets"): the root — an `agentWorkflow` whose sub-agents carry the memo
 * `keelTree`, or an `agentBatchWorkflow` whose tasks carry `keelBatch` — keeps a ledger of what the tree spent and what
 * its requests in flight have reserved. Before each model request attempt anywhere in the tree its worst case is
 * reserved from the root's ledger (a request from a child goes through the root's `keelReserveBudget` Update, made by
 * the `callModel` activity); after the attempt it is settled with the attempt's real usage (`keelSettleBudget`). A
 * reservation is granted while the tree's settled spend plus what is reserved is below every limit, so the tree never
 * spends more than its limit plus the worst cases reserved at the moment the limit was reached.
 * Plain, deterministic arithmetic: used by the workflows (the ledger) and the activity (the wire types).
 */
import {
  budgetExceededText,
  budgetLines,
  budgetReached,
  type Budget,
  type BudgetKind,
  type BudgetLine,
  type Spent,
} from '../budget.js';

/** The Update a child's `callModel` activity sends its tree's root before each attempt of a model request. */
export const RESERVE_BUDGET_UPDATE = 'keelReserveBudget';
/** The signal it sends after the attempt, with the attempt's real usage. */
export const SETTLE_BUDGET_SIGNAL = 'keelSettleBudget';

/**
 * One attempt's reservation (its worst case) or settlement (its real usage). `key` is
 * `<workflowId>/<runId>/<activityId>/<attempt>` of the model activity: spend is counted once per attempt.
 */
export interface BudgetClaim {
  key: string;
  tokens: number;
  costUsd: number;
  /** 1 for a request's first attempt (a request counts one model call, whatever its retries), else 0. */
  modelCalls: number;
}

/**
 * The root's answer to a reservation: granted, or the `Budget exceeded: … (tree budget)` text the run stops with. With
 * `wait` (0.6.3) only other reservations in flight keep it out: the activity asks again after a pause (its `error` is
 * for a 0.6.2 worker, which stops the run with it).
 */
export type ReserveAnswer = { granted: true } | { granted: false; error: string; wait?: true };

/** Where a run's model requests reserve from (the `callModel` / `compact` activity input of a run in a tree). */
export interface TreeBudgetRef {
  /** The root's workflow id (the Update and the signal go to its current run). */
  rootWorkflowId: string;
  /**
   * Ancestors below the root with a budget of their own (`TreeMembership.budgetedAncestors`), top down: each attempt
   * reserves from each of them after the root, and settles with each.
   */
  ancestorWorkflowIds?: string[];
  /** The request's worst case: the estimated input plus its `maxTokens` (cost: what the price of those tokens is, when known). */
  worstTokens: number;
}

/** A tree budget's limit with what the tree settled and what is reserved (`state().treeBudget` of the root). */
export interface TreeBudgetLine {
  kind: BudgetKind;
  spent: number;
  reserved: number;
  limit: number;
}

/** The ledger as carried across continue-as-new (plain JSON). */
export interface TreeLedgerState {
  /** Settled spend of the tree's other runs (children, tasks, graders): the root's own is counted by the root. */
  spent: Spent;
  /** Outstanding reservations by attempt key. */
  reserved: Record<string, Omit<BudgetClaim, 'key'>>;
}

/** Output tokens reserved for a request whose `modelOptions.maxTokens` is not set. */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 4096;

/** `12,345` for an integer (US dollar amounts as they are). */
export function grouped(n: number): string {
  if (!Number.isInteger(n)) return String(n);
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return n < 0 ? `-${digits}` : digits;
}

/** `Budget exceeded: tokens 0 spent, 4,099 reserved of 250 (batch budget)`: a tree budget's refusal, spend and reservations apart. */
export function treeBudgetExceededText(line: TreeBudgetLine, scope: string): string {
  return `Budget exceeded: ${line.kind} ${grouped(line.spent)} spent, ${grouped(line.reserved)} reserved of ${grouped(line.limit)} (${scope})`;
}

export function emptyLedger(): TreeLedgerState {
  return { spent: { tokens: 0, costUsd: 0, modelCalls: 0 }, reserved: {} };
}

/** A claim as the Update / signal received it, or undefined when malformed (refused by the validator). */
export function asClaim(value: unknown): BudgetClaim | undefined {
  const c = value as Partial<BudgetClaim> | undefined;
  const amount = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  return c &&
    typeof c.key === 'string' &&
    c.key.length > 0 &&
    c.key.length <= 1000 &&
    amount(c.tokens) &&
    amount(c.costUsd) &&
    (c.modelCalls === 0 || c.modelCalls === 1)
    ? { key: c.key, tokens: c.tokens!, costUsd: c.costUsd!, modelCalls: c.modelCalls! }
    : undefined;
}

function add(a: Spent, b: Omit<BudgetClaim, 'key'>): Spent {
  return { tokens: a.tokens + b.tokens, costUsd: a.costUsd + b.costUsd, modelCalls: a.modelCalls + b.modelCalls };
}

/** `<workflowId>/<runId>/<activityId>` and the attempt of a claim's key. */
export function splitKey(key: string): { request: string; attempt: number } {
  const slash = key.lastIndexOf('/');
  return { request: key.slice(0, slash), attempt: Number(key.slice(slash + 1)) };
}

/**
 * The root's ledger. `own()` is what the root itself settled (an agent run's usage; 0 for a batch); its own request in
 * flight is `hold`-ed under the key `own`. Without a budget every reservation is granted and nothing is recorded.
 */
export class TreeLedger {
  constructor(
    private readonly budget: Budget | undefined,
    private readonly st: TreeLedgerState,
    private readonly own: () => Spent,
    /** `tree budget` or `batch budget`: the scope the refusal text names. */
    private readonly scope: string,
  ) {}

  /** Settled: the root's own spend and the other runs' settled attempts. */
  settled(): Spent {
    return add(this.own(), this.st.spent);
  }

  reserved(): Spent {
    let sum: Spent = { tokens: 0, costUsd: 0, modelCalls: 0 };
    for (const r of Object.values(this.st.reserved)) sum = add(sum, r);
    return sum;
  }

  /** Settled plus reserved: what the grant decision compares with the limits. */
  committed(): Spent {
    return add(this.settled(), this.reserved());
  }

  /** The first limit the committed spend reached, if any. */
  reached(): BudgetLine | undefined {
    return budgetReached(this.budget, this.committed());
  }

  /**
   * The refusal text of a reached limit, with the tree's settled spend and what is reserved of that kind:
   * `Budget exceeded: tokens 2,450 spent, 0 reserved of 2,400 (tree budget)` (0.6.3; was `tokens 2450 of 2400`).
   */
  text(line: BudgetLine): string {
    const l = this.lines().find((x) => x.kind === line.kind);
    return l ? treeBudgetExceededText(l, this.scope) : budgetExceededText(line, this.scope);
  }

  /**
   * A reservation under the 0.6.0 rule: granted (and recorded) while no limit is reached by settled + reserved, else
   * refused. Earlier attempts of the same request still reserved were lost (their worker died before settling): they
   * become spent at their reservation — never under-counted. Idempotent: a key already reserved is granted again (a
   * retried Update).
   */
  reserve(claim: BudgetClaim): ReserveAnswer {
    if (!this.budget) return { granted: true };
    if (this.st.reserved[claim.key]) return { granted: true };
    this.spendLostAttempts(claim.key);
    const line = this.reached();
    if (line) return { granted: false, error: this.text(line) };
    this.record(claim);
    return { granted: true };
  }

  /** True while only reservations fill a limit: settled + reserved reached one, the settled spend alone none. */
  onlyReserved(): boolean {
    return this.budget !== undefined && !budgetReached(this.budget, this.settled()) && this.reached() !== undefined;
  }

  /** Earlier attempts of `key`'s request still reserved were lost: spent at their reservation. */
  private spendLostAttempts(key: string): void {
    const { request, attempt } = splitKey(key);
    for (const [k, r] of Object.entries(this.st.reserved)) {
      const other = splitKey(k);
      if (other.request === request && other.attempt < attempt) {
        delete this.st.reserved[k];
        this.st.spent = add(this.st.spent, r);
      }
    }
  }

  private record(claim: BudgetClaim): void {
    const { key, ...amount } = claim;
    this.st.reserved[key] = amount;
  }

  /** A settlement: the attempt's reservation becomes its real usage. Unknown keys (refused, settled) are ignored. */
  settle(claim: BudgetClaim): void {
    if (!this.st.reserved[claim.key]) return;
    delete this.st.reserved[claim.key];
    const { key: _key, ...amount } = claim;
    this.st.spent = add(this.st.spent, amount);
  }

  /** Spend of the root's own that its `own()` does not count (a batch's graders). */
  addSpent(amount: Omit<BudgetClaim, 'key'>): void {
    this.st.spent = add(this.st.spent, amount);
  }

  /** The root's own request in flight (no command: the root's workflow reserves in its own ledger). */
  hold(amount: Omit<BudgetClaim, 'key'>): void {
    if (this.budget) this.st.reserved.own = amount;
  }

  /** The root's own request settled (its usage is then in `own()`). */
  release(): void {
    delete this.st.reserved.own;
  }

  /** Each limit with the tree's settled spend and what is reserved. */
  lines(): TreeBudgetLine[] {
    if (!this.budget) return [];
    const reserved = budgetLines(this.budget, this.reserved());
    return budgetLines(this.budget, this.settled()).map((l, i) => ({
      kind: l.kind,
      spent: l.used,
      reserved: reserved[i].used,
      limit: l.limit,
    }));
  }
}

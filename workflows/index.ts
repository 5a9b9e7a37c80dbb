/** The workflows a Keel worker registers. */
export { agentWorkflow } from './agent/workflow.js';
export { agentBatchPageWorkflow, agentBatchWorkflow } from './batch/workflow.js';
export { providerLimiterWorkflow } from './limits/limiter.js';

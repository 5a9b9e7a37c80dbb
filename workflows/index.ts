/** The workflows a Keel worker registers. */
export { agentWorkflow } from './agent-workflow.js';
export { agentBatchWorkflow } from './batch-workflow.js';

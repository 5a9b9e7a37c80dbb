/** The bench-only workflows, bundled separately from Keel's (workflows/index.ts). */
export { floorWorkflow, parkedWorkflow } from './floor-workflow.js';
export { naiveWorkflow } from './naive-workflow.js';

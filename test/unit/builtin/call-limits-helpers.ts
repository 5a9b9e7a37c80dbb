/** Re-exports for call-limits.test.ts. */
export { detectCallCgroups } from '../../../activities/tools/builtin/call-cgroup.js';
export { noCgroupWarning as noCgroupWarningForTest } from '../../../activities/tools/builtin/sandbox.js';

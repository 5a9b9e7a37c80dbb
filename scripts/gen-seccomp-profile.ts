// Writes deploy/seccomp-bwrap.json, the tools containers' seccomp profile, from the tool sandbox's own list
// (activities/tools/builtin/container-seccomp.ts): npm run gen-seccomp-profile.
import { writeFileSync } from 'node:fs';
import { containerSeccompProfile } from '../activities/tools/builtin/container-seccomp.js';

writeFileSync(
  new URL('../deploy/seccomp-bwrap.json', import.meta.url),
  `${JSON.stringify(containerSeccompProfile(), null, 2)}\n`,
);

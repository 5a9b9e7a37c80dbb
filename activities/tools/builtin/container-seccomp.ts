/**
 * The seccomp profile of a container that runs tool workers (docker-compose.yml's `keel-tools`,
 * `deploy/seccomp-bwrap.json`), made from the tool sandbox's own list (`seccomp.ts`). Docker's default profile refuses
 * what bubblewrap needs to build the sandbox (new namespaces, mounts, `pivot_root`) to a container without
 * `CAP_SYS_ADMIN`; this profile allows those and refuses every other call of {@link DENIED_SYSCALLS} to the whole
 * container (the worker and bubblewrap). The tool processes themselves run under the narrower filter of `seccomp.ts`,
 * which refuses the namespace and mount calls too. `npm run gen-seccomp-profile` writes the file; a unit test keeps it
 * equal to what this module makes.
 */
import { DENIED_SYSCALLS, EPERM } from './seccomp.js';

/** What bubblewrap calls while it builds the sandbox: allowed to the container, refused to the tools. */
export const BWRAP_NEEDS = ['mount', 'umount2', 'pivot_root', 'chroot'] as const;

/** The profile in Docker's seccomp JSON format (allow by default, refuse Keel's list with EPERM). */
export function containerSeccompProfile() {
  const bwrap: readonly string[] = BWRAP_NEEDS;
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32', 'SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'],
    syscalls: [{ names: DENIED_SYSCALLS.filter((n) => !bwrap.includes(n)), action: 'SCMP_ACT_ERRNO', errnoRet: EPERM }],
  };
}

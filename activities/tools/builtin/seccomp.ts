/**
 * The seccomp filter of the tool sandbox (`sandbox.ts`): a classic-BPF program, given to bubblewrap with
 * `--seccomp FD`, that refuses (`EPERM`) the system calls a tool process never needs and that widen what the kernel
 * exposes to it — modelled on Flatpak's and the Codex CLI's lists:
 *
 * - namespaces: `unshare`/`clone` with any `CLONE_NEW*` flag, `setns`; `clone3` fails with `ENOSYS` (its flags sit in
 *   memory a filter cannot read; the C library then uses `clone`);
 * - mounts: `mount`, `umount2`, `pivot_root`, `chroot` and the new mount API (`open_tree`, `move_mount`, `fsopen`,
 *   `fsconfig`, `fsmount`, `fspick`, `mount_setattr`);
 * - the kernel keyring (`add_key`, `request_key`, `keyctl`), `bpf`, `userfaultfd`, `io_uring_*`, `perf_event_open`;
 * - other processes' memory (`ptrace`, `process_vm_readv`/`writev`);
 * - `AF_NETLINK` sockets, and the terminal-injection ioctls `TIOCSTI` and `TIOCLINUX`;
 * - the host's administration (modules, kexec, reboot, swap, accounting, quotas, the kernel log, file handles, clock).
 *
 * The program checks the architecture first: a call of any other ABI than the worker's own (i386 through `int 0x80`,
 * x32 on x86_64) kills the process. Built for x86_64 and aarch64 only ({@link seccompFilter} returns undefined on
 * others).
 */

/** An architecture the filter is built for: Node's `process.arch` name. */
export type SeccompArch = 'x64' | 'arm64';

const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };

/** System call numbers of each architecture (Linux `asm/unistd_64.h`, `asm-generic/unistd.h`). */
const NR: Record<SeccompArch, Record<string, number>> = {
  x64: {
    unshare: 272,
    clone: 56,
    clone3: 435,
    setns: 308,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    chroot: 161,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    add_key: 248,
    request_key: 249,
    keyctl: 250,
    bpf: 321,
    userfaultfd: 323,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    perf_event_open: 298,
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    socket: 41,
    ioctl: 16,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    kexec_load: 246,
    kexec_file_load: 320,
    reboot: 169,
    swapon: 167,
    swapoff: 168,
    acct: 163,
    quotactl: 179,
    syslog: 103,
    name_to_handle_at: 303,
    open_by_handle_at: 304,
    fanotify_init: 300,
    settimeofday: 164,
    lookup_dcookie: 212,
    uselib: 134,
    vhangup: 153,
  },
  arm64: {
    unshare: 97,
    clone: 220,
    clone3: 435,
    setns: 268,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    chroot: 51,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    add_key: 217,
    request_key: 218,
    keyctl: 219,
    bpf: 280,
    userfaultfd: 282,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    perf_event_open: 241,
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    socket: 198,
    ioctl: 29,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    kexec_load: 104,
    kexec_file_load: 294,
    reboot: 142,
    swapon: 224,
    swapoff: 225,
    acct: 89,
    quotactl: 60,
    syslog: 116,
    name_to_handle_at: 264,
    open_by_handle_at: 265,
    fanotify_init: 262,
    settimeofday: 170,
    lookup_dcookie: 18,
    vhangup: 58,
  },
};

/** Refused outright, whatever the arguments. */
export const DENIED_SYSCALLS = [
  'setns',
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'add_key',
  'request_key',
  'keyctl',
  'bpf',
  'userfaultfd',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  'perf_event_open',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'init_module',
  'finit_module',
  'delete_module',
  'kexec_load',
  'kexec_file_load',
  'reboot',
  'swapon',
  'swapoff',
  'acct',
  'quotactl',
  'syslog',
  'name_to_handle_at',
  'open_by_handle_at',
  'fanotify_init',
  'settimeofday',
  'lookup_dcookie',
  'uselib',
  'vhangup',
] as const;

/** Every `CLONE_NEW*` flag: NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. */
export const CLONE_NEW_FLAGS =
  0x80 | 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
export const AF_NETLINK = 16;
export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;

export const EPERM = 1;
export const ENOSYS = 38;
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;

// classic BPF opcodes
export const BPF_LD_W_ABS = 0x20;
export const BPF_JEQ_K = 0x15;
export const BPF_JSET_K = 0x45;
export const BPF_JGE_K = 0x35;
export const BPF_RET_K = 0x06;

/** Offsets in `struct seccomp_data`: nr, arch, then the arguments (8 bytes each; the low half first, little-endian). */
const OFF_NR = 0;
const OFF_ARCH = 4;
const argLow = (i: number) => 16 + 8 * i;

/** One instruction; a jump names its targets by label, resolved by {@link assemble}. */
type Insn = { code: number; k: number; jt?: string; jf?: string } | { label: string };

const ld = (offset: number): Insn => ({ code: BPF_LD_W_ABS, k: offset });
const ret = (k: number): Insn => ({ code: BPF_RET_K, k });
/** if A == k goto `to` (else the next instruction) */
const jeq = (k: number, to: string): Insn => ({ code: BPF_JEQ_K, k, jt: to });

/** A deny-list filter for `arch`: the program's `struct sock_filter` array, 8 bytes an instruction. */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  if (arch !== 'x64' && arch !== 'arm64') return undefined;
  const nr = NR[arch];
  const p: Insn[] = [
    ld(OFF_ARCH),
    jeq(AUDIT_ARCH[arch], 'native'),
    ret(SECCOMP_RET_KILL_PROCESS),
    { label: 'native' },
    ld(OFF_NR),
  ];
  // x32 system calls (numbers with bit 30 set) on x86_64: another ABI
  if (arch === 'x64') p.push({ code: BPF_JGE_K, k: 0x40000000, jt: 'kill' });
  for (const name of DENIED_SYSCALLS) if (nr[name] !== undefined) p.push(jeq(nr[name], 'deny'));
  p.push(
    jeq(nr.clone3, 'nosys'),
    jeq(nr.clone, 'ns-flags'),
    jeq(nr.unshare, 'ns-flags'),
    jeq(nr.socket, 'socket'),
    jeq(nr.ioctl, 'ioctl'),
    ret(SECCOMP_RET_ALLOW),
    { label: 'ns-flags' },
    ld(argLow(0)),
    { code: BPF_JSET_K, k: CLONE_NEW_FLAGS, jt: 'deny' },
    ret(SECCOMP_RET_ALLOW),
    { label: 'socket' },
    ld(argLow(0)),
    jeq(AF_NETLINK, 'deny'),
    ret(SECCOMP_RET_ALLOW),
    { label: 'ioctl' },
    ld(argLow(1)),
    jeq(TIOCSTI, 'deny'),
    jeq(TIOCLINUX, 'deny'),
    ret(SECCOMP_RET_ALLOW),
    { label: 'deny' },
    ret(SECCOMP_RET_ERRNO | EPERM),
    { label: 'nosys' },
    ret(SECCOMP_RET_ERRNO | ENOSYS),
    { label: 'kill' },
    ret(SECCOMP_RET_KILL_PROCESS),
  );
  return assemble(p);
}

/** Resolves labels to relative jump offsets (at most 255 forward) and encodes each instruction. */
function assemble(program: Insn[]): Buffer {
  const at = new Map<string, number>();
  const insns: Exclude<Insn, { label: string }>[] = [];
  for (const i of program) {
    if ('label' in i) at.set(i.label, insns.length);
    else insns.push(i);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined || target <= i || target - i - 1 > 255) throw new Error(`bad jump to ${label}`);
      return target - i - 1;
    };
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(insn.jt), i * 8 + 2);
    out.writeUInt8(offset(insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

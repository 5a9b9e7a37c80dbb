/**
 * The seccomp program of the tool sandbox (seccomp.ts, issue 33 item 6), run by a classic-BPF interpreter written here
 * for `struct seccomp_data` inputs: for both architectures, what it returns for the calls it refuses and for the
 * ordinary ones it lets through, and that another ABI is killed. (test/temporal/sandbox-reach.test.ts runs the same
 * probes through bubblewrap from `bash`.)
 */
import { describe, expect, it } from 'vitest';
import {
  BPF_JEQ_K,
  BPF_JGE_K,
  BPF_JSET_K,
  BPF_LD_W_ABS,
  BPF_RET_K,
  ENOSYS,
  EPERM,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  seccompFilter,
} from '../../../activities/tools/builtin/seccomp.js';

const ARCH = { x64: 0xc000003e, arm64: 0xc00000b7, i386: 0x40000003 };

/** Runs `program` on a `struct seccomp_data` of `arch`, `nr` and `args` (low 32 bits each); returns its verdict. */
function run(program: Buffer, arch: number, nr: number, args: number[] = []): number {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  args.forEach((a, i) => data.writeUInt32LE(a >>> 0, 16 + 8 * i));
  let a = 0;
  for (let pc = 0; pc < program.length / 8;) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc++;
    if (code === BPF_LD_W_ABS) a = data.readUInt32LE(k);
    else if (code === BPF_RET_K) return k;
    else if (code === BPF_JEQ_K) pc += a === k ? jt : jf;
    else if (code === BPF_JGE_K) pc += a >= k ? jt : jf;
    else if (code === BPF_JSET_K) pc += (a & k) !== 0 ? jt : jf;
    else throw new Error(`unknown opcode ${code}`);
  }
  throw new Error('fell off the end');
}

const DENY = SECCOMP_RET_ERRNO | EPERM;
const NOSYS = SECCOMP_RET_ERRNO | ENOSYS;
const KILL = SECCOMP_RET_KILL_PROCESS >>> 0;
const ALLOW = SECCOMP_RET_ALLOW;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNET = 0x40000000;
const CLONE_THREAD_FLAGS = 0x3d0f00; // what glibc's pthread_create passes
const SIGCHLD = 17;

/** Per architecture: system call numbers the cases below use. */
const NR = {
  x64: {
    read: 0,
    openat: 257,
    clone: 56,
    clone3: 435,
    unshare: 272,
    setns: 308,
    mount: 165,
    add_key: 248,
    keyctl: 250,
    bpf: 321,
    userfaultfd: 323,
    io_uring_setup: 425,
    ptrace: 101,
    socket: 41,
    ioctl: 16,
  },
  arm64: {
    read: 63,
    openat: 56,
    clone: 220,
    clone3: 435,
    unshare: 97,
    setns: 268,
    mount: 40,
    add_key: 217,
    keyctl: 219,
    bpf: 280,
    userfaultfd: 282,
    io_uring_setup: 425,
    ptrace: 117,
    socket: 198,
    ioctl: 29,
  },
} as const;

describe.each(['x64', 'arm64'] as const)('the seccomp filter on %s', (arch) => {
  const program = seccompFilter(arch)!;
  const nr = NR[arch];
  const call = (name: keyof typeof nr, args: number[] = []) => run(program, ARCH[arch], nr[name], args);

  it('refuses namespaces, mounts, the keyring, bpf, userfaultfd, io_uring, ptrace and netlink sockets (EPERM)', () => {
    expect({
      unshareUser: call('unshare', [CLONE_NEWUSER]),
      unshareNet: call('unshare', [CLONE_NEWNET]),
      cloneUser: call('clone', [CLONE_NEWUSER | SIGCHLD]),
      setns: call('setns', [3, 0]),
      mount: call('mount'),
      add_key: call('add_key'),
      keyctl: call('keyctl'),
      bpf: call('bpf'),
      userfaultfd: call('userfaultfd'),
      io_uring_setup: call('io_uring_setup'),
      ptrace: call('ptrace'),
      netlink: call('socket', [16, 3, 0]),
      tiocsti: call('ioctl', [0, 0x5412]),
      clone3: call('clone3'),
    }).toEqual({
      unshareUser: DENY,
      unshareNet: DENY,
      cloneUser: DENY,
      setns: DENY,
      mount: DENY,
      add_key: DENY,
      keyctl: DENY,
      bpf: DENY,
      userfaultfd: DENY,
      io_uring_setup: DENY,
      ptrace: DENY,
      netlink: DENY,
      tiocsti: DENY,
      clone3: NOSYS,
    });
  });

  it('lets ordinary calls through: read, openat, fork and thread clones, inet sockets, other ioctls', () => {
    expect([
      call('read', [0, 0, 10]),
      call('openat'),
      call('clone', [SIGCHLD]),
      call('clone', [CLONE_THREAD_FLAGS]),
      call('unshare', [0x400]), // CLONE_FILES
      call('socket', [2, 1, 0]),
      call('socket', [1, 1, 0]),
      call('ioctl', [1, 0x5401]), // TCGETS
    ]).toEqual(Array(8).fill(ALLOW));
  });

  it('kills a call of another ABI', () => {
    expect(run(program, ARCH.i386, 1)).toBe(KILL);
    expect(run(program, arch === 'x64' ? ARCH.arm64 : ARCH.x64, nr.read)).toBe(KILL);
  });
});

describe('the seccomp filter elsewhere', () => {
  it('kills x32 calls on x86_64 (numbers with bit 30 set)', () => {
    expect(run(seccompFilter('x64')!, ARCH.x64, 0x40000000 + 1)).toBe(KILL);
  });

  it('is not built for other architectures', () => {
    expect(seccompFilter('riscv64')).toBeUndefined();
    expect(seccompFilter('ia32')).toBeUndefined();
  });
});

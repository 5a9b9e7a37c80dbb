/** The sandbox of a stdio MCP server (activities/mcp/sandbox.ts) and its configuration fields. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mcpServersErrors } from '../../activities/mcp/config.js';
import { checkMcpSandbox, mcpLaunch } from '../../activities/mcp/sandbox.js';
import { expandHeaders } from '../../activities/mcp/connections.js';

describe('MCP server sandbox configuration', () => {
  it('sandbox, network, readOnlyPaths and writablePaths are checked, and only for a stdio server', () => {
    expect(
      mcpServersErrors({
        a: { command: 'x', sandbox: 'no', network: 1, readOnlyPaths: '/x', writablePaths: [''] },
        b: { url: 'http://h/mcp', network: true },
        c: { command: 'x', sandbox: false, network: true, readOnlyPaths: ['/a'], writablePaths: ['b'] },
      }),
    ).toEqual([
      'mcpServers.a.sandbox: must be true or false',
      'mcpServers.a.network: must be true or false',
      'mcpServers.a.readOnlyPaths: must be an array of paths',
      'mcpServers.a.writablePaths: must be an array of paths',
      'mcpServers.b.network: only a stdio server ("command") runs in a sandbox',
    ]);
  });

  it('"sandbox": false is announced at start, naming the servers; sandboxed and HTTP servers are not', () => {
    const lines: string[] = [];
    checkMcpSandbox(
      {
        open: { command: 'x', sandbox: false },
        also: { command: 'y', sandbox: false },
        boxed: { command: 'z' },
        web: { url: 'http://h/mcp' },
      },
      (s) => void lines.push(s),
    );
    expect(lines).toEqual([
      '[keel] WARNING: MCP servers "open", "also" run unsandboxed ("sandbox": false): as the worker\'s user, with its files, its /proc (and so its environment) and the network.\n',
    ]);
  });

  it('the launch: bwrap around the command, no worker directory, arguments read-only and absolute', () => {
    const dir = process.cwd();
    const l = mcpLaunch(
      { command: 'node_modules/.bin/mcp-server-filesystem', args: ['examples', '-v'] },
      { PATH: '/usr/bin' },
    );
    // the launcher shell (sandbox-launch.ts) that execs bwrap: bash when a descriptor above 9 must be closed
    expect(['/bin/sh', '/bin/bash', '/usr/bin/bash']).toContain(l.command);
    expect(l.env).toEqual({ PATH: process.env.PATH });
    const a = l.args.join(' ');
    expect(a).toContain(' bwrap --unshare-user --disable-userns --seccomp 9 ');
    expect(a).toContain('--unshare-net');
    expect(a).toContain(`--ro-bind ${dir}/examples ${dir}/examples`);
    expect(a).toContain(`--ro-bind ${dir}/node_modules ${dir}/node_modules`);
    expect(a).not.toContain(`--ro-bind ${dir} ${dir} `);
    expect(a).not.toContain(`--bind ${dir}/examples`);
    expect(a).toContain('--chdir /tmp ');
    expect(a).toContain('--setenv PATH /usr/bin --setenv HOME /tmp');
    // the command by its real path, the argument made absolute (the server starts in /tmp)
    expect(a).toMatch(/server-filesystem\/dist\/index\.js \S+\/examples -v$/);
    expect(mcpLaunch({ command: 'x', args: ['y'], sandbox: false, env: { A: '1' } }, {})).toEqual({
      command: 'x',
      args: ['y'],
      env: { A: '1' },
    });
    expect(mcpLaunch({ command: 'sh', network: true }, {}).args).not.toContain('--unshare-net');
  });

  it('system directories and the worker directory are refused, saying what to do; a writable path stays writable', () => {
    const worker = mkdtempSync(join(tmpdir(), 'keel-mcp-launch-'));
    try {
      mkdirSync(join(worker, 'data'));
      expect(() => mcpLaunch({ command: 'sh', args: ['/'] }, {}, worker)).toThrow(
        'its argument "/" names /, a system directory, which is never bound into its sandbox: name a narrower ' +
          'directory (to give it the worker\'s directory on purpose, set "cwd")',
      );
      expect(() => mcpLaunch({ command: 'sh', args: ['.'] }, {}, worker)).toThrow(
        `its argument "." names ${worker}, the worker's directory or one above it, which is never bound`,
      );
      expect(() => mcpLaunch({ command: 'sh', readOnlyPaths: ['/sys/kernel'] }, {}, worker)).toThrow(
        '"readOnlyPaths" names /sys/kernel, a system directory, which is never bound into its sandbox: name a ' +
          'narrower directory',
      );
      expect(() => mcpLaunch({ command: 'no-such-command-here' }, {}, worker)).toThrow(
        'its command "no-such-command-here" is neither a file nor found on the worker\'s PATH: give its path ' +
          '(absolute, or relative to "cwd" or else to the worker\'s directory)',
      );
      const a = mcpLaunch({ command: 'sh', args: ['data'], writablePaths: ['data'] }, {}, worker).args.join(' ');
      expect(a).toContain(`--bind ${worker}/data ${worker}/data`);
      expect(a).not.toContain(`--ro-bind ${worker}/data`);
      const own = mcpLaunch({ command: 'sh', cwd: 'srv' }, {}, worker).args.join(' ');
      expect(own).toContain(`--bind ${worker}/srv ${worker}/srv`);
      expect(own).toContain(`--chdir ${worker}/srv`);
    } finally {
      rmSync(worker, { recursive: true, force: true });
    }
  });
});

describe('MCP HTTP headers', () => {
  it("${NAME} is the worker's environment variable; an unset one is named", () => {
    process.env.KEEL_TEST_MCP_TOKEN = 't0ken';
    try {
      expect(expandHeaders({ Authorization: 'Bearer ${KEEL_TEST_MCP_TOKEN}', 'X-Plain': 'v' })).toEqual({
        Authorization: 'Bearer t0ken',
        'X-Plain': 'v',
      });
    } finally {
      delete process.env.KEEL_TEST_MCP_TOKEN;
    }
    expect(() => expandHeaders({ Authorization: 'Bearer ${KEEL_TEST_MCP_UNSET}' })).toThrow(
      'its header "Authorization" names ${KEEL_TEST_MCP_UNSET}, which is not set in the worker\'s environment',
    );
  });
});

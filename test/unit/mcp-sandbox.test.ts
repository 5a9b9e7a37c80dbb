/** The sandbox of a stdio MCP server (activities/mcp/sandbox.ts) and its configuration fields. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mcpServersErrors } from '../../activities/mcp/config.js';
import { checkMcpSandbox, mcpLaunch } from '../../activities/mcp/sandbox.js';

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

  it('the launch: bwrap around the command, the worker directory read-only, directory arguments read-write', () => {
    const dir = process.cwd();
    const l = mcpLaunch(
      { command: 'node_modules/.bin/mcp-server-filesystem', args: ['examples', '-v'] },
      { PATH: '/usr/bin' },
    );
    expect(l.command).toBe('bwrap');
    expect(l.env).toEqual({ PATH: process.env.PATH });
    const a = l.args.join(' ');
    expect(a).toContain('--unshare-net');
    expect(a).toContain(`--bind ${dir}/examples ${dir}/examples`);
    // (then .keel/ and .env* hidden where they exist: this checkout may have a .keel/)
    expect(a).toContain(`--ro-bind ${dir} ${dir} --bind ${dir}/examples ${dir}/examples `);
    expect(a).toContain(`--chdir ${dir} `);
    expect(a).toContain('--setenv PATH /usr/bin --setenv HOME /tmp');
    expect(a).toMatch(/node_modules\/\.bin\/mcp-server-filesystem examples -v$/);
    expect(mcpLaunch({ command: 'x', args: ['y'], sandbox: false, env: { A: '1' } }, {})).toEqual({
      command: 'x',
      args: ['y'],
      env: { A: '1' },
    });
    expect(mcpLaunch({ command: 'x', network: true }, {}).args).not.toContain('--unshare-net');
    // an argument naming the root binds nothing: it would bring back the host's /proc
    expect(mcpLaunch({ command: 'x', args: ['/'] }, {}).args.join(' ')).not.toContain('--bind / /');
  });

  it("the worker directory's .keel/ and .env files are hidden; a server's own cwd is read-write", () => {
    const worker = mkdtempSync(join(tmpdir(), 'keel-mcp-launch-'));
    try {
      mkdirSync(join(worker, '.keel'));
      writeFileSync(join(worker, '.env.local'), 'TOKEN=x');
      const a = mcpLaunch({ command: 'x' }, {}, worker).args.join(' ');
      expect(a).toContain(
        `--ro-bind ${worker} ${worker} --tmpfs ${worker}/.keel --ro-bind /dev/null ${worker}/.env.local --chdir ${worker}`,
      );
      const own = mcpLaunch({ command: 'x', cwd: 'srv' }, {}, worker).args.join(' ');
      expect(own).toContain(`--bind ${worker}/srv ${worker}/srv --chdir ${worker}/srv`);
    } finally {
      rmSync(worker, { recursive: true, force: true });
    }
  });
});

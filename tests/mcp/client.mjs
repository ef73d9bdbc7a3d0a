// SPDX-License-Identifier: MIT
// Scenarios of tests/mcp.bats: the official MCP TypeScript SDK
// (tests/mcp/sdk, installed in $(BUILDDIR)/mcp-sdk, where this file is
// copied to run) as the client of `airlock mcp`.  Usage:
//   node client.mjs SCENARIO
// Environment:
//   MCP_AIRLOCK  JSON array: the command that runs airlock as the test user
//                (runuser ... env -i ... $AIRLOCK); "mcp" and the server's
//                options are appended to it
//   MCP_WORKDIR  a directory of the test user's for the sessions' workdirs
// Each scenario throws on the first thing that is not as docs/mcp.md says,
// and prints "ok SCENARIO" at the end.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const AIRLOCK = JSON.parse(process.env.MCP_AIRLOCK);
const WORKDIR = process.env.MCP_WORKDIR;
const TOOLS = ['open_session', 'close_session', 'list_sessions', 'exec', 'job_output',
  'job_stdin', 'job_resize', 'job_kill', 'upload', 'download'];

function check(cond, what, got) {
  if (!cond) throw new Error(`${what}${got === undefined ? '' : `; got ${JSON.stringify(got)}`}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const uniq = () => randomBytes(4).toString('hex');

// The stdio transport, remembering the protocol version the client
// settled on (the SDK hands it to transports that take it).
class Transport extends StdioClientTransport {
  setProtocolVersion(v) { this.protocolVersion = v; }
}

// One `airlock mcp ARGS` and an SDK client connected to it.  With
// `elicit`, the client declares elicitation and answers with elicit(params).
async function connect(args = [], { elicit, name = 'airlock-tests' } = {}) {
  const [command, ...rest] = AIRLOCK;
  const transport = new Transport({ command, args: [...rest, 'mcp', ...args], stderr: 'inherit' });
  const client = new Client({ name, version: '1.0.0' },
    { capabilities: elicit ? { elicitation: {} } : {} });
  client.errors = [];
  client.onerror = (e) => client.errors.push(String(e));
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (req) => elicit(req.params));
  await client.connect(transport);
  // Listing the tools makes the SDK check every structuredContent
  // against its tool's outputSchema from then on.
  await client.listTools();
  client.transportOf = transport;
  return client;
}

// A tool call that must succeed: its structuredContent.
async function ok(client, name, args, opts) {
  const r = await client.callTool({ name, arguments: args }, undefined, opts);
  check(!r.isError, `${name} ${JSON.stringify(args)} is an error: ${JSON.stringify(r.content)}`);
  check(r.structuredContent && typeof r.structuredContent === 'object',
    `${name}: no structuredContent`, r);
  return r.structuredContent;
}

// A tool call that must fail with CODE: the text of its one content item.
async function fails(client, name, args, code) {
  const r = await client.callTool({ name, arguments: args });
  check(r.isError === true, `${name} ${JSON.stringify(args)} should be an error`, r);
  check(r.structuredContent === undefined, `${name}: an error has no structuredContent`, r);
  check(r.content.length === 1 && r.content[0].type === 'text', `${name}: one text item`, r.content);
  check(r.content[0].text.startsWith(`${code}: `), `${name}: text starts with "${code}: "`, r.content[0].text);
  return r.content[0].text;
}

// A directory for one scenario, in the test user's workdir.
function scratch(tag) {
  const dir = path.join(WORKDIR, `${tag}-${uniq()}`);
  const owner = fs.statSync(WORKDIR);
  fs.mkdirSync(dir);
  fs.chownSync(dir, owner.uid, owner.gid);
  return dir;
}

// pids of processes whose command line contains s (never this one's).
function pgrep(s) {
  const r = spawnSync('pgrep', ['-f', s], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((p) => p && Number(p) !== process.pid);
}
async function gone(s, seconds) {
  for (let i = 0; i < seconds * 10; i++) {
    if (pgrep(s).length === 0) return true;
    await sleep(100);
  }
  return false;
}

async function openSession(client, extra = {}) {
  const session = `s-${uniq()}`;
  const workdir = extra.workdir ?? scratch('ws');
  const s = await ok(client, 'open_session', { session, workdir, ...extra });
  check(s.session === session, 'open_session names the session', s);
  return { session, workdir, opened: s };
}

const scenarios = {
  async initialize() {
    const c = await connect();
    check(c.transportOf.protocolVersion === '2025-11-25', 'the latest protocol version is negotiated',
      c.transportOf.protocolVersion);
    const info = c.getServerVersion();
    check(info.name === 'airlock', 'serverInfo.name', info);
    check(typeof info.version === 'string' && /^\d/.test(info.version), 'serverInfo.version', info);
    const caps = c.getServerCapabilities();
    check(caps.tools && caps.tools.listChanged === false, 'capabilities.tools', caps);
    check(caps.resources && caps.resources.subscribe === false && caps.resources.listChanged === false,
      'capabilities.resources', caps);
    check(!caps.prompts && !caps.logging, 'no prompts or logging capability', caps);
    check(typeof c.getInstructions() === 'string' && c.getInstructions().length > 20, 'instructions',
      c.getInstructions());
    await c.ping();
    await c.close();
  },

  async tools() {
    const c = await connect();
    const { tools } = await c.listTools();
    check(JSON.stringify(tools.map((t) => t.name).sort()) === JSON.stringify([...TOOLS].sort()),
      'the ten tools', tools.map((t) => t.name));
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    addFormats(ajv);
    const required = {
      open_session: ['session'], close_session: ['session'], list_sessions: [],
      exec: ['command', 'session'], job_output: ['job', 'session'],
      job_stdin: ['data', 'job', 'session'], job_kill: ['job', 'session'],
      job_resize: ['cols', 'job', 'rows', 'session'],
      upload: ['path', 'session'], download: ['path', 'session'],
    };
    for (const t of tools) {
      check(typeof t.description === 'string' && t.description.length > 10, `${t.name}: a description`, t);
      for (const which of ['inputSchema', 'outputSchema']) {
        const s = t[which];
        check(s && s.type === 'object', `${t.name}: ${which} is type object`, s);
        try { ajv.compile(s); } catch (e) { throw new Error(`${t.name}: ${which} does not compile: ${e.message}`); }
      }
      check(t.inputSchema.additionalProperties === false, `${t.name}: no additional properties`, t.inputSchema);
      check(JSON.stringify([...(t.inputSchema.required ?? [])].sort()) === JSON.stringify(required[t.name]),
        `${t.name}: required fields`, t.inputSchema.required);
      const v = ajv.compile(t.inputSchema);
      check(!v({ ...Object.fromEntries(required[t.name].map((k) => [k, k === 'job' ? 1 : 'x'])), bogus: 1 }),
        `${t.name}: its inputSchema refuses an unknown field`);
    }
    const exec = tools.find((t) => t.name === 'exec');
    check(exec.inputSchema.properties.background?.type === 'boolean', 'exec.background is boolean',
      exec.inputSchema.properties);
    await c.close();
  },

  async exec() {
    const c = await connect();
    const { session, workdir, opened } = await openSession(c);
    check(opened.backend === 'local' && opened.cwd === workdir && opened.shared === false &&
      typeof opened.posture === 'object' && typeof opened.approval === 'string', 'open_session result', opened);
    const progress = [];
    const t0 = Date.now();
    const r = await c.callTool({
      name: 'exec',
      arguments: { session, command: 'for i in 1 2 3; do echo tick $i; sleep 0.3; done' },
    }, undefined, { onprogress: (p) => progress.push({ ...p, at: Date.now() - t0 }) });
    const done = Date.now() - t0;
    check(!r.isError, 'exec succeeded', r);
    const s = r.structuredContent;
    check(s.exit_code === 0 && s.cause === 'exited' && s.stdout === 'tick 1\ntick 2\ntick 3\n' &&
      s.stderr === '' && s.truncated === false && s.cwd === workdir && s.timed_out === false &&
      s.interrupted === false && Number.isInteger(s.job) && Number.isInteger(s.duration_ms),
    'the result of the ticks', s);
    check(r.content.some((i) => i.type === 'text' && i.text.includes('tick 3')), 'the text has the output', r.content);
    // Streamed: a chunk a tick, the first long before the result.
    // First the job id (what a client that cancels or comes back needs), then the chunks.
    check(progress[0]?.progress === 0 && progress[0].message === `started job ${s.job}`,
      'the first notification names the job', progress);
    check(progress.length >= 4, 'a progress notification per chunk', progress);
    check(progress.slice(1).map((p) => p.message).join('') === s.stdout, 'the chunks make the output', progress);
    check(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), 'progress grows', progress);
    check(progress.at(-1).progress === 21, 'progress counts the bytes so far', progress);
    check(progress[0].at < done - 400, 'the first chunk came before the end', { progress, done });

    const e = await c.callTool({ name: 'exec', arguments: { session, command: 'echo out; echo err >&2; exit 3' } });
    check(!e.isError, 'a non-zero exit is not an error', e);
    check(e.structuredContent.exit_code === 3 && e.structuredContent.stdout === 'out\n' &&
      e.structuredContent.stderr === 'err\n', 'exit 3 with its output', e.structuredContent);

    // The session keeps its state; stdin, env and cwd reach the command.
    await ok(c, 'exec', { session, command: 'mkdir -p sub && cd sub && export KEPT=yes' });
    const st = await ok(c, 'exec', { session, command: 'echo "$KEPT $PWD $ONE $(cat)"', stdin: 'in', env: { ONE: '1' } });
    check(st.stdout === `yes ${workdir}/sub 1 in\n`, 'state, env and stdin', st);
    const cw = await ok(c, 'exec', { session, command: 'pwd', cwd: workdir });
    check(cw.stdout === `${workdir}\n` && cw.cwd === workdir, 'cwd', cw);
    const to = await ok(c, 'exec', { session, command: 'sleep 30', timeout: 0.5 });
    check(to.timed_out === true && to.exit_code === 124, 'a timeout', to);
    await c.close();
    check(c.errors.length === 0, 'no protocol errors', c.errors);
  },

  async cancel() {
    const c = await connect();
    const { session } = await openSession(c);
    const before = await ok(c, 'exec', { session, command: 'true' });
    const mark = `${600000 + Math.floor(Math.random() * 300000)}`;
    const ac = new AbortController();
    let started, job;
    const seen = new Promise((r) => { started = r; });
    const call = c.callTool({ name: 'exec', arguments: { session, command: `echo started-${mark}; sleep ${mark}` } },
      undefined, {
        signal: ac.signal,
        onprogress: (p) => {
          const m = /^started job (\d+)$/.exec(p.message ?? '');
          if (m) job = Number(m[1]);
          if (p.message?.includes(mark)) started();
        },
      });
    const outcome = call.then(() => 'answered', (e) => e);
    await Promise.race([seen, sleep(20000)]);
    check(pgrep(`sleep ${mark}`).length >= 1, `the command runs (sleep ${mark})`, pgrep(`sleep ${mark}`));
    ac.abort('the test cancels it');
    const o = await outcome;
    check(o !== 'answered', 'the cancelled call has no result');
    check(await gone(`sleep ${mark}`, 5), `sleep ${mark} is gone within 5 s`, pgrep(`sleep ${mark}`));
    check(job === before.job + 1, 'the started notification gave the job id', { job, before: before.job });
    const out = await ok(c, 'job_output', { session, job, wait: 10 });
    check(out.job === job && out.data.startsWith(`started-${mark}\n`) && out.state === 'killed',
      'job_output of the cancelled command: killed', out);
    // The session is free again, and no answer came for the cancelled request.
    const next = await ok(c, 'exec', { session, command: 'echo next' });
    check(next.stdout === 'next\n', 'the next command runs', next);
    await sleep(500);
    check(c.errors.length === 0, 'no response for the cancelled request', c.errors);
    await c.close();
  },

  async deny() {
    for (const args of [['--approval', 'deny'], ['--approval', 'ask']]) {
      const c = await connect(args); // no elicitation capability
      const { session, workdir } = await openSession(c);
      fs.mkdirSync(path.join(workdir, 'victim'));
      const text = await fails(c, 'exec', { session, command: 'rm -r victim' }, 'denied');
      check(fs.existsSync(path.join(workdir, 'victim')), `${args}: the directory is still there`);
      check(/rm-recursive|recursive delete/.test(text), 'the message names the rule', text);
      const fine = await ok(c, 'exec', { session, command: 'ls' });
      check(fine.stdout === 'victim\n', `${args}: a harmless command runs`, fine);
      await c.close();
    }
  },

  async elicit() {
    const asked = [];
    const answer = (a) => (params) => { asked.push(params); return a; };
    const yes = await connect(['--approval', 'ask'], { elicit: answer({ action: 'accept', content: { decision: 'once' } }) });
    const { session, workdir } = await openSession(yes);
    fs.mkdirSync(path.join(workdir, 'v1'));
    const r = await ok(yes, 'exec', { session, command: 'rm -r v1' });
    check(r.exit_code === 0 && !fs.existsSync(path.join(workdir, 'v1')), 'approved once: it ran', r);
    check(asked.length === 1, 'asked once', asked);
    const q = asked[0];
    check(q.mode === 'form' && q.message.includes(session) && q.message.includes('rm -r v1') &&
      /rm-recursive|recursive delete/.test(q.message), 'the question names session, command and rules', q);
    check(q.requestedSchema?.type === 'object' && q.requestedSchema.required?.includes('decision') &&
      JSON.stringify(q.requestedSchema.properties?.decision?.enum) === '["once","session","always","deny"]',
    'the requested schema', q.requestedSchema);
    // once: the next one is asked again.
    fs.mkdirSync(path.join(workdir, 'v2'));
    await ok(yes, 'exec', { session, command: 'rm -r v2' });
    check(asked.length === 2, 'once is for one command', asked.length);
    await yes.close();

    for (const a of [{ action: 'decline' }, { action: 'cancel' }, { action: 'accept', content: { decision: 'deny' } }]) {
      asked.length = 0;
      const no = await connect(['--approval', 'ask'], { elicit: answer(a) });
      const o = await openSession(no);
      fs.mkdirSync(path.join(o.workdir, 'v3'));
      await fails(no, 'exec', { session: o.session, command: 'rm -r v3' }, 'denied');
      check(asked.length === 1 && fs.existsSync(path.join(o.workdir, 'v3')), `${JSON.stringify(a)}: denied, nothing ran`);
      await no.close();
    }
  },

  async jobs() {
    const c = await connect();
    const { session } = await openSession(c);
    const bg = await ok(c, 'exec', { session, background: true,
      command: 'for i in 1 2 3; do echo tick $i; sleep 0.3; done; exit 3' });
    check(bg.background === true && Number.isInteger(bg.job) && typeof bg.posture === 'object', 'background', bg);
    const first = await ok(c, 'job_output', { session, job: bg.job });
    check(first.job === bg.job && first.state === 'running' && first.exit_code === null,
      'running at first', first);
    const rest = await ok(c, 'job_output', { session, job: bg.job, offset: first.next_offset, wait: 20 });
    check(rest.state === 'exited' && rest.exit_code === 3 && rest.cause === 'exited', 'exited 3', rest);
    check(first.data + rest.data === 'tick 1\ntick 2\ntick 3\n' && rest.next_offset === 21,
      'the offsets chain', { first, rest });
    const end = await ok(c, 'job_output', { session, job: bg.job, offset: rest.next_offset });
    check(end.data === '' && end.next_offset === 21, 'nothing past the end', end);
    const mid = await ok(c, 'job_output', { session, job: bg.job, offset: 7 });
    check(mid.data === 'tick 2\ntick 3\n', 'from an offset', mid);

    const tr = await ok(c, 'exec', { session, background: true, command: 'tr a-z A-Z' });
    const w1 = await ok(c, 'job_stdin', { session, job: tr.job, data: 'hello\n' });
    check(w1.job === tr.job && w1.bytes === 6 && w1.eof === false, 'job_stdin', w1);
    const w2 = await ok(c, 'job_stdin', { session, job: tr.job, data: 'world\n', eof: true });
    check(w2.bytes === 6 && w2.eof === true, 'job_stdin with eof', w2);
    const up = await ok(c, 'job_output', { session, job: tr.job, wait: 20 });
    check(up.data === 'HELLO\nWORLD\n' && up.state === 'exited' && up.exit_code === 0, 'tr', up);
    await fails(c, 'job_stdin', { session, job: tr.job, data: 'late' }, 'job_error');

    const mark = `${600000 + Math.floor(Math.random() * 300000)}`;
    const sl = await ok(c, 'exec', { session, background: true, command: `sleep ${mark}` });
    for (let i = 0; i < 50 && pgrep(`sleep ${mark}`).length === 0; i++) await sleep(100);
    check(pgrep(`sleep ${mark}`).length >= 1, 'the background sleep runs');
    const k = await ok(c, 'job_kill', { session, job: sl.job });
    check(k.job === sl.job && k.state === 'killed' && k.exit_code === 143 && typeof k.cause === 'string',
      'job_kill', k);
    check(await gone(`sleep ${mark}`, 3), 'the killed sleep is gone');
    await fails(c, 'job_output', { session, job: 99999 }, 'no_job');
    await c.close();
  },

  // A terminal for the agent: exec with pty, then typing (job_stdin),
  // reading the screen (job_output) and resizing (job_resize).
  async pty() {
    const c = await connect();
    const { session } = await openSession(c);
    const fg = await ok(c, 'exec', { session, command: 'tty; stty size; echo "$TERM"',
      pty: { rows: 30, cols: 100, term: 'vt100' } });
    check(/^\/dev\/pts\/\d+\r\n30 100\r\nvt100\r\n$/.test(fg.stdout) && fg.stderr === '' &&
      fg.exit_code === 0, 'a terminal of the size and TERM asked', fg);
    const plain = await ok(c, 'exec', { session, command: 'tty' });
    check(plain.stdout === 'not a tty\n', 'without pty, none', plain);
    for (const pty of [{ rows: 24, colour: 1 }, { rows: 0 }, { cols: 1001 }, true]) {
      await fails(c, 'exec', { session, command: 'true', pty }, 'bad_arguments');
    }
    await fails(c, 'exec', { session, command: 'true', pty: { term: '../x' } }, 'bad_request');

    const bg = await ok(c, 'exec', { session, background: true, pty: {},
      command: 'stty size; while read l; do echo "got:$l"; [ "$l" = size ] && stty size; done; exit 5' });
    check(bg.background === true && Number.isInteger(bg.job), 'a background job on a terminal', bg);
    // The screen so far, read on until want shows up (or 20 s).
    let screen = '', offset = 0;
    const until = async (want) => {
      for (let i = 0; i < 100 && !want.test(screen); i++) {
        const o = await ok(c, 'job_output', { session, job: bg.job, offset });
        screen += o.data;
        offset = o.next_offset;
        if (!want.test(screen)) await sleep(200);
      }
      check(want.test(screen), `the screen shows ${want}`, screen);
    };
    await until(/^24 80\r\n/);
    const w = await ok(c, 'job_stdin', { session, job: bg.job, data: 'hello\r' });
    check(w.bytes === 6 && w.eof === false, 'typed', w);
    await until(/hello\r\ngot:hello\r\n/); // the terminal echoes, then the program answers
    const r = await ok(c, 'job_resize', { session, job: bg.job, rows: 40, cols: 120 });
    check(r.job === bg.job && r.rows === 40 && r.cols === 120, 'job_resize', r);
    await ok(c, 'job_stdin', { session, job: bg.job, data: 'size\r' });
    await until(/got:size\r\n40 120\r\n/);
    await fails(c, 'job_resize', { session, job: bg.job, rows: 10 }, 'bad_arguments');
    await fails(c, 'job_resize', { session, job: bg.job, rows: 10, cols: 10, x: 1 }, 'bad_arguments');
    // eof on a terminal is a typed ^D: read ends, the job with it.
    await ok(c, 'job_stdin', { session, job: bg.job, data: '', eof: true });
    const end = await ok(c, 'job_output', { session, job: bg.job, offset, wait: 20 });
    check(end.state === 'exited' && end.exit_code === 5, 'the job ended at ^D', end);
    // A job without a terminal cannot be resized.
    const sl = await ok(c, 'exec', { session, background: true, command: 'sleep 5' });
    await fails(c, 'job_resize', { session, job: sl.job, rows: 10, cols: 10 }, 'bad_request');
    await ok(c, 'job_kill', { session, job: sl.job });
    await c.close();
    check(c.errors.length === 0, 'no protocol errors', c.errors);
  },

  async files() {
    const c = await connect();
    const { session, workdir } = await openSession(c);
    const blob = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70000)]);
    const u = await ok(c, 'upload', { session, path: 'blob.bin', data: blob.toString('base64'), mode: '0600' });
    check(u.path === `${workdir}/blob.bin` && u.files === 1 && u.bytes === blob.length, 'upload data', u);
    check(fs.readFileSync(u.path).equals(blob) && (fs.statSync(u.path).mode & 0o777) === 0o600,
      'the uploaded bytes and mode');
    const d = await ok(c, 'download', { session, path: 'blob.bin' });
    check(Buffer.from(d.data, 'base64').equals(blob) && d.files === 1 && d.bytes === blob.length &&
      d.mode === '0600', 'download inline', { ...d, data: d.data.length });

    // source and dest: host paths the daemon (the test user) reads and writes.
    const host = scratch('host');
    const src = path.join(host, 'tree');
    fs.mkdirSync(path.join(src, 'inner'), { recursive: true });
    fs.writeFileSync(path.join(src, 'a.bin'), blob);
    fs.writeFileSync(path.join(src, 'inner', 'b.txt'), 'bee\n');
    execFileSync('chmod', ['-R', 'a+rX', src]);
    const us = await ok(c, 'upload', { session, path: 'tree', source: src });
    check(us.files === 2 && us.bytes === blob.length + 4, 'upload source', us);
    const inside = await ok(c, 'exec', { session, command: 'cat tree/inner/b.txt; wc -c < tree/a.bin' });
    check(inside.stdout === `bee\n${blob.length}\n`, 'the tree is in the sandbox', inside);
    const dest = path.join(host, 'back');
    const ds = await ok(c, 'download', { session, path: 'tree', dest });
    check(ds.dest === dest && ds.files === 2 && ds.bytes === blob.length + 4, 'download to dest', ds);
    check(fs.readFileSync(path.join(dest, 'a.bin')).equals(blob) &&
      fs.readFileSync(path.join(dest, 'inner', 'b.txt'), 'utf8') === 'bee\n', 'the downloaded tree');
    // An existing directory takes it under its own name, once.
    const again = await ok(c, 'download', { session, path: 'tree', dest });
    check(again.dest === path.join(dest, 'tree') && again.files === 2, 'download into a directory', again);
    check(fs.readFileSync(path.join(dest, 'tree', 'inner', 'b.txt'), 'utf8') === 'bee\n', 'the tree in it');
    await fails(c, 'download', { session, path: 'tree', dest }, 'exists');
    await fails(c, 'upload', { session, path: '/etc/airlock-mcp-test', data: 'aGkK' }, 'refused');
    await c.close();
  },

  // Host paths the model names stay under the --files-root directories
  // (default: the server's current directory, MCP_WORKDIR); the ssh host,
  // the network and the configuration are not the model's to choose.
  async reach() {
    const c = await connect();
    const outside = fs.mkdtempSync('/tmp/airlock-mcp-outside-');
    execFileSync('chmod', ['0755', outside]);
    const owner = fs.statSync(WORKDIR);
    fs.chownSync(outside, owner.uid, owner.gid);
    fs.writeFileSync(path.join(outside, 'secret'), 'not for the sandbox\n');
    execFileSync('chmod', ['0644', path.join(outside, 'secret')]);
    try {
      let t = await fails(c, 'open_session', { session: `s-${uniq()}`, workdir: outside }, 'refused');
      check(t.includes('--files-root'), 'the refusal says how to allow it', t);
      // a symlink under the root that leads out is judged where it leads
      const link = path.join(scratch('link'), 'out');
      fs.symlinkSync(outside, link);
      await fails(c, 'open_session', { session: `s-${uniq()}`, workdir: link }, 'refused');
      for (const key of ['host', 'network', 'config', 'approval']) {
        t = await fails(c, 'open_session', { session: `s-${uniq()}`, [key]: 'x' }, 'bad_arguments');
        check(t.includes(key), `${key} is not the model's`, t);
      }
      const { session, workdir } = await openSession(c);
      await fails(c, 'upload', { session, path: 'stolen', source: path.join(outside, 'secret') }, 'refused');
      await fails(c, 'upload', { session, path: 'stolen', source: '/etc/passwd' }, 'refused');
      check(!fs.existsSync(path.join(workdir, 'stolen')), 'nothing was uploaded');
      await ok(c, 'exec', { session, command: 'echo made > made.txt' });
      await fails(c, 'download', { session, path: 'made.txt', dest: path.join(outside, 'planted') }, 'refused');
      await fails(c, 'download', { session, path: 'made.txt', dest: path.join(link, 'planted') }, 'refused');
      check(!fs.existsSync(path.join(outside, 'planted')), 'nothing was written outside');
      // a second root lets it in
      const c2 = await connect(['--files-root', WORKDIR, '--files-root', outside]);
      const other = await openSession(c2, { workdir: outside });
      check(other.opened.cwd === fs.realpathSync(outside), 'a --files-root is usable', other.opened);
      await ok(c2, 'close_session', { session: other.session });
      await c2.close();
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
    await c.close();
  },

  async truncated() {
    const c = await connect();
    const { session } = await openSession(c);
    const full = Array.from({ length: 30000 }, (_, i) => `${i + 1}\n`).join('');
    const r = await c.callTool({ name: 'exec', arguments: { session, command: 'seq 1 30000' } });
    check(!r.isError, 'seq ran', r);
    const s = r.structuredContent;
    check(s.truncated === true && s.exit_code === 0 && s.stdout.length < full.length, 'truncated', { ...s, stdout: s.stdout.length });
    check(s.output_uri === `airlock://sessions/${session}/jobs/${s.job}/output`, 'output_uri', s.output_uri);
    const link = r.content.find((i) => i.type === 'resource_link');
    check(link && link.uri === s.output_uri && typeof link.name === 'string', 'a resource_link to the output', r.content);
    const read = await c.readResource({ uri: s.output_uri });
    check(read.contents.length === 1 && read.contents[0].uri === s.output_uri &&
      read.contents[0].mimeType === 'text/plain' && read.contents[0].text === full, 'resources/read gives it all',
    { ...read.contents[0], text: read.contents[0]?.text?.length });
    const listed = await c.listResources();
    check(listed.resources.some((x) => x.uri === s.output_uri), 'resources/list offers it', listed);
    const tpl = await c.listResourceTemplates();
    check(tpl.resourceTemplates.some((x) => x.uriTemplate === 'airlock://sessions/{session}/jobs/{job}/output' &&
      x.mimeType === 'text/plain'), 'the template', tpl);
    await c.close();
  },

  async ownership() {
    const a = await connect();
    const b = await connect();
    const { session } = await openSession(a);
    const text = await fails(b, 'exec', { session, command: 'true' }, 'not_owner');
    check(text.includes(`"${session}"`), 'the message names the session', text);
    for (const [tool, args] of [['close_session', {}], ['job_output', { job: 1 }], ['job_kill', { job: 1 }],
      ['job_resize', { job: 1, rows: 10, cols: 10 }],
      ['job_stdin', { job: 1, data: 'x' }], ['upload', { path: 'x', data: 'aGkK' }], ['download', { path: 'x' }]]) {
      await fails(b, tool, { session, ...args }, 'not_owner');
    }
    const seen = (await ok(b, 'list_sessions', {})).sessions.find((x) => x.session === session);
    check(seen && (seen.access === undefined || seen.access === 'other'), 'b sees it as another client\'s', seen);
    const mine = (await ok(a, 'list_sessions', {})).sessions.find((x) => x.session === session);
    check(mine && mine.state === 'idle' && (mine.access === undefined || mine.access === 'yours'), 'a sees it as its own', mine);
    // A command-line client has no owner: refused too.
    const [cmd, ...rest] = AIRLOCK;
    const cli = spawnSync(cmd, [...rest, 'exec', session, '--', 'echo', 'cli'], { encoding: 'utf8', timeout: 30000 });
    check(cli.status === 1 && cli.stdout === '' && /another client|not_owner/.test(cli.stderr), 'the CLI is refused',
      { status: cli.status, stdout: cli.stdout, stderr: cli.stderr });

    const shared = await connect(['--share']);
    const o = await openSession(shared);
    check(o.opened.shared === true, 'a shared session says so', o.opened);
    const r = await ok(b, 'exec', { session: o.session, command: 'echo from b' });
    check(r.stdout === 'from b\n', 'another client uses a shared session', r);
    await ok(b, 'close_session', { session: o.session });

    const cl = await ok(a, 'close_session', { session });
    check(cl.session === session && cl.closed === true, 'close_session', cl);
    const after = await ok(a, 'list_sessions', {});
    check(!after.sessions.some((x) => x.session === session), 'closed: not listed', after);
    await fails(a, 'exec', { session, command: 'true' }, 'no_session');
    for (const x of [a, b, shared]) await x.close();
  },

  async lifetime() {
    // Without --client-id: the sessions close with the server's stdin.
    const a = await connect();
    const { session } = await openSession(a);
    const mark = `${600000 + Math.floor(Math.random() * 300000)}`;
    await ok(a, 'exec', { session, command: `sleep ${mark}.5`, background: true });
    await ok(a, 'exec', { session, command: `sleep ${mark}.7 & sleep 0.2` });
    check(pgrep(`sleep ${mark}`).length === 2, 'its commands run', pgrep(`sleep ${mark}`));
    await a.close();
    check(await gone(`sleep ${mark}`, 10), 'a client that leaves leaves nothing running',
      pgrep(`sleep ${mark}`));
    const b = await connect();
    let left = (await ok(b, 'list_sessions', {})).sessions.map((x) => x.session);
    for (let i = 0; i < 30 && left.includes(session); i++) {
      await sleep(100);
      left = (await ok(b, 'list_sessions', {})).sessions.map((x) => x.session);
    }
    check(!left.includes(session), 'closed with the server\'s stdin', left);

    // With --client-id they stay, for the same id next time.
    const id = `tests-${uniq()}`;
    const c1 = await connect(['--client-id', id]);
    const kept = await openSession(c1);
    await ok(c1, 'exec', { session: kept.session, command: 'export MARK=kept' });
    await c1.close();
    await sleep(300);
    const c2 = await connect(['--client-id', id]);
    const s = (await ok(c2, 'list_sessions', {})).sessions.find((x) => x.session === kept.session);
    check(s && s.access === 'yours', 'the session stayed, and is this client\'s', s);
    const r = await ok(c2, 'exec', { session: kept.session, command: 'echo $MARK' });
    check(r.stdout === 'kept\n', 'and is the same session', r);
    await fails(b, 'exec', { session: kept.session, command: 'true' }, 'not_owner');
    await ok(c2, 'close_session', { session: kept.session });
    await c2.close();
    await b.close();
  },

  // The daemon killed under a running exec: the call ends with an error
  // that says so, the server stays, and the next call starts a new daemon,
  // which knows the session as lost.
  async daemon() {
    const c = await connect();
    const { session } = await openSession(c);
    const mark = `${600000 + Math.floor(Math.random() * 300000)}`;
    const call = c.callTool({ name: 'exec', arguments: { session, command: `echo up; sleep ${mark}` } });
    for (let i = 0; i < 100 && pgrep(`sleep ${mark}`).length === 0; i++) await sleep(100);
    const status = spawnSync(AIRLOCK[0], [...AIRLOCK.slice(1), 'daemon', 'status'], { encoding: 'utf8' });
    const pid = /running, pid (\d+),/.exec(status.stdout)?.[1];
    check(pid, 'the daemon runs', status);
    process.kill(Number(pid), 'SIGKILL');
    const r = await call;
    check(r.isError === true && r.content[0].text.startsWith('daemon_gone: '), 'the exec says the daemon went away', r);
    check(await gone(`sleep ${mark}`, 10), 'its command did not outlive it', pgrep(`sleep ${mark}`));
    const l = await ok(c, 'list_sessions', {});
    check(l.sessions.some((x) => x.session === session && x.state === 'lost'), 'a new daemon knows it lost the session', l);
    await ok(c, 'close_session', { session });
    const { session: s2 } = await openSession(c);
    const e = await ok(c, 'exec', { session: s2, command: 'echo again' });
    check(e.stdout === 'again\n', 'and works', e);
    await c.close();
    check(c.errors.length === 0, 'no protocol errors', c.errors);
  },

  // docs/mcp.md's client configurations: MCP_ARGS (JSON) are the args
  // after "airlock"; it initializes and lists the ten tools.
  async config() {
    const args = JSON.parse(process.env.MCP_ARGS);
    check(args[0] === 'mcp', 'the args start with mcp', args);
    const c = await connect(args.slice(1));
    const { tools } = await c.listTools();
    check(tools.length === TOOLS.length && TOOLS.every((n) => tools.some((t) => t.name === n)), 'the tools', tools.map((t) => t.name));
    await c.close();
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`usage: node client.mjs ${Object.keys(scenarios).join('|')}`);
  process.exit(2);
}
try {
  await scenarios[name]();
  console.log(`ok ${name}`);
  process.exit(0);
} catch (e) {
  console.error(`not ok ${name}: ${e.stack ?? e}`);
  process.exit(1);
}

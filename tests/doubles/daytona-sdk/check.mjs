// SPDX-License-Identifier: MIT
// The official Daytona TypeScript SDK (@daytonaio/sdk, pinned in
// package.json), unchanged, against the double: the double's fidelity is
// proven by the official client accepting it, not assumed.  Only where it
// connects is ours: DAYTONA_DOUBLE=http://127.0.0.1:PORT, DAYTONA_API_KEY.
// Prints one "ok - ..." line per step; exits non-zero at the first failure.
import { Daytona } from '@daytonaio/sdk';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const sdkVersion = require('@daytonaio/sdk/package.json').version;
const base = process.env.DAYTONA_DOUBLE;
const apiKey = process.env.DAYTONA_API_KEY;
if (!base || !apiKey) {
  console.error('check.mjs: set DAYTONA_DOUBLE (http://127.0.0.1:PORT) and DAYTONA_API_KEY');
  process.exit(2);
}

let step = 0;
function ok(what) {
  step += 1;
  console.log(`ok ${step} - ${what}`);
}
function expect(cond, what, got) {
  if (!cond) {
    throw new Error(`${what}: got ${JSON.stringify(got)}`);
  }
  ok(what);
}

const daytona = new Daytona({ apiKey, apiUrl: `${base}/api`, target: 'us' });
const name = `sdk-proof-${process.pid}`;
let sandbox;
try {
  // Created from an image (buildInfo "FROM ...", as airlock does).
  sandbox = await daytona.create(
    { image: 'debian:bookworm-slim', name, labels: { 'airlock.test': 'sdk' }, autoStopInterval: 0 },
    { timeout: 60 },
  );
  expect(sandbox.state === 'started', `create ${name} from an image: started`, sandbox.state);

  const got = await daytona.get(name);
  expect(got.id === sandbox.id, 'get by name finds it', got.id);

  const items = [];
  for await (const s of daytona.list({ labels: { 'airlock.test': 'sdk' } })) items.push(s);
  expect(items.length === 1 && items[0].id === sandbox.id, 'list by label finds it', items.map((s) => s.id));

  const wd = await sandbox.getWorkDir();
  expect(typeof wd === 'string' && wd.startsWith('/'), 'work-dir', wd);

  const ex = await sandbox.process.executeCommand('echo hello; echo oops >&2; exit 4', undefined, undefined, 10);
  expect(ex.exitCode === 4 && ex.result === 'hello\noops\n', 'process.executeCommand: merged output, exit code', ex);

  // A command in a session: sync, then async with logs and status.
  await sandbox.process.createSession('proof');
  const sync = await sandbox.process.executeSessionCommand('proof', {
    command: 'export GREETING=hi; cd /tmp; echo out; echo err >&2',
  });
  expect(sync.exitCode === 0 && sync.stdout === 'out\n' && sync.stderr === 'err\n',
    'session exec (sync): stdout and stderr apart', sync);

  const started = await sandbox.process.executeSessionCommand('proof', {
    command: 'echo "$GREETING from $(pwd)"; echo to-stderr >&2; sh -c "exit 7"',
    runAsync: true,
  });
  expect(typeof started.cmdId === 'string', 'session exec (async): a command id (no exit: it would end the session shell, as on Daytona)', started);
  let cmd;
  for (let i = 0; i < 200; i += 1) {
    cmd = await sandbox.process.getSessionCommand('proof', started.cmdId);
    if (cmd.exitCode !== undefined && cmd.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(cmd.exitCode === 7, 'session command status: exit code once done (state kept: env, cwd)', cmd);
  const logs = await sandbox.process.getSessionCommandLogs('proof', started.cmdId);
  expect(logs.stdout === 'hi from /tmp\n' && logs.stderr === 'to-stderr\n',
    'session command logs: stdout and stderr', logs);
  await sandbox.process.deleteSession('proof');
  ok('delete session');

  // Files: up, back, compared byte for byte.
  const data = Buffer.alloc(200000);
  for (let i = 0; i < data.length; i += 1) data[i] = (i * 7 + 3) & 0xff;
  await sandbox.fs.uploadFile(data, '/tmp/proof/blob.bin');
  ok('fs.uploadFile (200000 bytes, binary)');
  const info = await sandbox.fs.getFileDetails('/tmp/proof/blob.bin');
  expect(info.size === data.length && !info.isDir, 'fs.getFileDetails', info);
  const back = await sandbox.fs.downloadFile('/tmp/proof/blob.bin');
  expect(Buffer.compare(Buffer.from(back), data) === 0, 'fs.downloadFile: the same bytes', back.length);

  // A terminal: the toolbox's PTY, its output and input over a WebSocket.
  let out = '';
  const dec = new TextDecoder();
  const onData = (d) => { out += dec.decode(d, { stream: true }); };
  const waitOut = async (re, what) => {
    for (let i = 0; i < 300 && !re.test(out); i += 1) await new Promise((r) => setTimeout(r, 50));
    expect(re.test(out), what, out);
  };
  const pty = await sandbox.process.createPty({ id: 'proof-pty', cols: 100, rows: 30, onData });
  await pty.waitForConnection();
  expect(pty.isConnected(), 'process.createPty (lazy start): connected', pty.isConnected());
  await pty.sendInput('stty size; tty; echo $TERM\n');
  await waitOut(/[\r\n]30 100\r?\n/, 'pty: the window is 30 rows, 100 columns');
  await waitOut(/[\r\n]\/dev\/pts\/\d+\r?\n/, 'pty: a terminal of the sandbox (/dev/pts/N)');
  await waitOut(/[\r\n]xterm-256color\r?\n/, 'pty: TERM=xterm-256color by default');
  await pty.resize(120, 40);
  out = '';
  await pty.sendInput('stty size\n');
  await waitOut(/[\r\n]40 120\r?\n/, 'pty resize(120, 40): stty size says 40 120');
  const pinfo = await sandbox.process.getPtySessionInfo('proof-pty');
  expect(pinfo.id === 'proof-pty' && pinfo.cols === 120 && pinfo.rows === 40 && pinfo.active === true,
    'getPtySessionInfo: the new size, active', pinfo);
  const ptys = await sandbox.process.listPtySessions();
  expect(ptys.some((p) => p.id === 'proof-pty'), 'listPtySessions has it', ptys);
  await pty.sendInput('exit 3\n');
  const res = await pty.wait();
  expect(res.exitCode === 3, 'pty: exit 3 -> wait() gives exit code 3', res);
  let ptyGone = false;
  try {
    await sandbox.process.getPtySessionInfo('proof-pty');
  } catch (e) {
    ptyGone = true;
  }
  expect(ptyGone, 'the ended PTY session is gone (404)', ptyGone);
  const pty2 = await sandbox.process.createPty({ id: 'proof-pty2', onData });
  await pty2.waitForConnection();
  await sandbox.process.killPtySession('proof-pty2');
  const res2 = await pty2.wait();
  expect(res2.exitCode === 137 && res2.error === 'SIGKILL', 'killPtySession: wait() gives exit code 137 (SIGKILL)', res2);

  await sandbox.delete();
  ok('delete sandbox');
  sandbox = null;
  let gone = false;
  try {
    await daytona.get(name);
  } catch (e) {
    gone = true;
  }
  expect(gone, 'the deleted sandbox is gone (404)', gone);
  console.log(`# @daytonaio/sdk ${sdkVersion}: ${step} checks passed`);
} catch (e) {
  console.log(`not ok ${step + 1} - ${e && e.message ? e.message : e}`);
  if (sandbox) {
    try { await sandbox.delete(); } catch { /* the double's reset removes it */ }
  }
  process.exit(1);
}

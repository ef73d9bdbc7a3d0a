// SPDX-License-Identifier: MIT
// The official Modal JavaScript SDK (npm `modal`, libmodal, pinned in
// package.json), unchanged, against the double: the double's fidelity is
// proven by the official client accepting it, not assumed.  Only where it
// connects is ours: MODAL_SERVER_URL=http://127.0.0.1:PORT,
// MODAL_TOKEN_ID, MODAL_TOKEN_SECRET (the SDK's own settings).
//
// MODAL_SANDBOX_V2 (an SDK setting): unset, this script sets 0, the V1
// sandbox path (SandboxCreate, SandboxGetTaskId, TaskGetCommandRouterAccess),
// which airlock's client follows; 1 is 0.11.1's own default, V2
// (SandboxCreateV2 answers with the task and router access).
// MODAL_IMAGE_BUILDER_VERSION: set to 2024.10 when unset (else the SDK asks
// the server's environment settings, an RPC the double has not).
// Prints one "ok N - ..." line per step; exits non-zero at the first failure.
process.env.MODAL_SANDBOX_V2 ??= '0';
process.env.MODAL_IMAGE_BUILDER_VERSION ??= '2024.10';
const { ModalClient } = await import('modal');

for (const v of ['MODAL_SERVER_URL', 'MODAL_TOKEN_ID', 'MODAL_TOKEN_SECRET']) {
  if (!process.env[v]) {
    console.error(`check.mjs: set ${v} (MODAL_SERVER_URL=http://127.0.0.1:PORT of the double)`);
    process.exit(2);
  }
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

const modal = new ModalClient();
const sdkVersion = modal.version();
let sb;
try {
  const app = await modal.apps.fromName('airlock-sdk-proof', { createIfMissing: true });
  expect(typeof app.appId === 'string' && app.appId.length > 0, 'apps.fromName (create if missing): an app id', app.appId);

  const image = modal.images.fromRegistry('debian:bookworm-slim');
  await image.build(app);
  expect(image.imageId.length > 0, 'images.fromRegistry + build: joined the streamed build to SUCCESS', image.imageId);

  const v2 = !['0', 'false'].includes(process.env.MODAL_SANDBOX_V2.toLowerCase());
  sb = await modal.sandboxes.create(app, image, { timeoutMs: 120000, env: { PROOF_SANDBOX: 'sandbox-env' } });
  expect(/^sb-/.test(sb.sandboxId), v2 ? `sandboxes.create (V2): ${sb.sandboxId}`
    : `sandboxes.create (V1): ${sb.sandboxId}, scheduled (a task id after empty polls)`, sb.sandboxId);

  const p1 = await sb.exec(['sh', '-c', 'echo hello from modal; printf "%s\\n" "$0" "$@"', 'a b', 'c'], { timeoutMs: 30000 });
  const out1 = await p1.stdout.readText();
  const code1 = await p1.wait();
  expect(out1 === 'hello from modal\na b\nc\n', 'exec: stdout, argv kept word for word', out1);
  expect(code1 === 0, 'exec: exit code 0', code1);

  const p2 = await sb.exec(['sh', '-c', 'echo out; echo oops >&2; exit 3']);
  const [out2, err2] = await Promise.all([p2.stdout.readText(), p2.stderr.readText()]);
  const code2 = await p2.wait();
  expect(out2 === 'out\n' && err2 === 'oops\n', 'exec: stdout and stderr apart', { out2, err2 });
  expect(code2 === 3, 'exec: non-zero exit code', code2);

  const pe = await sb.exec(['sh', '-c', 'echo "$PROOF_SANDBOX $PROOF_EXEC"; pwd'],
    { env: { PROOF_EXEC: 'exec-env' }, workdir: '/tmp' });
  const oute = await pe.stdout.readText();
  expect(oute === 'sandbox-env exec-env\n/tmp\n' && (await pe.wait()) === 0,
    'exec: the sandbox env, the exec env and workdir apply', oute);

  const p3 = await sb.exec(['cat']);
  await p3.stdin.writeText('through stdin\n');
  await p3.stdin.close();
  const out3 = await p3.stdout.readText();
  expect(out3 === 'through stdin\n' && (await p3.wait()) === 0, 'exec: stdin written by offset, then EOF', out3);

  // pty: true (the SDK's PTYInfo: 24x80, xterm-256color): one terminal,
  // all output on stdout (the SDK documents stderr as empty), input typed.
  const pt = await sb.exec(['sh', '-c', 'tty; stty size; echo "$TERM"; echo to-stderr >&2; read x; echo "got $x"'],
    { pty: true, timeoutMs: 30000 });
  await pt.stdin.writeText('typed\n');
  const [outt, errt] = await Promise.all([pt.stdout.readText(), pt.stderr.readText()]);
  const codet = await pt.wait();
  // The terminal echoes what was typed when it arrives: before the first
  // line or between any two, as the machine's load has it.
  const shown = outt.replace(/(^|\n)typed\r\n/, '$1');
  expect(/^\/dev\/pts\/\d+\r\n/.test(shown) && shown.includes('\r\n24 80\r\nxterm-256color\r\nto-stderr\r\n')
    && outt.endsWith('got typed\r\n') && errt === '' && codet === 0,
    'exec with pty: a terminal of 24x80 and TERM, one stream (\\r\\n), typed input echoed', { outt, errt, codet });

  const p4 = await sb.exec(['sleep', '30'], { timeoutMs: 1000 });
  const code4 = await p4.wait();
  expect(code4 === 137, 'exec: timeoutMs enforced by the server (killed: 128+9)', code4);

  expect((await sb.poll()) === null, 'poll: still running', null);
  await sb.terminate();
  ok('terminate');
  const code = await sb.wait();
  expect(typeof code === 'number', `wait after terminate: the sandbox ended (${code})`, code);
  let gone = false;
  try {
    const p5 = await sb.exec(['true']);
    await p5.wait();
  } catch (e) {
    gone = true;
  }
  expect(gone, 'exec after terminate fails', gone);
  sb = null;
  console.log(`# modal (JS SDK) ${sdkVersion}, ${v2 ? 'V2' : 'V1'} sandboxes: ${step} checks passed`);
  modal.close();
  process.exit(0);
} catch (e) {
  console.log(`not ok ${step + 1} - ${e && e.message ? e.message : e}`);
  if (sb) {
    try { await sb.terminate(); } catch { /* the double ends it at exit */ }
  }
  process.exit(1);
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# `airlock mcp` (docs/mcp.md) driven by the official MCP clients: the
# TypeScript SDK (tests/mcp/client.mjs, one scenario a test) and the
# Inspector's CLI, pinned in tests/mcp/sdk and tests/mcp/inspector and
# installed by `make sdk-proofs` into $(BUILDDIR)/mcp-sdk and mcp-inspector;
# the protocol's error paths with raw lines (tests/mcp/raw.py); and every
# client configuration that docs/mcp.md shows.  node runs as root (CI's
# clone may sit where the test user cannot enter); the server it starts is
# `airlock mcp` as the test user, as as_user runs commands.

load helpers
bats_require_minimum_version 1.5.0

setup_file () {
  W=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  local b=${BUILDDIR:-build}
  case $b in /*) ;; *) b=$W/$b ;; esac
  export W MCP_SDK=$b/mcp-sdk MCP_INSPECTOR=$b/mcp-inspector
  [ -f "$MCP_SDK/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
    cp "$W/tests/mcp/client.mjs" "$MCP_SDK/client.mjs"
  true
}

setup () {
  command -v node > /dev/null || skip "node is not installed (the MCP clients need node and npm)"
  [ -f "$MCP_SDK/node_modules/@modelcontextprotocol/sdk/package.json" ] || {
    echo "the official MCP SDK is not installed in $MCP_SDK: \`make mcp-sdk\` (make check does it; it needs npm and the npm registry)" >&2
    return 1
  }
  RUNDIR="$T/xdg-mcp-$BATS_TEST_NUMBER"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_DAEMON_IDLE_EXIT=30"
  # The sessions' workdirs, and the server's cwd.
  export MCP_WORKDIR="$WORK/mcp-$BATS_TEST_NUMBER"
  rm -rf "$MCP_WORKDIR"
  mkdir -p "$MCP_WORKDIR"
  chown "$TEST_USER" "$MCP_WORKDIR"
  # airlock as the test user, with as_user's environment.
  MCP_CMD=(runuser -u "$TEST_USER" -- env -i -C "$MCP_WORKDIR" PATH=/usr/local/bin:/usr/bin:/bin
           AIRLOCK_HELPER="$AIRLOCK_HELPER" AIRLOCK_DAEMON="${AIRLOCK_DAEMON:-}" HOME="$TEST_HOME"
           AIRLOCK_POLICY_MODE=approve $EXTRA_ENV "$AIRLOCK")
  MCP_AIRLOCK=$(node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- "${MCP_CMD[@]}")
  export MCP_AIRLOCK
}

teardown () {
  as_user timeout -k 5 20 "$AIRLOCK" daemon stop > /dev/null 2>&1 || true
  rm -rf "$MCP_WORKDIR" "$RUNDIR"
}

# One scenario of tests/mcp/client.mjs, which prints "ok NAME" last.
scenario () {
  run timeout -k 5 "${2:-120}" node "$MCP_SDK/client.mjs" "$1"
  echo "$output"
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" | grep -qx "ok $1"
}

@test "mcp: initialize negotiates the latest version and says what the server offers" {
  scenario initialize
}

@test "mcp: the ten tools, every input and output schema compiles with Ajv (draft 2020-12, strict)" {
  scenario tools
}

@test "mcp: exec streams its output as progress; a non-zero exit is a result, not an error" {
  scenario exec
}

@test "mcp: a cancelled exec is killed, its job says killed, and no answer comes" {
  scenario cancel
}

@test "mcp: without someone to ask (deny, or ask without elicitation) a dangerous command is denied and does not run" {
  scenario deny
}

@test "mcp: ask mode asks through elicitation: accept runs it, decline, cancel and deny do not" {
  scenario elicit
}

@test "mcp: background jobs: output by offset, stdin with eof, kill" {
  scenario jobs
}

@test "mcp: a terminal for the agent: exec with pty, typing with job_stdin, the screen with job_output, job_resize" {
  scenario pty
}

@test "mcp: upload and download, inline and by host path, byte for byte" {
  scenario files 180
}

@test "mcp: host paths the model names stay under --files-root; the ssh host, network and settings are not its to choose" {
  scenario reach
}

@test "mcp: a truncated output links to a resource that reads back whole" {
  scenario truncated
}

@test "mcp: sessions belong to their client; --share lends them; close_session ends them" {
  scenario ownership
}

@test "mcp: stdin's end closes the server's sessions and stops their commands, unless --client-id keeps them for the same id" {
  scenario lifetime
}

@test "mcp: a daemon killed under a running exec: the call says so, the server carries on with a new daemon" {
  scenario daemon
}

@test "mcp: the protocol's errors, from raw lines, and the server answers ping after each" {
  run timeout -k 5 180 python3 "$W/tests/mcp/raw.py" "${MCP_CMD[@]}" mcp
  echo "$output"
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" | grep -qx "ok raw"
}

@test "mcp: the MCP Inspector's CLI lists the ten tools and calls one" {
  [ -x "$MCP_INSPECTOR/node_modules/.bin/mcp-inspector" ] || {
    echo "the MCP Inspector is not installed in $MCP_INSPECTOR: \`make mcp-inspector\`" >&2
    return 1
  }
  local home="$BATS_TEST_TMPDIR/inspector-home" # its catalog goes there
  mkdir -p "$home"
  # --strict: schema portability problems on stderr, exit 6 for an error.
  run --separate-stderr env HOME="$home" timeout -k 5 120 "$MCP_INSPECTOR/node_modules/.bin/mcp-inspector" --cli \
    --method tools/list --strict -- "${MCP_CMD[@]}" mcp
  echo "$output"
  echo "$stderr"
  [ "$status" -eq 0 ]
  # --strict says nothing when the schemas are portable, else "N warnings, N errors"
  [ -z "$(printf '%s\n' "$stderr" | grep -E '[1-9][0-9]* (error|warning)')" ]
  printf '%s\n' "$output" | python3 -c 'import json, sys
names = sorted(x["name"] for x in json.load(sys.stdin)["tools"])
assert names == sorted("open_session close_session list_sessions exec job_output job_stdin job_resize job_kill upload download".split()), names'
  run --separate-stderr env HOME="$home" timeout -k 5 120 "$MCP_INSPECTOR/node_modules/.bin/mcp-inspector" --cli \
    --method tools/call --tool-name list_sessions -- "${MCP_CMD[@]}" mcp
  echo "$output"
  echo "$stderr"
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" | python3 -c 'import json, sys
r = json.load(sys.stdin)
assert not r.get("isError") and r["structuredContent"] == {"sessions": []}, r'
}

@test "mcp: every JSON example of docs/mcp.md and README.md parses, and each client configuration (and claude mcp add) starts a server that lists the tools" {
  local blocks="$BATS_TEST_TMPDIR/blocks"
  # Each ```json block: its configurations' args, one JSON array a line.
  run python3 - "$blocks" "$W/docs/mcp.md" "$W/README.md" <<'PY'
import json, re, sys
text = "".join(open(f).read() for f in sys.argv[2:])
blocks = re.findall(r"^```json\n(.*?)^```$", text, re.S | re.M)
assert blocks, "no json blocks"
configs = []
for b in blocks:
    doc = json.loads(b)
    for key in ("mcpServers", "servers"):
        for name, entry in doc.get(key, {}).items():
            assert entry["command"] == "airlock", (name, entry)
            assert entry.get("type", "stdio") == "stdio", (name, entry)
            configs.append(entry.get("args", []))
# `claude mcp add ... -- airlock ARGS` lines: what follows "--" is the server.
for line in re.findall(r"^claude mcp add .*$", text, re.M):
    words = line.split(" -- ", 1)[1].split()
    assert words[0] == "airlock", line
    configs.append(words[1:])
assert len(configs) >= 5, configs
with open(sys.argv[1], "w") as f:
    for args in configs:
        f.write(json.dumps(args) + "\n")
print(len(blocks), "blocks,", len(configs), "configurations")
PY
  echo "$output"
  [ "$status" -eq 0 ]
  local args
  while IFS= read -r args; do
    echo "airlock $args"
    run env MCP_ARGS="$args" timeout -k 5 60 node "$MCP_SDK/client.mjs" config < /dev/null
    echo "$output"
    [ "$status" -eq 0 ]
  done < "$blocks"
}

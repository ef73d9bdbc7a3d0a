#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Daytona double's fidelity, proven: the official TypeScript SDK
# (@daytonaio/sdk, pinned by tests/doubles/daytona-sdk/package-lock.json,
# installed by `make check` into $BUILDDIR/daytona-sdk, never globally)
# runs tests/doubles/daytona-sdk/check.mjs against it unchanged: a
# sandbox created from an image, found by name and by label, a command
# run, a session's sync and async commands with their logs and status,
# a file up and down, the sandbox deleted.  And the double's own promises:
# its credential only from its environment, never its argv.

load helpers

setup () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || skip "needs the Daytona double (run-tests.sh starts it: DAYTONA_SUITES)"
  SDK_DIR=$(cd "${BUILDDIR:-build}" && pwd)/daytona-sdk
}

teardown () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || return 0
  timeout -k 5 30 curl -sS -X POST "$DAYTONA_DOUBLE/_double/reset" > /dev/null || true
}

@test "daytona double: the official SDK accepts it (create, get, list, exec, session logs, files, delete)" {
  [ -f "$SDK_DIR/.installed" ] || {
    echo "the official SDK is not installed in $SDK_DIR: \`make daytona-sdk\` (make check does it; it needs node, npm and the npm registry)"
    return 1
  }
  cp tests/doubles/daytona-sdk/check.mjs "$SDK_DIR/check.mjs"
  run env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$SDK_DIR" DAYTONA_DOUBLE="$DAYTONA_DOUBLE" \
    DAYTONA_API_KEY="$DAYTONA_API_KEY" timeout -k 5 240 node "$SDK_DIR/check.mjs"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"# @daytonaio/sdk "*": "*" checks passed"* ]]
  [[ "$output" != *"not ok"* ]]
}

@test "daytona double: a wrong key is refused with Daytona's 401; the key is in no process's argv" {
  run timeout -k 5 30 curl -sS -H "Authorization: Bearer not-the-key" "$DAYTONA_API_URL/sandbox"
  [[ "$output" == *'"statusCode":401'* || "$output" == *'"statusCode": 401'* ]]
  run timeout -k 5 30 curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $DAYTONA_API_KEY" "$DAYTONA_API_URL/sandbox"
  [ "$output" = 200 ]
  run ! grep -l -a -F "$DAYTONA_API_KEY" /proc/[0-9]*/cmdline 2>/dev/null
}

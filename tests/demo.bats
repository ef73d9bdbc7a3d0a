#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The README's first command, as a newcomer types it: `sudo make demo` (or
# `make demo` as root where sudo is missing) in a copy of the tree with
# nothing built and nothing installed.  Run once, as root, by run-tests.sh.

load helpers

setup_file () {
  export DEMO_TREE="$T/demo-tree"
  rm -rf "$DEMO_TREE"
  mkdir -p "$DEMO_TREE"
  # The tree as it is, without its builds or its history.
  tar -C "$BATS_TEST_DIRNAME/.." --exclude=./.git --exclude='./build*' -cf - . \
    | tar -C "$DEMO_TREE" -xf -
}

teardown_file () {
  rm -rf "$DEMO_TREE"
}

# in_copy CMD...: in the copy, bounded in time, without what the suite's
# own make passes down (a newcomer's shell has none of it).
in_copy () {
  (cd "$DEMO_TREE" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR \
    timeout -k 10 900 "$@")
}

# The README's command: `sudo make demo`, or `make demo` as root.
as_readme () {
  if command -v sudo >/dev/null; then in_copy sudo make demo; else in_copy make demo; fi
}

# The demo's directory, from its output, must be gone.
left_nothing () {
  local dir
  dir=$(grep -o '/tmp/airlock-demo\.[A-Za-z0-9]*' <<< "$output" | head -n 1)
  [ -n "$dir" ] && [ ! -e "$dir" ] && [ ! -e "/tmp/${dir##*/}.private" ]
}

# Every row of the table, each as it should be, and the closing line.
table_is_right () {
  local label
  [[ "$output" == *"approval gate: airlock policy check -- 'rm -rf ~'  =>  deny (hard-block"*"wipe-home"* ]]
  [[ "$output" == *"What the sandbox CAN see and do:"* ]]
  [[ "$output" == *"What it CANNOT:"* ]]
  for label in "who am I (your own uid)" "its own hostname" "read the workspace (same path)" \
               "write to the workspace" "write to a private /tmp" "network interfaces" \
               "processes it can see" "write to /usr or /etc" "read /etc/shadow" \
               "see anything in /home or /root" "see the host's files next to it" \
               "reach the network" "hold any capability" "gain privileges (setuid, new filters)" \
               "set the hostname" "create a user namespace" "mount something"; do
    grep -qF "  $label " <<< "$output" || { echo "missing row: $label"; return 1; }
  done
  ! grep -n WRONG <<< "$output" || false
  [[ "$output" == *"network interfaces"*" lo"* ]]
  [[ "$output" == *"hold any capability"*"CapEff 0000000000000000"* ]]
  [[ "$output" == *"exit status 0: every row is as it should be"* ]]
  [[ "$output" != *"the command's own; 124"* ]]
}

@test "sudo make demo, as the README says: builds, prints the table, every row right" {
  run as_readme
  echo "$output"
  [ "$status" -eq 0 ]
  table_is_right
  [[ "$output" == *"who am I (your own uid)"*"root (uid 0)"* ]]
  [ -x "$DEMO_TREE/build/airlock" ]
  left_nothing
}

@test "the demo run by a user through sudo: the sandbox runs as that user" {
  # What sudo does for a user: root, with SUDO_USER naming them.
  run in_copy env SUDO_USER="$TEST_USER" make demo
  echo "$output"
  [ "$status" -eq 0 ]
  table_is_right
  [[ "$output" == *"who am I (your own uid)"*"$TEST_USER (uid $(id -u "$TEST_USER"))"* ]]
  left_nothing
}

@test "make demo fails, saying why, when the sandbox cannot be set up" {
  # A helper that dies before it reports; newer than its objects, so make
  # keeps it.
  cp "$DEMO_TREE/build/airlock-helper" "$T/demo-helper.saved"
  printf '#!/bin/sh\nexit 1\n' > "$DEMO_TREE/build/airlock-helper"
  run as_readme
  cp -p "$T/demo-helper.saved" "$DEMO_TREE/build/airlock-helper"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"exit status 125: the sandbox could not be set up"* ]]
  [[ "$output" != *"every row is as it should be"* ]]
}

@test "make demo fails when a row is not as it should be" {
  # A CANNOT row that the sandbox does allow.
  cp "$DEMO_TREE/tests/demo-sandbox.sh" "$T/demo-sandbox.saved"
  sed -i 's/^\[ "\$wrong" = 0 \]/cannot "run true" true\n&/' "$DEMO_TREE/tests/demo-sandbox.sh"
  grep -q 'cannot "run true"' "$DEMO_TREE/tests/demo-sandbox.sh"
  run as_readme
  cp "$T/demo-sandbox.saved" "$DEMO_TREE/tests/demo-sandbox.sh"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"run true"*"it succeeded"*"<-- WRONG"* ]]
  [[ "$output" == *"exit status 3: the rows marked WRONG are not as they should be"* ]]
}

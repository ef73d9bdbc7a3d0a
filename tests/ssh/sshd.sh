#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real sshd on 127.0.0.1 for the ssh backend's tests and `make bench`,
# everything of it made per run in DIR (as root):
#
#   sshd.sh start DIR CLIENT_USER [SSH_USER]
#       fresh host key and client key, our own sshd_config (a free port,
#       UsePAM no, keys only, authorized_keys in DIR), sshd started by pid;
#       the remote users created: SSH_USER (bash, a home; default
#       airlock-ssh) and SSH_USER-nb, whose PATH has sh and coreutils but
#       no bash.  CLIENT_USER (who runs the ssh client) gets the key and a
#       known_hosts that already holds the host key.  Writes DIR/env
#       (NAME=value lines, sourceable) for the tests.
#   sshd.sh stop DIR            the listener and its connections, by pid
#   sshd.sh start-again DIR     the same sshd again: same port, same keys
#   sshd.sh kill-connections DIR [SIGNAL]
#                               the per-connection processes of our sshd
#                               (its children and theirs), not the listener
#   sshd.sh remove DIR          stop, remove the remote users (and what
#                               they still run), remove DIR
#
# DIR must not exist yet (start) and must sit where CLIENT_USER can pass
# (a 0755 path).  Every process this script ends is ours: found from the
# pid of the sshd it started, or owned by a user it created.
set -u
export LC_ALL=C
SSHD=/usr/sbin/sshd
# The mark in the remote users' GECOS field: remove deletes only those.
MARK="airlock ssh test user"

die () { echo "sshd.sh: $*" >&2; exit 1; }

free_port () {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A user for the run, created with the mark; one left by an earlier run
# that crashed (same name, same mark) is taken over.
make_user () { # name shell
  local gecos
  if id "$1" > /dev/null 2>&1; then
    gecos=$(getent passwd "$1" | cut -d: -f5)
    [ "$gecos" = "$MARK" ] || die "user $1 exists and is not one of ours (GECOS '$gecos'): not touched"
    usermod -s "$2" "$1" || return 1
  else
    useradd --create-home --shell "$2" --comment "$MARK" "$1" || return 1
  fi
  # A locked account ('!') is refused by sshd without PAM; '*': no
  # password, keys still work.
  usermod -p '*' "$1"
}

remove_user () { # name
  id "$1" > /dev/null 2>&1 || return 0
  [ "$(getent passwd "$1" | cut -d: -f5)" = "$MARK" ] || { echo "sshd.sh: $1 is not ours: kept" >&2; return 0; }
  local i p
  # What the tests left running as that user (a remote job, a tail): all
  # of it ours, since the user exists only for the run.
  for i in 1 2 3; do
    for p in $(pgrep -u "$1"); do kill -KILL "$p" 2>/dev/null; done
    pgrep -u "$1" > /dev/null || break
    sleep 0.2
  done
  userdel -r "$1" > /dev/null 2>&1 || userdel "$1" || echo "sshd.sh: could not remove user $1" >&2
}

write_config () {
  cat > "$DIR/sshd_config" <<EOF
# Written by tests/ssh/sshd.sh for one test run.
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host/ssh_host_ed25519_key
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys/%u
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# DIR is under /tmp, which StrictModes refuses.
StrictModes no
PermitRootLogin no
AllowUsers $SSH_USER $NOBASH_USER
# 20 sessions of one master at once, and their first connects.
MaxSessions 100
MaxStartups 100:30:200
LogLevel VERBOSE
# scp uses the sftp protocol.
Subsystem sftp internal-sftp
Match User $NOBASH_USER
  SetEnv PATH=$DIR/nobash-bin
EOF
}

# Start sshd and wait until it listens; 0 when it does.
launch () {
  : > "$DIR/sshd.log"
  "$SSHD" -t -f "$DIR/sshd_config" 2>> "$DIR/sshd.log" || return 1
  # -D: no daemonizing, so $! is sshd; its own session, so that a signal
  # to the caller's process group never reaches it.
  setsid "$SSHD" -D -f "$DIR/sshd_config" -E "$DIR/sshd.log" < /dev/null > /dev/null 2>&1 &
  echo $! > "$DIR/listener.pid"
  local i
  for i in $(seq 100); do
    grep -q "Server listening on 127.0.0.1 port $PORT" "$DIR/sshd.log" 2>/dev/null && return 0
    alive "$(cat "$DIR/listener.pid")" || return 1
    sleep 0.05
  done
  return 1
}

# Running, and not a zombie waiting for its reaper.
alive () {
  local st
  st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]
}

listener_pid () {
  local p
  p=$(cat "$DIR/listener.pid" 2>/dev/null) || return 1
  [[ $p =~ ^[0-9]+$ ]] || return 1
  # Still our sshd (the pid may have been reused since).
  [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$SSHD" ] &&
    tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF -- "-f $DIR/sshd_config" && echo "$p"
}

# The per-connection processes: the listener's children (one privileged
# monitor per connection) and their sshd children; never the user's own
# processes below them.
connection_pids () {
  local l m c
  l=$(listener_pid) || return 0
  for m in $(pgrep -P "$l"); do
    echo "$m"
    for c in $(pgrep -P "$m"); do
      [ "$(readlink "/proc/$c/exe" 2>/dev/null)" = "$SSHD" ] && echo "$c"
    done
  done
}

kill_connections () { # signal
  local p
  for p in $(connection_pids); do kill "-$1" "$p" 2>/dev/null; done
  true
}

stop () {
  local l i conns
  l=$(listener_pid) || return 0
  conns=$(connection_pids)
  kill -TERM "$l" 2>/dev/null
  # The connections outlive the listener's TERM (as with a packaged
  # sshd): a stop here drops them too, like the host going down.
  for i in $conns; do kill -TERM "$i" 2>/dev/null; done
  for i in $(seq 50); do
    alive "$l" || break
    sleep 0.1
  done
  alive "$l" && kill -KILL "$l"
  for i in $conns; do alive "$i" && kill -KILL "$i" 2>/dev/null; done
  wait "$l" 2>/dev/null
  rm -f "$DIR/listener.pid"
  true
}

start () {
  local client_user=$1
  [ -e "$DIR" ] && die "$DIR exists already"
  [ -x "$SSHD" ] || die "no $SSHD (Debian package openssh-server)"
  id "$client_user" > /dev/null 2>&1 || die "no user $client_user"
  mkdir -p "$DIR" && chmod 0755 "$DIR" || die "cannot create $DIR"
  mkdir -p "$DIR/host" "$DIR/authorized_keys" "$DIR/client" "$DIR/nobash-bin"
  chmod 0700 "$DIR/host"
  # The privilege separation directory of every sshd.
  mkdir -p /run/sshd && chmod 0755 /run/sshd
  ssh-keygen -q -t ed25519 -N '' -C "airlock test host" -f "$DIR/host/ssh_host_ed25519_key" ||
    die "ssh-keygen failed"
  ssh-keygen -q -t ed25519 -N '' -C "airlock test client" -f "$DIR/client/id_ed25519" ||
    die "ssh-keygen failed"
  # A second key that no authorized_keys holds (the refused-auth test).
  ssh-keygen -q -t ed25519 -N '' -C "airlock unknown client" -f "$DIR/client/id_unknown" ||
    die "ssh-keygen failed"

  make_user "$SSH_USER" /bin/bash || die "cannot create user $SSH_USER"
  make_user "$NOBASH_USER" /bin/sh || die "cannot create user $NOBASH_USER"
  local u home
  for u in "$SSH_USER" "$NOBASH_USER"; do
    cp "$DIR/client/id_ed25519.pub" "$DIR/authorized_keys/$u"
    chmod 0644 "$DIR/authorized_keys/$u"
  done
  home=$(getent passwd "$SSH_USER" | cut -d: -f6)
  # The session's working directory on the remote side.
  install -d -o "$SSH_USER" -m 0755 "$home/work"

  # The no-bash user's PATH: every program of /usr/bin and /usr/sbin but
  # bash (its login shell is /bin/sh, which reads no profile for a
  # command, so nothing puts /usr/bin back).
  # (ln skips a name already linked: /usr/bin comes first.)
  find /usr/bin /usr/sbin -maxdepth 1 ! -type d ! -name bash ! -name rbash ! -name bashbug \
    -exec ln -s -t "$DIR/nobash-bin" {} + 2> /dev/null

  chown -R "$client_user" "$DIR/client"
  chmod 0700 "$DIR/client"
  chmod 0600 "$DIR/client/id_ed25519" "$DIR/client/id_unknown"

  local i
  for i in 1 2 3 4 5; do
    PORT=$(free_port) || die "cannot find a free port"
    write_config
    launch && break
    stop
    PORT=''
  done
  [ -n "$PORT" ] || { tail -n 5 "$DIR/sshd.log" >&2; die "sshd did not start (see $DIR/sshd.log)"; }
  # The client already knows the host key: every suite can run with
  # StrictHostKeyChecking=yes.
  echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/host/ssh_host_ed25519_key.pub")" > "$DIR/client/known_hosts"
  chown "$client_user" "$DIR/client/known_hosts"
  chmod 0644 "$DIR/client/known_hosts"
  cat > "$DIR/env" <<EOF
SSHD_DIR=$DIR
SSHD_PORT=$PORT
SSHD_LOG=$DIR/sshd.log
SSHD_CONFIG=$DIR/sshd_config
SSH_USER=$SSH_USER
SSH_HOME=$home
SSH_WORKDIR=$home/work
SSH_NOBASH_USER=$NOBASH_USER
SSH_KEY=$DIR/client/id_ed25519
SSH_UNKNOWN_KEY=$DIR/client/id_unknown
SSH_KNOWN_HOSTS=$DIR/client/known_hosts
SSH_CLIENT_USER=$client_user
EOF
  # For remove: which users to delete.
  printf '%s\n' "$SSH_USER" "$NOBASH_USER" > "$DIR/users"
  # Both users answer, and the no-bash one really has no bash.
  local probe=(runuser -u "$client_user" -- timeout -k 5 20 ssh -F /dev/null -o BatchMode=yes
               -o UserKnownHostsFile="$DIR/client/known_hosts" -o StrictHostKeyChecking=yes
               -o IdentitiesOnly=yes -i "$DIR/client/id_ed25519" -p "$PORT")
  local out
  out=$(cd / && "${probe[@]}" "$SSH_USER@127.0.0.1" 'echo "$0 $HOME"' 2>&1) ||
    die "ssh to $SSH_USER@127.0.0.1:$PORT fails: $out"
  out=$(cd / && "${probe[@]}" "$NOBASH_USER@127.0.0.1" \
          'command -v bash || echo "no bash"; for p in sh timeout setsid tail mkdir; do command -v $p; done | wc -l' 2>&1)
  [ "$out" = "no bash
5" ] || die "the no-bash user $NOBASH_USER is not what it should be: $out"
}

[ "$(id -u)" = 0 ] || die "run as root"
[ $# -ge 2 ] || die "usage: sshd.sh start DIR CLIENT_USER [SSH_USER] | stop|start-again|kill-connections|remove DIR"
cmd=$1 DIR=$2
case $DIR in /*) ;; *) die "DIR must be an absolute path" ;; esac
case $cmd in
  start)
    [ $# -ge 3 ] || die "usage: sshd.sh start DIR CLIENT_USER [SSH_USER]"
    SSH_USER=${4:-airlock-ssh}
    NOBASH_USER=$SSH_USER-nb
    start "$3"
    ;;
  stop) stop ;;
  start-again)
    [ -r "$DIR/env" ] || die "no $DIR/env: start first"
    listener_pid > /dev/null && die "sshd of $DIR is running"
    PORT=$(sed -n 's/^SSHD_PORT=//p' "$DIR/env")
    launch || { tail -n 5 "$DIR/sshd.log" >&2; die "sshd did not start again on port $PORT"; }
    ;;
  kill-connections) kill_connections "${3:-KILL}" ;;
  remove)
    stop
    if [ -r "$DIR/users" ]; then
      while read -r u; do remove_user "$u"; done < "$DIR/users"
    fi
    rm -rf "$DIR"
    ;;
  *) die "unknown command $cmd" ;;
esac

/* SPDX-License-Identifier: MIT */
/* airlock-ssh-stream: the ssh backend alone, against a real sshd: sends
 * N MiB of random bytes to a remote `cat` through write_stdin and checks
 * that stdout brings back exactly the same bytes (FNV-1a over both, and
 * the lengths).  For tests/ssh-backend.bats and by hand:
 *   airlock-ssh-stream HOST PORT USER KEY KNOWN_HOSTS RUNTIME_DIR MIB */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ssh_session.h"

static uint64_t
fnv (uint64_t h, const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

static uint64_t got_len, got_hash = 0xcbf29ce484222325ULL;
static int exited = -1;

static int
drain (const struct backend_ops *ops, struct backend_session *bs)
{
  struct backend_event ev;
  char *err = NULL;
  int r;
  while ((r = ops->next_event (bs, &ev, &err)) > 0)
    if (ev.type == BACKEND_OUTPUT && ev.stream == 1)
      {
        got_hash = fnv (got_hash, ev.data, ev.len);
        got_len += ev.len;
      }
    else if (ev.type == BACKEND_OUTPUT && ev.stream == 2)
      fprintf (stderr, "remote stderr: %.*s", (int) ev.len, (const char *) ev.data);
    else if (ev.type == BACKEND_EXITED)
      exited = ev.exit_code;
    else if (ev.type == BACKEND_ERROR)
      {
        fprintf (stderr, "error: %s\n", ev.message);
        return -1;
      }
  return r;
}

int
main (int argc, char **argv)
{
  if (argc != 8)
    {
      fprintf (stderr, "usage: %s HOST PORT USER KEY KNOWN_HOSTS RUNTIME_DIR MIB\n", argv[0]);
      return 2;
    }
  struct ssh_session_options o = {
    .target = { .host = argv[1], .port = atoi (argv[2]), .user = argv[3],
                .key = argv[4], .known_hosts = argv[5], .config = "/dev/null",
                .strict = "accept-new", .connect_timeout = 10, .alive_interval = 15,
                .alive_count = 3, .control_persist = 60 },
    .runtime_dir = argv[6], .session = "stream", .remote_dir = ".airlock-stream",
    .job_ttl_s = 86400,
  };
  char *cwd = NULL, *err = NULL;
  struct backend_session *bs = ssh_session_open (&o, &cwd, &err);
  if (!bs)
    {
      fprintf (stderr, "open: %s\n", err);
      return 1;
    }
  const struct backend_ops *ops = ssh_session_ops ();
  const char *av[] = { "bash", "-c", "eval -- \"$(< /dev/fd/4)\"", NULL };
  const char *env[] = { "PATH=/usr/bin:/bin", NULL };
  const char *script = "exec 3>&- 4<&-; exec cat\n";
  struct backend_spawn sp = { .job = 1, .argv = av, .envp = env, .cwd = "/",
                              .stdin_pipe = true, .script = script,
                              .script_len = strlen (script) };
  if (ops->spawn (bs, &sp, &err) < 0)
    {
      fprintf (stderr, "spawn: %s\n", err);
      return 1;
    }
  size_t total = (size_t) atol (argv[7]) << 20, chunk = 1 << 20;
  unsigned char *buf = malloc (chunk);
  uint64_t sent_hash = 0xcbf29ce484222325ULL;
  for (size_t sent = 0; sent < total; sent += chunk)
    {
      for (size_t i = 0; i < chunk; i += 256)
        if (getrandom (buf + i, 256, 0) != 256)
          return 1;
      sent_hash = fnv (sent_hash, buf, chunk);
      if (ops->write_stdin (bs, 1, buf, chunk, sent + chunk >= total) < 0)
        {
          fprintf (stderr, "write_stdin failed at %zu\n", sent);
          return 1;
        }
      if (drain (ops, bs) < 0)
        return 1;
    }
  while (exited < 0)
    {
      struct pollfd p = { .fd = ops->event_fd (bs), .events = POLLIN };
      poll (&p, 1, 1000);
      if (drain (ops, bs) < 0)
        return 1;
    }
  printf ("sent %zu bytes %016llx; got %llu bytes %016llx; exit %d\n", total,
          (unsigned long long) sent_hash, (unsigned long long) got_len,
          (unsigned long long) got_hash, exited);
  ops->close (bs);
  free (buf);
  free (cwd);
  return got_len == total && got_hash == sent_hash && exited == 0 ? 0 : 1;
}

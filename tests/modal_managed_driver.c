/* SPDX-License-Identifier: MIT */
/* airlock-modal-managed-driver: a managed Modal session alone
 * (backends/modal_managed_session.c), without the daemon, against the
 * gateway double (tests/modal-managed.bats) or by hand.  The gateway and
 * token come from MODAL_GATEWAY_URL and TOOL_GATEWAY_USER_TOKEN.
 *
 *   airlock-modal-managed-driver [OPTIONS] SCRIPT_FILE...
 *     each file is one command's script, run in order in one session the
 *     way the session layer runs it (argv bash -c LOADER, the script on
 *     fd 4, fd 3 the report);
 *     --entitled        only ask for the entitlement: prints 1, 0 or -1
 *     --cwd DIR         the session's first working directory
 *     --env NAME=VALUE  the commands' env (repeatable; default PATH only)
 *     --env-file FILE   the same, one NAME=VALUE a line (kept off argv)
 *     --stdin FILE      the first command's stdin (a pipe; else /dev/null)
 *     --timeout MS      each command's deadline
 *     --kill-after MS   TERM each command after MS, KILL 2 s later
 *     --meta FILE       the last command's fd-3 report goes there
 *     --put FILE        first, FILE sent by the files API (file_put):
 *                       "put REMOTE" or "put error: ..." on stderr
 *     --get REMOTE      first (after --put), the sandbox's REMOTE fetched
 *                       by the files API (file_get) into --to FILE:
 *                       "get done" or "get error: ..." on stderr
 *     --file-timeout MS the files API's timeout (0: an hour)
 *     --health          check health after each command
 *     --shell           the files are commands for the session layer's
 *                       shell (broker/shell_state.c): a bootstrap first,
 *                       then each in a command script, the state carried
 *                       from one to the next by the fd-3 reports
 * stdout: the commands' output; stderr: "open: ...", and per command
 * "exit N" or "error: ..." (and "spawn: ..." when it cannot start).
 * Exit 0 when every command was run, 1 when open failed, 3 otherwise. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modal_managed_session.h"
#include "monotonic_ms.h"
#include "shell_state.h"

static char *
slurp (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    {
      perror (path);
      exit (2);
    }
  char *buf = NULL;
  size_t cap = 0;
  *len = 0;
  for (;;)
    {
      if (*len + 65536 > cap)
        {
          cap = (*len + 65536) * 2;
          buf = realloc (buf, cap);
          if (!buf)
            exit (2);
        }
      size_t n = fread (buf + *len, 1, cap - *len, f);
      *len += n;
      if (n == 0)
        break;
    }
  fclose (f);
  return buf;
}

struct outcome {
  bool done;
  int code;
  FILE *meta;
};

/* Every event so far: -1 when the session is lost. */
static int
drain (const struct backend_ops *ops, struct backend_session *bs, uint32_t job,
       struct outcome *o)
{
  struct backend_event ev;
  char *err = NULL;
  int r;
  while ((r = ops->next_event (bs, &ev, &err)) > 0)
    {
      if (ev.job != job)
        continue;
      if (ev.type == BACKEND_OUTPUT && ev.stream == 3)
        {
          if (o->meta)
            fwrite (ev.data, 1, ev.len, o->meta);
        }
      else if (ev.type == BACKEND_OUTPUT)
        {
          fwrite (ev.data, 1, ev.len, stdout);
          fflush (stdout);
        }
      else if (ev.type == BACKEND_EXITED)
        {
          fprintf (stderr, "exit %d\n", ev.exit_code);
          o->done = true;
          o->code = ev.exit_code;
        }
      else if (ev.type == BACKEND_ERROR)
        {
          fprintf (stderr, "error: %s\n", ev.message);
          o->done = true;
          o->code = -1;
        }
    }
  if (r < 0)
    {
      fprintf (stderr, "lost: %s\n", err);
      free (err);
    }
  return r;
}

/* A file_put or file_get to its BACKEND_FILE_DONE: 0, or -1. */
static int
move_file (const struct backend_ops *ops, struct backend_session *bs, bool put,
           const char *a, const char *b, uint64_t timeout_ms)
{
  const char *what = put ? "put" : "get";
  char remote[4096] = "", *err = NULL;
  uint32_t ticket = put ? 9001 : 9002;
  int r = put ? ops->file_put (bs, ticket, a, timeout_ms, remote, sizeof remote, &err)
              : ops->file_get (bs, ticket, a, b, timeout_ms, &err);
  if (r < 0)
    {
      fprintf (stderr, "%s error: %s\n", what, err);
      free (err);
      return -1;
    }
  for (;;)
    {
      struct pollfd p = { .fd = ops->event_fd (bs), .events = POLLIN };
      poll (&p, 1, 200);
      struct backend_event ev;
      while ((r = ops->next_event (bs, &ev, &err)) > 0)
        if (ev.type == BACKEND_FILE_DONE && ev.job == ticket)
          {
            if (ev.message)
              fprintf (stderr, "%s error: %s\n", what, ev.message);
            else if (put)
              fprintf (stderr, "put %s\n", remote);
            else
              fprintf (stderr, "get done\n");
            return ev.message ? -1 : 0;
          }
      if (r < 0)
        {
          fprintf (stderr, "%s error: lost: %s\n", what, err);
          free (err);
          return -1;
        }
    }
}

static void
progress (void *ctx, const char *line)
{
  (void) ctx;
  fprintf (stderr, "progress: %s\n", line);
}

struct run {
  const char *const *argv, *const *envp;
  const char *cwd, *script;
  size_t script_len;
  const char *stdin_path;      /* NULL: /dev/null */
  long long timeout_ms, kill_after;
  const char *meta_path;       /* the fd-3 report goes there */
  struct shell_state *state;   /* or is taken into that */
};

static void
feed_stdin (const struct backend_ops *ops, struct backend_session *bs, uint32_t job,
            const char *path)
{
  size_t n;
  char *in = slurp (path, &n);
  size_t chunk = 65536, off = 0;
  do
    {
      size_t k = n - off < chunk ? n - off : chunk;
      int w = ops->write_stdin (bs, job, in + off, k, off + k >= n);
      if (w < 0)
        {
          fprintf (stderr, "write_stdin: %s\n", strerror (-w));
          break;
        }
      off += k;
    }
  while (off < n);
  free (in);
}

/* One command to its end: 0; -1 when the session is lost; -2 when it
 * could not start. */
static int
run_job (const struct backend_ops *ops, struct backend_session *bs, uint32_t job,
         const struct run *r)
{
  char *err = NULL;
  struct backend_spawn sp = { .job = job, .argv = r->argv, .envp = r->envp, .cwd = r->cwd,
                              .stdin_pipe = r->stdin_path != NULL, .script = r->script,
                              .script_len = r->script_len, .timeout_ms = (uint64_t) r->timeout_ms,
                              .grace_ms = 2000 };
  if (ops->spawn (bs, &sp, &err) < 0)
    {
      fprintf (stderr, "spawn: %s\n", err);
      free (err);
      return -2;
    }
  if (r->stdin_path)
    feed_stdin (ops, bs, job, r->stdin_path);
  char *mbuf = NULL;
  size_t mlen = 0;
  struct outcome out = { .meta = r->state ? open_memstream (&mbuf, &mlen)
                                 : r->meta_path ? fopen (r->meta_path, "wb") : NULL };
  long long start = monotonic_ms ();
  int sig_sent = 0, rc = 0;
  while (!out.done)
    {
      struct pollfd p = { .fd = ops->event_fd (bs), .events = POLLIN };
      poll (&p, 1, 100);
      if (drain (ops, bs, job, &out) < 0)
        {
          rc = -1;
          break;
        }
      long long t = monotonic_ms () - start;
      if (r->kill_after >= 0 && !out.done && sig_sent < 2
          && t >= r->kill_after + (sig_sent ? 2000 : 0))
        {
          int s = sig_sent ? SIGKILL : SIGTERM;
          int k = ops->signal (bs, job, s);
          fprintf (stderr, "signal %d: %d\n", s, k);
          sig_sent++;
          if (k == BACKEND_KILL_PENDING)
            break;
        }
    }
  if (out.meta)
    fclose (out.meta);
  if (r->state)
    fprintf (stderr, "state %s\n", shell_state_take (r->state, mbuf, mlen) == 1 ? "taken" : "kept");
  free (mbuf);
  return out.done ? rc : -1;
}

int
main (int argc, char **argv)
{
  const char *cwd_opt = NULL, *stdin_path = NULL, *meta_path = NULL;
  const char *put_path = NULL, *get_remote = NULL, *get_to = NULL;
  long long file_timeout = 0;
  const char *envp[64] = { 0 };
  char *env_text = NULL; /* --env-file's, which envp points into */
  size_t nenv = 0;
  long long timeout_ms = 0, kill_after = -1;
  bool health = false, shell = false;
  int i = 1;
  for (; i < argc && !strncmp (argv[i], "--", 2); i++)
    {
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp (a, "--entitled"))
        {
          char *err = NULL;
          int e = modal_gateway_entitled (NULL, NULL, &err);
          printf ("%d\n", e);
          if (err)
            fprintf (stderr, "entitlement: %s\n", err);
          return e == 1 ? 0 : 1;
        }
      else if (!strcmp (a, "--health"))
        health = true;
      else if (!strcmp (a, "--shell"))
        shell = true;
      else if (!v)
        break;
      else if (!strcmp (a, "--cwd"))
        cwd_opt = v, i++;
      else if (!strcmp (a, "--env") && nenv < 63)
        envp[nenv++] = v, i++;
      else if (!strcmp (a, "--env-file"))
        {
          size_t n;
          char *text = slurp (v, &n), *save = NULL;
          text = realloc (text, n + 1);
          if (!text)
            return 2;
          text[n] = '\0';
          free (env_text);
          env_text = text;
          for (char *line = strtok_r (text, "\n", &save); line && nenv < 63;
               line = strtok_r (NULL, "\n", &save))
            envp[nenv++] = line; /* kept to the end */
          i++;
        }
      else if (!strcmp (a, "--stdin"))
        stdin_path = v, i++;
      else if (!strcmp (a, "--timeout"))
        timeout_ms = atoll (v), i++;
      else if (!strcmp (a, "--kill-after"))
        kill_after = atoll (v), i++;
      else if (!strcmp (a, "--meta"))
        meta_path = v, i++;
      else if (!strcmp (a, "--put"))
        put_path = v, i++;
      else if (!strcmp (a, "--get"))
        get_remote = v, i++;
      else if (!strcmp (a, "--to"))
        get_to = v, i++;
      else if (!strcmp (a, "--file-timeout"))
        file_timeout = atoll (v), i++;
      else
        break;
    }
  bool files = put_path || get_remote;
  if ((i >= argc && !files) || (i < argc && !strncmp (argv[i], "--", 2))
      || (get_remote && !get_to))
    {
      fprintf (stderr, "usage: %s [--entitled] [--cwd DIR] [--env N=V]... [--stdin FILE] "
                       "[--timeout MS] [--kill-after MS] [--meta FILE] [--health] SCRIPT...\n",
               argv[0]);
      return 2;
    }
  if (!nenv)
    envp[nenv++] = "PATH=/usr/local/bin:/usr/bin:/bin";
  signal (SIGPIPE, SIG_IGN);
  struct modal_managed_options o = { .image = "debian:12", .cwd = cwd_opt, .session = "driver",
                                     .timeout_s = 600, .idle_timeout_s = 300,
                                     .progress = progress };
  char *cwd = NULL, *err = NULL;
  struct backend_session *bs = modal_managed_open (&o, &cwd, &err);
  if (!bs)
    {
      fprintf (stderr, "open: %s\n", err);
      free (err);
      return 1;
    }
  fprintf (stderr, "cwd %s\n", cwd);
  const struct backend_ops *ops = modal_managed_ops ();
  const char *av[] = { "bash", "-c", SHELL_SCRIPT_LOADER, NULL };
  int rc = 0;
  if (put_path && move_file (ops, bs, true, put_path, NULL, (uint64_t) file_timeout) < 0)
    rc = 3;
  if (get_remote && move_file (ops, bs, false, get_remote, get_to, (uint64_t) file_timeout) < 0)
    rc = 3;
  struct shell_state st = { 0 };
  if (shell)
    {
      char *boot = shell_bootstrap_script (cwd);
      const char *lav[] = { "bash", "-lc", SHELL_SCRIPT_LOADER, NULL };
      struct run r = { .argv = lav, .envp = envp, .cwd = cwd, .script = boot,
                       .script_len = strlen (boot), .kill_after = -1, .state = &st };
      if (run_job (ops, bs, 1000, &r) < 0)
        rc = 3;
      free (boot);
    }
  for (uint32_t job = 1; i < argc; i++, job++)
    {
      size_t slen;
      char *text = slurp (argv[i], &slen);
      text = realloc (text, slen + 1);
      if (!text)
        return 2;
      text[slen] = '\0';
      char *script = text;
      if (shell)
        {
          script = shell_command_script (&st, NULL, text);
          slen = strlen (script);
        }
      struct run r = { .argv = av, .envp = envp, .cwd = cwd, .script = script,
                       .script_len = slen, .stdin_path = job == 1 ? stdin_path : NULL,
                       .timeout_ms = timeout_ms, .kill_after = kill_after,
                       .meta_path = i == argc - 1 ? meta_path : NULL,
                       .state = shell ? &st : NULL };
      int jr = run_job (ops, bs, job, &r);
      if (jr < 0)
        rc = 3;
      if (script != text)
        free (script);
      free (text);
      if (health)
        {
          char *herr = NULL;
          int h = ops->health (bs, &herr);
          fprintf (stderr, "health %d%s%s\n", h, herr ? ": " : "", herr ? herr : "");
          free (herr);
        }
      if (jr == -2)
        break;
    }
  shell_state_free (&st);
  ops->close (bs);
  free (cwd);
  free (env_text);
  return rc;
}

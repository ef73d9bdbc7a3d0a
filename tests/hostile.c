/* SPDX-License-Identifier: MIT */
/* airlock-hostile: a hostile caller of airlock-helper, for the tests.
 *
 *   airlock-hostile HELPER SUBCOMMAND [ARG]...
 *
 * Each subcommand drives the helper at HELPER the way an attacker would
 * (the checklist of sandbox-prior-art.md §5.2), prints what it saw, and
 * ends with one line:
 *
 *   result: safe: ...      exit 0, the helper behaved safely
 *   result: UNSAFE: ...    exit 1
 *
 * Usage errors and failures of this tool itself exit 2.  The tool runs as
 * the test user, outside any sandbox; requests name the current directory
 * as the workspace, which the tests make the test user's own. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

#define EXIT_SETUP 125
#define RESULT_SAFE 0
#define RESULT_UNSAFE 1
#define RESULT_ERROR 2

static const char *helper_path;
static char cwd[PATH_MAX];

/* ---- Small utilities ---- */

static void __attribute__ ((noreturn, format (printf, 1, 2)))
die (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fprintf (stderr, "airlock-hostile: ");
  vfprintf (stderr, fmt, ap);
  fprintf (stderr, "\n");
  va_end (ap);
  exit (RESULT_ERROR);
}

/* The last line of every subcommand, and its exit status. */
static int __attribute__ ((format (printf, 2, 3)))
verdict (bool safe, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  printf ("result: %s: ", safe ? "safe" : "UNSAFE");
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
  fflush (stdout);
  return safe ? RESULT_SAFE : RESULT_UNSAFE;
}

static long long
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms (long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
    ;
}

static void
xpipe (int p[2])
{
  if (pipe2 (p, O_CLOEXEC) < 0)
    die ("pipe: %s", strerror (errno));
}

static void
write_file (const char *path, const char *text)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    die ("%s: %s", path, strerror (errno));
  size_t n = strlen (text);
  if (write (fd, text, n) != (ssize_t) n)
    die ("%s: %s", path, strerror (errno));
  close (fd);
}

/* Which privilege mode the helper file is installed in. */
static const char *
helper_mode (void)
{
  struct stat st;
  if (stat (helper_path, &st) < 0)
    die ("%s: %s", helper_path, strerror (errno));
  if ((st.st_mode & S_ISUID) && st.st_uid == 0)
    return "setuid";
  if (getxattr (helper_path, "security.capability", NULL, 0) > 0)
    return "caps";
  return "unprivileged";
}

/* ---- Starting the helper ---- */

enum { STDIO_INHERIT = -1, STDIO_CLOSE = -2 };

struct spawn {
  int stdio[3];   /* the helper's fd 0, 1, 2: an fd of ours, or STDIO_* */
  char **envp;    /* NULL: an empty environment, as the broker gives */
  bool argc0;     /* execve with argv = { NULL } */
  bool keep_fds;  /* hand over every fd we have open (many-fds) */
  int hold_fd;    /* >= 0: wait for one byte on it before the exec */
};

#define SPAWN_DEFAULTS                                                         \
  { .stdio = { STDIO_INHERIT, STDIO_INHERIT, STDIO_INHERIT }, .hold_fd = -1 }

struct helper {
  pid_t pid;
  int sock; /* our end of the channel */
};

static void __attribute__ ((noreturn))
exec_helper (const struct spawn *o, int chan)
{
  if (o->hold_fd >= 0)
    {
      char b;
      if (read (o->hold_fd, &b, 1) != 1)
        _exit (RESULT_ERROR);
    }
  /* Out of the way of fds 0-3 first: we are about to rearrange them. */
  int c = fcntl (chan, F_DUPFD_CLOEXEC, 10);
  if (c < 0)
    _exit (RESULT_ERROR);
  for (int fd = 0; fd < 3; fd++)
    if (o->stdio[fd] == STDIO_CLOSE)
      close (fd);
    else if (o->stdio[fd] >= 0 && dup2 (o->stdio[fd], fd) < 0)
      _exit (RESULT_ERROR);
  if (dup2 (c, 3) < 0)
    _exit (RESULT_ERROR);
  /* Close-on-exec rather than close: the ptrace gate must stay open
   * until the exec itself. */
  if (!o->keep_fds)
    close_range (4, ~0U, CLOSE_RANGE_CLOEXEC);
  char *argv_normal[] = { (char *) "airlock-helper", NULL };
  char *argv_empty[] = { NULL };
  char *env_empty[] = { NULL };
  execve (helper_path, o->argc0 ? argv_empty : argv_normal,
          o->envp ? o->envp : env_empty);
  dprintf (2, "airlock-hostile: cannot run %s: %s\n", helper_path,
           strerror (errno));
  _exit (RESULT_ERROR);
}

static struct helper
spawn_helper (const struct spawn *o)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    die ("socketpair: %s", strerror (errno));
  /* The kernel refuses a seqpacket message larger than the send buffer:
   * make room for the oversized frame. */
  int size = 2 * AL_MAX_MESSAGE;
  setsockopt (sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  pid_t pid = fork ();
  if (pid < 0)
    die ("fork: %s", strerror (errno));
  if (pid == 0)
    exec_helper (o, sv[1]);
  close (sv[1]);
  return (struct helper){ .pid = pid, .sock = sv[0] };
}

/* Send one message, optionally with a descriptor attached. */
static bool
send_frame (const struct helper *h, const void *buf, size_t len, int pass_fd)
{
  struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE (sizeof (int))];
  } control;
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  if (pass_fd >= 0)
    {
      memset (&control, 0, sizeof control);
      mh.msg_control = control.buf;
      mh.msg_controllen = sizeof control.buf;
      struct cmsghdr *c = CMSG_FIRSTHDR (&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN (sizeof (int));
      memcpy (CMSG_DATA (c), &pass_fd, sizeof (int));
    }
  if (sendmsg (h->sock, &mh, MSG_NOSIGNAL) == (ssize_t) len)
    return true;
  printf ("send: %s (the helper is gone already)\n", strerror (errno));
  return false;
}

/* ---- Requests ---- */

static struct al_writer writer;

/* A run request for argv; binds and the rest are added by the caller
 * before finish_run(). */
static void
begin_run (const char *const *argv, const char *workdir)
{
  al_begin (&writer, AL_MSG_RUN);
  for (; *argv; argv++)
    al_put_str (&writer, AL_F_ARGV, *argv);
  al_put_str (&writer, AL_F_ENV, "PATH=/usr/local/bin:/usr/bin:/bin");
  al_put_str (&writer, AL_F_WORKDIR, workdir ? workdir : cwd);
}

static size_t
finish_run (void)
{
  /* Whatever happens, no sandbox of ours outlives a test by much. */
  al_put_u32 (&writer, AL_F_TIMEOUT_SEC, 60);
  size_t n = al_finish (&writer);
  if (n == 0)
    die ("the request does not fit the protocol");
  return n;
}

static size_t
simple_request (const char *const *argv)
{
  begin_run (argv, NULL);
  return finish_run ();
}

/* ---- Watching the helper ---- */

/* Output of the helper (and so of the command) read through a pipe. */
struct capture {
  int fd; /* our read end, -1 when unused */
  char buf[65536];
  size_t len;
};

static void
capture_open (struct capture *c, int *their_end)
{
  int p[2];
  xpipe (p);
  fcntl (p[0], F_SETFL, O_NONBLOCK);
  c->fd = p[0];
  c->len = 0;
  *their_end = p[1];
}

/* Read what is there; false at end of file. */
static bool
capture_drain (struct capture *c)
{
  for (;;)
    {
      char tmp[4096];
      ssize_t n = read (c->fd, tmp, sizeof tmp);
      if (n > 0)
        {
          size_t room = sizeof c->buf - 1 - c->len;
          size_t take = (size_t) n < room ? (size_t) n : room;
          memcpy (c->buf + c->len, tmp, take);
          c->len += take;
          c->buf[c->len] = '\0';
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      return n < 0; /* EAGAIN: more may come; 0: end of file */
    }
}

/* What the helper reported.  STARTED means the sandbox's pid 1 exists; it
 * may still fail its setup (SETUP_FAILED) before the command runs. */
struct outcome {
  int reports;
  bool started, exited, failed, hung;
  uint32_t exit_code, signal, timed_out, step, err;
  char message[1024];
  int status; /* the helper's wait status */
};

static void
print_report (const struct al_report *r)
{
  switch (r->event)
    {
    case AL_EV_STARTED:
      printf ("report: STARTED pid=%u limits=%u\n", r->pid, r->limits);
      break;
    case AL_EV_EXITED:
      if (r->present >> (AL_F_SIGNAL - AL_F_EVENT) & 1)
        printf ("report: EXITED signal=%u timed_out=%u\n", r->signal,
                r->timed_out);
      else
        printf ("report: EXITED code=%u timed_out=%u\n", r->exit_code,
                r->timed_out);
      break;
    case AL_EV_SETUP_FAILED:
      printf ("report: SETUP_FAILED step=%s errno=%u%s%s message=\"%s\"\n",
              al_step_name (r->step), r->err, r->err ? " " : "",
              r->err ? strerror ((int) r->err) : "", r->message);
      break;
    default:
      printf ("report: event %u\n", r->event);
    }
}

static void
record_report (struct outcome *o, const struct al_report *r)
{
  o->reports++;
  switch (r->event)
    {
    case AL_EV_STARTED:
      o->started = true;
      break;
    case AL_EV_EXITED:
      o->exited = true;
      o->exit_code = r->exit_code;
      o->signal = r->signal;
      o->timed_out = r->timed_out;
      break;
    case AL_EV_SETUP_FAILED:
      o->failed = true;
      o->step = r->step;
      o->err = r->err;
      snprintf (o->message, sizeof o->message, "%s: %s%s%s",
                al_step_name (r->step), r->message, r->err ? ": " : "",
                r->err ? strerror ((int) r->err) : "");
      break;
    default:
      break;
    }
}

/* Wait for the helper, killing it at the deadline. */
static void
reap (struct outcome *o, pid_t pid, long long deadline)
{
  for (;;)
    {
      pid_t r = waitpid (pid, &o->status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR))
        return;
      if (now_ms () >= deadline && !o->hung)
        {
          o->hung = true;
          printf ("helper: still running after the deadline; killed\n");
          kill (pid, SIGKILL);
          deadline += 5000;
        }
      sleep_ms (5);
    }
}

static void
print_exit (const struct outcome *o)
{
  if (WIFEXITED (o->status))
    printf ("helper: exit %d\n", WEXITSTATUS (o->status));
  else if (WIFSIGNALED (o->status))
    printf ("helper: killed by signal %d\n", WTERMSIG (o->status));
}

/* Read and print the helper's reports until it is done or the deadline
 * passes, draining the captures meanwhile; then reap it. */
static void
watch (struct helper *h, int timeout_ms, struct outcome *o,
       struct capture *out, struct capture *err)
{
  static uint8_t buf[AL_MAX_MESSAGE];
  static struct al_message msg;
  memset (o, 0, sizeof *o);
  long long deadline = now_ms () + timeout_ms;
  while (!o->exited && !o->failed)
    {
      struct pollfd pf[3] = { { .fd = h->sock, .events = POLLIN },
                              { .fd = out ? out->fd : -1, .events = POLLIN },
                              { .fd = err ? err->fd : -1, .events = POLLIN } };
      long long left = deadline - now_ms ();
      if (left <= 0)
        {
          o->hung = true;
          printf ("helper: no result after %d ms; killed\n", timeout_ms);
          kill (h->pid, SIGKILL);
          break;
        }
      if (poll (pf, 3, (int) left) < 0)
        continue;
      if (out && pf[1].revents && !capture_drain (out))
        out = NULL;
      if (err && pf[2].revents && !capture_drain (err))
        err = NULL;
      if (!pf[0].revents)
        continue;
      ssize_t n = recv (h->sock, buf, sizeof buf, MSG_TRUNC | MSG_DONTWAIT);
      if (n < 0 && errno == EAGAIN)
        continue;
      if (n <= 0)
        break;
      const char *why = NULL;
      if ((size_t) n > sizeof buf || al_decode (buf, (size_t) n, &msg, &why) < 0
          || msg.type != AL_MSG_REPORT)
        {
          printf ("report: undecodable (%s)\n", why ? why : "size or type");
          continue;
        }
      print_report (&msg.u.report);
      record_report (o, &msg.u.report);
    }
  close (h->sock);
  reap (o, h->pid, deadline + 2000);
  print_exit (o);
}

static void
print_capture (const char *what, struct capture *c)
{
  capture_drain (c);
  close (c->fd);
  char *save = NULL;
  for (char *l = strtok_r (c->buf, "\n", &save); l;
       l = strtok_r (NULL, "\n", &save))
    printf ("%s: %s\n", what, l);
}

static bool
exited_setup_failed (const struct outcome *o)
{
  return !o->hung && WIFEXITED (o->status)
         && WEXITSTATUS (o->status) == EXIT_SETUP;
}

/* ---- frame: malformed requests (checklist 9, 11) ---- */

static uint8_t frame[AL_MAX_MESSAGE + 4096];

static void
put32 (uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static void
put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) v;
  p[1] = (uint8_t) (v >> 8);
}

/* A valid request for /bin/true, copied into frame[]. */
static size_t
valid_frame (void)
{
  static const char *const argv[] = { "/bin/true", NULL };
  size_t n = simple_request (argv);
  memcpy (frame, writer.buf, n);
  return n;
}

/* Build one of the built-in malformed frames; *pass_fd for frame-with-fds. */
static ssize_t
builtin_frame (const char *kind, int *pass_fd)
{
  size_t n;
  if (!strcmp (kind, "frame-truncated"))
    {
      /* Cut the last field short, and make the header agree, so that only
       * the field walk can notice. */
      n = valid_frame () - 3;
      put32 (frame + 8, (uint32_t) n);
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-oversized"))
    {
      /* One byte over the limit, self-consistent: one huge argument. */
      n = AL_MAX_MESSAGE + 1;
      memset (frame, 'A', n);
      put32 (frame, AL_MAGIC);
      put16 (frame + 4, AL_VERSION);
      put16 (frame + 6, AL_MSG_RUN);
      put32 (frame + 8, (uint32_t) n);
      put32 (frame + 12, 0);
      put16 (frame + 16, AL_F_ARGV);
      put16 (frame + 18, 0);
      put32 (frame + 20, (uint32_t) (n - AL_HEADER_SIZE - AL_FIELD_HEADER_SIZE));
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-wrong-version"))
    {
      n = valid_frame ();
      put16 (frame + 4, AL_VERSION + 1);
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-bad-magic"))
    {
      n = valid_frame ();
      memcpy (frame, "EVIL", 4);
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-unknown-field"))
    {
      /* Field type 31: between the run request's fields and the
       * report's, described by no rule. */
      n = valid_frame ();
      uint8_t *f = frame + n;
      put16 (f, 31);
      put16 (f + 2, 0);
      put32 (f + 4, 4);
      put32 (f + 8, 1);
      n += AL_FIELD_HEADER_SIZE + 4;
      put32 (frame + 8, (uint32_t) n);
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-report-type"))
    {
      /* A well-formed message of the helper's own kind, sent to it. */
      al_begin (&writer, AL_MSG_REPORT);
      al_put_u32 (&writer, AL_F_EVENT, AL_EV_STARTED);
      al_put_u32 (&writer, AL_F_PID, 1);
      al_put_u32 (&writer, AL_F_LIMITS, AL_LIMITS_RLIMIT);
      al_put_u32 (&writer, AL_F_PRIVILEGE, AL_PRIV_UNPRIVILEGED);
      n = al_finish (&writer);
      memcpy (frame, writer.buf, n);
      return (ssize_t) n;
    }
  if (!strcmp (kind, "frame-empty"))
    return -1; /* shut down our side without sending */
  if (!strcmp (kind, "frame-with-fds"))
    {
      /* A valid request carrying a descriptor: the protocol has none. */
      *pass_fd = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      return (ssize_t) valid_frame ();
    }
  die ("unknown frame %s", kind);
}

static ssize_t
file_frame (const char *path)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    die ("%s: %s", path, strerror (errno));
  size_t n = 0;
  ssize_t r;
  while (n < sizeof frame && (r = read (fd, frame + n, sizeof frame - n)) > 0)
    n += (size_t) r;
  close (fd);
  return (ssize_t) n;
}

/* Malformed requests: each must be refused with a SETUP_FAILED report and
 * exit 125, never start a sandbox, never crash the helper. */
static int
cmd_frame (int argc, char **argv)
{
  int pass_fd = -1;
  ssize_t n;
  if (!strcmp (argv[0], "frame"))
    {
      if (argc != 2)
        die ("usage: frame FILE");
      n = file_frame (argv[1]);
    }
  else
    n = builtin_frame (argv[0], &pass_fd);
  printf ("sending: %s (%zd bytes%s)\n", argv[0], n < 0 ? 0 : n,
          pass_fd >= 0 ? ", with an fd" : "");

  struct spawn o = SPAWN_DEFAULTS;
  struct capture err;
  capture_open (&err, &o.stdio[2]);
  struct helper h = spawn_helper (&o);
  close (o.stdio[2]);
  if (n < 0)
    shutdown (h.sock, SHUT_WR);
  else
    send_frame (&h, frame, (size_t) n, pass_fd);
  struct outcome out;
  watch (&h, 10000, &out, NULL, &err);
  print_capture ("helper stderr", &err);

  if (out.started)
    return verdict (false, "the helper started a sandbox for a bad request");
  if (out.hung)
    return verdict (false, "the helper hung on a bad request");
  if (WIFSIGNALED (out.status))
    return verdict (false, "the helper died of signal %d",
                    WTERMSIG (out.status));
  if (!exited_setup_failed (&out))
    return verdict (false, "the helper exited %d, not %d",
                    WEXITSTATUS (out.status), EXIT_SETUP);
  if (!out.failed)
    return verdict (false, "exit 125 but no SETUP_FAILED report");
  return verdict (true, "rejected: %s", out.message);
}

/* ---- argc0: an empty argument list (PwnKit class, checklist 4) ---- */

static int
cmd_argc0 (int argc, char **argv)
{
  (void) argc, (void) argv;
  /* A usable channel and a valid request: only the argument list is
   * wrong, so nothing else can be what stops the helper. */
  struct spawn o = SPAWN_DEFAULTS;
  o.argc0 = true;
  struct capture err;
  capture_open (&err, &o.stdio[2]);
  struct helper h = spawn_helper (&o);
  close (o.stdio[2]);
  size_t n = valid_frame ();
  send_frame (&h, frame, n, -1);
  struct outcome out;
  watch (&h, 10000, &out, NULL, &err);
  bool said = strstr (err.buf, "airlock-helper") != NULL;
  print_capture ("helper stderr", &err);

  if (out.started)
    return verdict (false, "started with argc == 0, the helper ran the request");
  if (!exited_setup_failed (&out))
    return verdict (false, "the helper did not exit %d", EXIT_SETUP);
  if (!said)
    return verdict (false, "exit 125 but no message on stderr");
  return verdict (true, "refused an empty argument list");
}

/* ---- closed-stdio: fds 0-2 closed at exec (checklist 6) ---- */

/* The command reports what its fds 0-2 are, by device number, into a file
 * of the workspace: they must be /dev/null or /dev/full (what the helper or
 * the C library puts on a closed standard fd), never one of the helper's
 * own files. */
static int
cmd_closed_stdio (int argc, char **argv)
{
  (void) argc, (void) argv;
  char report[PATH_MAX + 64];
  snprintf (report, sizeof report, "%s/.hostile-stdio-%d", cwd, (int) getpid ());
  char script[PATH_MAX + 512];
  /* The redirections live in a subshell: dash applies a command's own
   * redirections in the shell itself, which would change what $$ holds. */
  snprintf (script, sizeof script,
            "( for fd in 0 1 2; do "
            "stat -L -c \"$fd %%F %%t:%%T\" /proc/$$/fd/$fd 2>/dev/null "
            "|| echo \"$fd closed\"; done ) > '%s'",
            report);
  const char *const cmd[] = { "/bin/sh", "-c", script, NULL };
  struct spawn o = SPAWN_DEFAULTS;
  for (int fd = 0; fd < 3; fd++)
    o.stdio[fd] = STDIO_CLOSE;
  struct helper h = spawn_helper (&o);
  size_t n = simple_request (cmd);
  send_frame (&h, writer.buf, n, -1);
  struct outcome out;
  watch (&h, 20000, &out, NULL, NULL);

  if (out.failed)
    return verdict (exited_setup_failed (&out),
                    "refused cleanly: %s", out.message);
  if (!out.exited || out.exit_code != 0)
    return verdict (false, "no clean run and no clean refusal");
  FILE *f = fopen (report, "re");
  if (!f)
    return verdict (false, "the command left no report in %s", cwd);
  bool ok = true;
  char line[256];
  while (fgets (line, sizeof line, f))
    {
      line[strcspn (line, "\n")] = '\0';
      /* 1:3 is /dev/null, 1:7 /dev/full. */
      bool fine = strstr (line, "closed") || strstr (line, "character special file 1:3")
                  || strstr (line, "character special file 1:7");
      printf ("command fd %s%s\n", line, fine ? "" : "  <-- not a null device");
      ok &= fine;
    }
  fclose (f);
  unlink (report);
  return verdict (ok, ok ? "ran with fds 0-2 on null devices"
                         : "the command's stdio holds something of the helper's");
}

/* ---- many-fds: 1000 inherited descriptors (runc CVE-2024-21626) ---- */

/* Without a command, bash prints "fds: none" or the open fds above 2,
 * like `airlock-probe fds`.  No redirection anywhere: bash would park a
 * saved copy of the fd on 10.  The glob's own directory fd is closed by the
 * time each entry is tested again. */
static const char *const default_fd_check[] = {
  "/bin/bash", "-c",
  "open=; for f in /proc/$$/fd/*; do n=${f##*/}; "
  "if [ \"$n\" -gt 2 ] && [ -L \"$f\" ]; then open=\"$open $n\"; fi; done; "
  "echo \"fds:${open:- none}\"",
  NULL
};

static int
cmd_many_fds (int argc, char **argv)
{
  struct rlimit rl;
  getrlimit (RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2048)
    {
      rl.rlim_cur = rl.rlim_max < 2048 ? rl.rlim_max : 2048;
      setrlimit (RLIMIT_NOFILE, &rl);
    }
  int opened = 0;
  int null = open ("/dev/null", O_RDWR);
  for (int i = 0; i < 999 && null >= 0 && dup (null) >= 0; i++)
    opened++;
  /* Something worth stealing: a file only we hold, high up and low down. */
  char secret[] = "/tmp/airlock-hostile-secret.XXXXXX";
  int s = mkstemp (secret);
  if (s < 0)
    die ("mkstemp: %s", strerror (errno));
  unlink (secret);
  if (write (s, "secret\n", 7) != 7)
    die ("write: %s", strerror (errno));
  int high = fcntl (s, F_DUPFD, 1500);
  printf ("open: %d extra fds, the secret file on fds %d and %d\n",
          opened + 1, s, high);

  const char *const *cmd = argc > 1 ? (const char *const *) argv + 1
                                    : default_fd_check;
  struct spawn o = SPAWN_DEFAULTS;
  o.keep_fds = true;
  struct capture out_cap;
  capture_open (&out_cap, &o.stdio[1]);
  struct helper h = spawn_helper (&o);
  close (o.stdio[1]);
  size_t n = simple_request (cmd);
  send_frame (&h, writer.buf, n, -1);
  struct outcome out;
  watch (&h, 30000, &out, &out_cap, NULL);
  capture_drain (&out_cap);
  close (out_cap.fd);
  fputs (out_cap.buf, stdout);

  const char *fds = strstr (out_cap.buf, "fds: ");
  bool leaked = fds && strncmp (fds, "fds: none", 9) != 0;
  if (out.failed)
    return verdict (false, "the run failed: %s", out.message);
  if (!out.exited)
    return verdict (false, "the command did not run to its end");
  if (leaked)
    return verdict (false, "descriptors reached the sandbox");
  return verdict (out.exit_code == 0, "the command exited %u",
                  out.exit_code);
}

/* ---- ptrace: CVE-2016-8659, CVE-2026-41163, CVE-2026-46333 ---- */

/* A second process of the same user attacks the helper and every process
 * descending from it, for the whole setup and run: PTRACE_ATTACH,
 * PTRACE_SEIZE, /proc/PID/mem, process_vm_readv and pidfd_getfd.  Any
 * success against a process holding privilege is a violation: uid 0
 * anywhere, or a capability (in setuid and caps modes, in any user
 * namespace; unprivileged, in our own one). */

enum { M_ATTACH, M_SEIZE, M_MEM, M_VMREADV, M_GETFD, N_METHODS };
static const char *const method_names[N_METHODS] = {
  "PTRACE_ATTACH", "PTRACE_SEIZE", "open /proc/PID/mem", "process_vm_readv",
  "pidfd_getfd"
};

struct ptrace_stats {
  long attempts[N_METHODS];
  long successes[N_METHODS];
  long violations;
  long printed;
};

struct proc_state {
  char name[32];
  unsigned uid[4];
  unsigned long long cap_prm, cap_eff, cap_amb;
  char userns[64];
};

struct attacker {
  pid_t helper;
  bool strict;            /* setuid or caps mode */
  char own_userns[64];
  struct ptrace_stats *st; /* shared with the main process */
};

static bool
read_stat (pid_t pid, pid_t *ppid, unsigned long long *start)
{
  char path[64], buf[1024];
  snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = read (fd, buf, sizeof buf - 1);
  close (fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  /* The name may hold spaces and parentheses: start after the last ')'. */
  char *p = strrchr (buf, ')');
  int pp;
  if (!p || sscanf (p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
                           "%*u %*d %*d %*d %*d %*d %*d %llu", &pp, start) != 2)
    return false;
  *ppid = pp;
  return true;
}

static void
read_state (pid_t pid, struct proc_state *s)
{
  memset (s, 0, sizeof *s);
  for (int i = 0; i < 4; i++)
    s->uid[i] = ~0U;
  char path[64], line[256];
  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  FILE *f = fopen (path, "re");
  while (f && fgets (line, sizeof line, f))
    {
      sscanf (line, "Name:\t%31s", s->name);
      sscanf (line, "Uid:\t%u\t%u\t%u\t%u", &s->uid[0], &s->uid[1], &s->uid[2],
              &s->uid[3]);
      sscanf (line, "CapPrm:\t%llx", &s->cap_prm);
      sscanf (line, "CapEff:\t%llx", &s->cap_eff);
      sscanf (line, "CapAmb:\t%llx", &s->cap_amb);
    }
  if (f)
    fclose (f);
  snprintf (path, sizeof path, "/proc/%d/ns/user", (int) pid);
  ssize_t n = readlink (path, s->userns, sizeof s->userns - 1);
  if (n < 0)
    strcpy (s->userns, "unknown");
  else
    s->userns[n] = '\0';
}

static bool
privileged (const struct attacker *a, const struct proc_state *s)
{
  for (int i = 0; i < 4; i++)
    if (s->uid[i] == 0)
      return true;
  if (!(s->cap_prm | s->cap_eff | s->cap_amb))
    return false;
  /* Unprivileged mode: capabilities in a user namespace the caller made
   * are the caller's own already.  A process that exited between the
   * status read and the namespace read ("unknown") can only have been one
   * of the unprivileged helper's: nothing there ever held more. */
  return a->strict || strcmp (s->userns, a->own_userns) == 0;
}

static void
note_success (const struct attacker *a, int method, pid_t pid)
{
  struct proc_state s;
  read_state (pid, &s);
  bool bad = privileged (a, &s);
  a->st->successes[method]++;
  if (bad)
    a->st->violations++;
  /* Every violation, and a sample of the allowed successes. */
  if (!bad && a->st->printed >= 12)
    return;
  a->st->printed++;
  dprintf (1, "success: %s pid %d (%s%s) Uid: %u %u %u %u CapPrm: %llx "
           "CapEff: %llx userns: %s -> %s\n",
           method_names[method], (int) pid, s.name,
           pid == a->helper ? ", the helper" : ", below the helper", s.uid[0],
           s.uid[1], s.uid[2], s.uid[3], s.cap_prm, s.cap_eff,
           strcmp (s.userns, a->own_userns) ? s.userns : "ours",
           bad ? "VIOLATION" : "allowed (no privilege)");
}

/* Stop a tracee we just attached to, look at it, let it go. */
static void
release_tracee (pid_t pid, bool seized)
{
  int ws;
  if (seized)
    ptrace (PTRACE_INTERRUPT, pid, 0, 0);
  if (waitpid (pid, &ws, __WALL) == pid && WIFSTOPPED (ws))
    ptrace (PTRACE_DETACH, pid, 0, 0);
}

/* An access error means the kernel refused; anything else (even EFAULT on
 * an address we made up, or EBADF on an fd number) means it let us in. */
static bool
granted (long rc)
{
  return rc >= 0 || (errno != EPERM && errno != EACCES && errno != ESRCH);
}

static void
attack (const struct attacker *a, pid_t pid)
{
  struct ptrace_stats *st = a->st;
  st->attempts[M_ATTACH]++;
  if (ptrace (PTRACE_ATTACH, pid, 0, 0) == 0)
    {
      note_success (a, M_ATTACH, pid);
      release_tracee (pid, false);
    }
  st->attempts[M_SEIZE]++;
  if (ptrace (PTRACE_SEIZE, pid, 0, 0) == 0)
    {
      note_success (a, M_SEIZE, pid);
      release_tracee (pid, true);
    }
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/mem", (int) pid);
  st->attempts[M_MEM]++;
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      note_success (a, M_MEM, pid);
      close (fd);
    }
  char byte;
  struct iovec local = { &byte, 1 }, remote = { (void *) 0x10000, 1 };
  st->attempts[M_VMREADV]++;
  if (granted (process_vm_readv (pid, &local, 1, &remote, 1, 0)))
    note_success (a, M_VMREADV, pid);
  int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
  if (pidfd >= 0)
    {
      /* fd 3: the helper's channel, or the command's first own file. */
      st->attempts[M_GETFD]++;
      long got = syscall (SYS_pidfd_getfd, pidfd, 3, 0);
      if (granted (got))
        note_success (a, M_GETFD, pid);
      if (got >= 0)
        close ((int) got);
      close (pidfd);
    }
}

#define MAX_TARGETS 256
struct target {
  pid_t pid;
  unsigned long long start; /* tells a reused pid from ours */
};

/* The helper and every process whose parent chain leads to it; known
 * targets stay on the list while they live (reparented, they would no
 * longer be found by their chain). */
static int
find_targets (pid_t helper, struct target *t, int n)
{
  static pid_t pids[8192], ppids[8192];
  static unsigned long long starts[8192];
  int np = 0;
  DIR *d = opendir ("/proc");
  for (struct dirent *e; d && (e = readdir (d)) && np < 8192;)
    {
      char *end;
      long pid = strtol (e->d_name, &end, 10);
      if (*end || pid <= 0)
        continue;
      if (read_stat ((pid_t) pid, &ppids[np], &starts[np]))
        pids[np++] = (pid_t) pid;
    }
  if (d)
    closedir (d);
  /* Drop the dead and the reused. */
  int kept = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < np; j++)
      if (pids[j] == t[i].pid && starts[j] == t[i].start)
        {
          t[kept++] = t[i];
          break;
        }
  n = kept;
  for (int j = 0; j < np && n < MAX_TARGETS; j++)
    {
      bool known = false;
      for (int i = 0; i < n; i++)
        known |= t[i].pid == pids[j];
      if (known)
        continue;
      /* Walk up through the table. */
      pid_t p = pids[j];
      for (int depth = 0; depth < 32 && p > 1 && p != helper; depth++)
        {
          pid_t up = 0;
          for (int k = 0; k < np; k++)
            if (pids[k] == p)
              up = ppids[k];
          p = up;
        }
      if (p == helper)
        t[n++] = (struct target){ pids[j], starts[j] };
    }
  return n;
}

static void __attribute__ ((noreturn))
attacker_main (struct attacker *a, int gate_fd, int stop_fd)
{
  /* Wait until the helper's exec closed the gate: attaching before it
   * would only make the kernel ignore the setuid bit. */
  char b;
  while (read (gate_fd, &b, 1) < 0 && errno == EINTR)
    ;
  struct target t[MAX_TARGETS];
  int n = 0;
  long long grace_end = 0;
  for (;;)
    {
      struct pollfd pf = { .fd = stop_fd, .events = POLLIN };
      if (!grace_end && poll (&pf, 1, 0) > 0)
        grace_end = now_ms () + 300; /* a little longer, for stragglers */
      if (grace_end && now_ms () > grace_end)
        break;
      n = find_targets (a->helper, t, n);
      if (n == 0)
        {
          /* Between a scan and the helper's first child: attack the
           * helper, whose pid we know, without waiting for the scan. */
          t[0] = (struct target){ a->helper, 0 };
          read_stat (a->helper, &(pid_t){ 0 }, &t[0].start);
          n = 1;
        }
      for (int round = 0; round < 4; round++)
        for (int i = 0; i < n; i++)
          attack (a, t[i].pid);
    }
  _exit (0);
}

static int
cmd_ptrace (int argc, char **argv)
{
  int rounds = argc > 1 ? atoi (argv[1]) : 4;
  static const char *const cmd[] = { "/bin/sleep", "1", NULL };
  const char *mode = helper_mode ();
  struct attacker a = { .strict = strcmp (mode, "unprivileged") != 0 };
  ssize_t ln = readlink ("/proc/self/ns/user", a.own_userns,
                         sizeof a.own_userns - 1);
  if (ln < 0)
    die ("readlink /proc/self/ns/user: %s", strerror (errno));
  a.own_userns[ln] = '\0';
  a.st = mmap (NULL, sizeof *a.st, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (a.st == MAP_FAILED)
    die ("mmap: %s", strerror (errno));
  memset (a.st, 0, sizeof *a.st);
  printf ("mode: %s (from the helper file); %d runs of /bin/sleep 1\n", mode,
          rounds);
  fflush (stdout);

  int runs_ok = 0;
  for (int r = 0; r < rounds; r++)
    {
      int gate[2], hold[2], stop[2];
      xpipe (gate);
      xpipe (hold);
      xpipe (stop);
      struct spawn o = SPAWN_DEFAULTS;
      o.hold_fd = hold[0];
      struct helper h = spawn_helper (&o);
      a.helper = h.pid;
      pid_t att = fork ();
      if (att < 0)
        die ("fork: %s", strerror (errno));
      if (att == 0)
        {
          close (gate[1]);
          close (stop[1]);
          close (hold[1]);
          close (h.sock);
          attacker_main (&a, gate[0], stop[0]);
        }
      close (gate[0]);
      close (gate[1]);
      close (stop[0]);
      close (hold[0]);
      /* Release the exec; the attacker starts the moment it happens. */
      if (write (hold[1], "x", 1) != 1)
        die ("write: %s", strerror (errno));
      close (hold[1]);
      size_t n = simple_request (cmd);
      send_frame (&h, writer.buf, n, -1);
      struct outcome out;
      watch (&h, 30000, &out, NULL, NULL);
      runs_ok += out.exited && out.exit_code == 0;
      close (stop[1]);
      waitpid (att, NULL, 0);
    }

  long attempts = 0, successes = 0;
  for (int m = 0; m < N_METHODS; m++)
    {
      printf ("%s: %ld attempts, %ld successes\n", method_names[m],
              a.st->attempts[m], a.st->successes[m]);
      attempts += a.st->attempts[m];
      successes += a.st->successes[m];
    }
  printf ("runs completed: %d of %d\n", runs_ok, rounds);
  printf ("attempts: %ld, successes: %ld, violations: %ld\n", attempts,
          successes, a.st->violations);
  if (a.st->violations)
    return verdict (false, "%ld successful attacks on a privileged process",
                    a.st->violations);
  return verdict (true, "no access to any process while it held privilege "
                        "(%s mode, %ld harmless successes)", mode, successes);
}

/* ---- env-hostile: a poisoned environment (checklist 5, CVE-2016-10122) ---- */

static int
cmd_env_hostile (int argc, char **argv)
{
  (void) argc, (void) argv;
  /* libnl-route's constructor reads NLSYSCONFDIR/classid: a FIFO there
   * blocks any reader forever, so a hang is the symptom. */
  char nldir[] = "/tmp/airlock-hostile-nl.XXXXXX";
  if (!mkdtemp (nldir))
    die ("mkdtemp: %s", strerror (errno));
  chmod (nldir, 0755);
  char fifo[PATH_MAX];
  const char *const fifos[] = { "classid", "pktloc", "ematch_map", NULL };
  for (const char *const *f = fifos; *f; f++)
    {
      snprintf (fifo, sizeof fifo, "%s/%s", nldir, *f);
      if (mkfifo (fifo, 0644) < 0)
        die ("mkfifo %s: %s", fifo, strerror (errno));
    }
  char nlsysconf[PATH_MAX + 16];
  snprintf (nlsysconf, sizeof nlsysconf, "NLSYSCONFDIR=%s", nldir);
  char *env[] = {
    "LD_PRELOAD=/nonexistent/evil.so", "LD_LIBRARY_PATH=/tmp/evil",
    "LD_AUDIT=/nonexistent/audit.so", "LD_BIND_NOW=", "NLCB=debug",
    "NLDBG=7", nlsysconf, "GCONV_PATH=/tmp/evil", "LANG=xx_EVIL.UTF-8",
    "LC_ALL=xx_EVIL.UTF-8", "LOCPATH=/tmp/evil", "NLSPATH=/tmp/evil/%N",
    "IFS=/", "PATH=/tmp/evil", "HOME=/root", "TMPDIR=/tmp/evil",
    "TZ=:/etc/shadow", "MALLOC_CHECK_=3", "MALLOC_PERTURB_=85",
    "GLIBC_TUNABLES=glibc.malloc.check=3:glibc.malloc.mxfast=glibc.malloc.mxfast=1",
    "RESOLV_HOST_CONF=/etc/shadow", "HOSTALIASES=/etc/shadow",
    "BASH_ENV=/tmp/evil/rc", "ENV=/tmp/evil/rc", "SHELLOPTS=xtrace",
    "PS4=$(id>/tmp/evil-owned)", NULL
  };
  static const char *const cmd[] = { "/bin/echo", "hello", NULL };
  struct spawn o = SPAWN_DEFAULTS;
  o.envp = env;
  struct capture out_cap, err_cap;
  capture_open (&out_cap, &o.stdio[1]);
  capture_open (&err_cap, &o.stdio[2]);
  long long t0 = now_ms ();
  struct helper h = spawn_helper (&o);
  close (o.stdio[1]);
  close (o.stdio[2]);
  size_t n = simple_request (cmd);
  send_frame (&h, writer.buf, n, -1);
  struct outcome out;
  watch (&h, 10000, &out, &out_cap, &err_cap);
  long long took = now_ms () - t0;
  capture_drain (&out_cap);
  close (out_cap.fd);
  print_capture ("helper stderr", &err_cap);
  for (const char *const *f = fifos; *f; f++)
    {
      snprintf (fifo, sizeof fifo, "%s/%s", nldir, *f);
      unlink (fifo);
    }
  rmdir (nldir);
  printf ("stdout: \"");
  for (const char *p = out_cap.buf; *p; p++)
    printf (*p == '\n' ? "\\n" : "%c", *p);
  printf ("\" (%zu bytes) after %lld ms\n", out_cap.len, took);

  if (out.hung)
    return verdict (false, "the helper hung in a poisoned environment");
  if (out.failed)
    return verdict (false, "the run failed: %s", out.message);
  if (!out.exited || out.exit_code != 0)
    return verdict (false, "the command did not exit 0");
  if (strcmp (out_cap.buf, "hello\n") != 0)
    return verdict (false, "the command's stdout is not exactly \"hello\\n\"");
  return verdict (true, "the environment changed nothing (%lld ms)", took);
}

/* ---- symlink-race and symlink-bind: firejail CVE-2017-5180, runc
 *      CVE-2021-30465 (checklist 12) ---- */

#define MARKER "REAL-MARKER"

/* Run `ls -A /mnt/x` with src bound there read-only, capturing stdout. */
static void
run_listing (const char *src, const char *workdir, const char *rootfs,
             struct outcome *out, struct capture *cap)
{
  static const char *const cmd[] = { "/bin/ls", "-A", "/mnt/x", NULL };
  begin_run (cmd, workdir);
  if (rootfs)
    al_put_str (&writer, AL_F_ROOTFS, rootfs);
  if (src)
    al_put_pair (&writer, AL_F_BIND_RO, src, "/mnt/x");
  size_t n = finish_run ();
  struct spawn o = SPAWN_DEFAULTS;
  capture_open (cap, &o.stdio[1]);
  struct helper h = spawn_helper (&o);
  close (o.stdio[1]);
  send_frame (&h, writer.buf, n, -1);
  watch (&h, 20000, out, cap, NULL);
  capture_drain (cap);
  close (cap->fd);
}

static void
canonical_dir (const char *arg, char *dir)
{
  if (!realpath (arg, dir))
    die ("%s: %s", arg, strerror (errno));
}

static void
make_real_dir (const char *path)
{
  char marker[PATH_MAX + 32];
  if (mkdir (path, 0755) < 0 && errno != EEXIST)
    die ("mkdir %s: %s", path, strerror (errno));
  snprintf (marker, sizeof marker, "%s/" MARKER, path);
  write_file (marker, "");
}

/* Swap DIR/src, a directory, with DIR/lnk, a symlink to TARGET, while runs
 * of the helper bind DIR/src: each must list the real directory or refuse
 * the symlink, never show TARGET. */
static int
cmd_symlink_race (int argc, char **argv)
{
  if (argc < 2)
    die ("usage: symlink-race DIR [RUNS [TARGET]]");
  char dir[PATH_MAX], src[PATH_MAX + 8], lnk[PATH_MAX + 8];
  canonical_dir (argv[1], dir);
  int runs = argc > 2 ? atoi (argv[2]) : 40;
  const char *target = argc > 3 ? argv[3] : "/etc";
  snprintf (src, sizeof src, "%s/src", dir);
  snprintf (lnk, sizeof lnk, "%s/lnk", dir);
  /* A run interrupted mid-swap may have left src the symlink. */
  struct stat st;
  if (lstat (src, &st) == 0 && S_ISLNK (st.st_mode))
    unlink (src);
  unlink (lnk);
  make_real_dir (src);
  if (symlink (target, lnk) < 0)
    die ("symlink %s: %s", lnk, strerror (errno));

  pid_t swapper = fork ();
  if (swapper < 0)
    die ("fork: %s", strerror (errno));
  if (swapper == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
      for (;;)
        renameat2 (AT_FDCWD, src, AT_FDCWD, lnk, RENAME_EXCHANGE);
    }
  int real = 0, refused = 0, leaked = 0, other = 0;
  for (int i = 0; i < runs; i++)
    {
      struct outcome out;
      static struct capture cap;
      run_listing (src, NULL, NULL, &out, &cap);
      if (out.failed && strstr (out.message, "symlink"))
        refused++;
      else if (out.exited && out.exit_code == 0 && !strcmp (cap.buf, MARKER "\n"))
        real++;
      else if (out.exited || cap.len)
        {
          leaked++;
          printf ("LEAK in run %d: the listing was:\n%s", i, cap.buf);
        }
      else
        other++;
    }
  kill (swapper, SIGKILL);
  waitpid (swapper, NULL, 0);
  /* Leave DIR as we found it, give or take: the swap may be either way. */
  if (lstat (src, &st) == 0 && S_ISLNK (st.st_mode))
    renameat2 (AT_FDCWD, src, AT_FDCWD, lnk, RENAME_EXCHANGE);
  unlink (lnk);
  char marker[PATH_MAX + 32];
  snprintf (marker, sizeof marker, "%s/" MARKER, src);
  unlink (marker);
  rmdir (src);

  printf ("runs: %d, real directory: %d, refused (symlink): %d, other "
          "failures: %d, leaked: %d\n", runs, real, refused, other, leaked);
  if (leaked)
    return verdict (false, "%d runs saw the symlink's target %s", leaked,
                    target);
  if (other)
    return verdict (false, "%d runs failed without naming the symlink", other);
  return verdict (true, "the bind source was never redirected");
}

/* Static symlinks in every caller path of a request: the broker resolves
 * them, a hostile caller need not.  Each case must be refused. */
static int
cmd_symlink_bind (int argc, char **argv)
{
  if (argc != 2)
    die ("usage: symlink-bind DIR");
  char dir[PATH_MAX];
  canonical_dir (argv[1], dir);
  char real[PATH_MAX + 16], sub[PATH_MAX + 16], link_etc[PATH_MAX + 16],
      link_dir[PATH_MAX + 16], via_link[PATH_MAX + 32], dst_link[PATH_MAX + 32];
  snprintf (real, sizeof real, "%s/real", dir);
  snprintf (sub, sizeof sub, "%s/real/sub", dir);
  snprintf (link_etc, sizeof link_etc, "%s/link-etc", dir);
  snprintf (link_dir, sizeof link_dir, "%s/link-dir", dir);
  snprintf (via_link, sizeof via_link, "%s/link-dir/sub", dir);
  snprintf (dst_link, sizeof dst_link, "%s/real/dl", dir);
  make_real_dir (real);
  make_real_dir (sub);
  unlink (link_etc);
  unlink (link_dir);
  unlink (dst_link);
  if (symlink ("/etc", link_etc) < 0 || symlink (real, link_dir) < 0
      || symlink ("/etc", dst_link) < 0)
    die ("symlink: %s", strerror (errno));

  struct {
    const char *name, *src, *workdir, *rootfs, *dst;
  } cases[] = {
    { "bind source is a symlink to /etc", link_etc, NULL, NULL, NULL },
    { "bind source below a symlinked directory", via_link, NULL, NULL, NULL },
    { "bind source through a /proc magic link", "/proc/self/root/etc", NULL,
      NULL, NULL },
    { "workspace is a symlink", NULL, link_dir, NULL, NULL },
    { "rootfs is a symlink", NULL, NULL, link_dir, NULL },
    { "bind destination through a symlink in the workspace", sub, real, NULL,
      dst_link },
  };
  int accepted = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      struct outcome out;
      static struct capture cap;
      if (cases[i].dst)
        {
          /* As run_listing, with the destination below the symlink. */
          static const char *const cmd[] = { "/bin/true", NULL };
          char dst[PATH_MAX + 48];
          snprintf (dst, sizeof dst, "%s/x", cases[i].dst);
          begin_run (cmd, cases[i].workdir);
          al_put_pair (&writer, AL_F_BIND_RO, cases[i].src, dst);
          size_t n = finish_run ();
          struct spawn o = SPAWN_DEFAULTS;
          struct helper h = spawn_helper (&o);
          send_frame (&h, writer.buf, n, -1);
          watch (&h, 20000, &out, NULL, NULL);
        }
      else
        run_listing (cases[i].src, cases[i].workdir, cases[i].rootfs, &out, &cap);
      /* STARTED may come first: pid 1 exists before it builds the root. */
      bool refused = out.failed && !out.exited && exited_setup_failed (&out);
      printf ("case \"%s\": %s%s\n", cases[i].name,
              refused ? "refused: " : "ACCEPTED", refused ? out.message : "");
      accepted += !refused;
    }
  unlink (link_etc);
  unlink (link_dir);
  unlink (dst_link);
  if (accepted)
    return verdict (false, "%d of %zu symlinked paths were accepted", accepted,
                    sizeof cases / sizeof cases[0]);
  return verdict (true, "every symlinked path was refused");
}

/* ---- join: setns into a running sandbox (bwrap CVE-2016-8659's other
 *      half: the caller must hold no capability over the namespaces) ---- */

/* Read reports until STARTED; the pid of the sandbox's pid 1, or -1. */
static pid_t
wait_started (struct helper *h, int timeout_ms)
{
  static uint8_t buf[AL_MAX_MESSAGE];
  static struct al_message msg;
  struct pollfd pf = { .fd = h->sock, .events = POLLIN };
  while (poll (&pf, 1, timeout_ms) > 0)
    {
      ssize_t n = recv (h->sock, buf, sizeof buf, 0);
      const char *why = NULL;
      if (n <= 0 || al_decode (buf, (size_t) n, &msg, &why) < 0
          || msg.type != AL_MSG_REPORT)
        return -1;
      print_report (&msg.u.report);
      return msg.u.report.event == AL_EV_STARTED ? (pid_t) msg.u.report.pid
                                                 : -1;
    }
  return -1;
}

/* In a child: enter pid's user namespace, then its mount namespace, and
 * make a network namespace there.  Exit 1 when the kernel let us in. */
static void __attribute__ ((noreturn))
try_join (pid_t pid)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/ns/mnt", (int) pid);
  int m = open (path, O_RDONLY | O_CLOEXEC);
  snprintf (path, sizeof path, "/proc/%d/ns/user", (int) pid);
  int u = open (path, O_RDONLY | O_CLOEXEC);
  if (u < 0 || setns (u, CLONE_NEWUSER) < 0)
    {
      printf ("pid %d: cannot enter its user namespace: %s\n", (int) pid,
              strerror (errno));
      /* A pidfd names every namespace of a process without its /proc
       * files, which a non-dumpable process closes. */
      int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
      if (pidfd < 0 || setns (pidfd, CLONE_NEWUSER | CLONE_NEWNS) < 0)
        {
          printf ("pid %d: nor through a pidfd: %s\n", (int) pid,
                  strerror (errno));
          _exit (0);
        }
      m = -1; /* joined both at once */
      printf ("pid %d: JOINED its user and mount namespaces through a pidfd\n",
              (int) pid);
    }
  struct proc_state st;
  read_state (getpid (), &st);
  printf ("pid %d: JOINED its user namespace, CapEff %llx\n", (int) pid,
          st.cap_eff);
  if (m >= 0 && setns (m, CLONE_NEWNS) == 0)
    printf ("pid %d: JOINED its mount namespace: the sandbox's mounts are "
            "ours to change\n", (int) pid);
  if (unshare (CLONE_NEWNET) == 0)
    printf ("pid %d: created a network namespace inside, no seccomp filter "
            "applies\n", (int) pid);
  _exit (1);
}

static int
cmd_join (int argc, char **argv)
{
  (void) argc, (void) argv;
  const char *mode = helper_mode ();
  static const char *const cmd[] = { "/bin/sleep", "2", NULL };
  struct helper h = spawn_helper (&(struct spawn) SPAWN_DEFAULTS);
  size_t n = simple_request (cmd);
  send_frame (&h, writer.buf, n, -1);
  pid_t init = wait_started (&h, 10000);
  if (init < 0)
    return verdict (false, "the sandbox did not start");
  /* Give pid 1 time to finish its setup and start the command: pid 1 is
   * not dumpable, so its /proc/PID/ns is closed to us, but the command's,
   * an ordinary process of the caller, is not. */
  sleep_ms (500);
  struct target t[MAX_TARGETS];
  int nt = find_targets (init, t, 0);
  int joined = 0;
  for (int i = 0; i < nt; i++)
    {
      pid_t pid = fork ();
      if (pid == 0)
        try_join (t[i].pid);
      int ws;
      waitpid (pid, &ws, 0);
      joined += WIFEXITED (ws) && WEXITSTATUS (ws) == 1;
    }
  struct outcome out;
  watch (&h, 10000, &out, NULL, NULL);
  printf ("mode: %s\n", mode);
  if (!joined)
    return verdict (true, "the sandbox's namespaces are out of the caller's reach");
  if (!strcmp (mode, "unprivileged"))
    return verdict (true, "joined, as expected unprivileged: the namespaces "
                          "are the caller's own, as with unshare(1)");
  return verdict (false, "the caller entered the sandbox's user namespace with "
                         "every capability in it");
}

/* ---- A host without user namespaces ---- */

/* Not an attack: the situation of a host whose kernel, sysctl or LSM
 * refuses unprivileged user namespaces, made with a seccomp filter that
 * fails clone/unshare with CLONE_NEWUSER (clone3 with ENOSYS, so libc
 * falls back to clone), then exec the given command under it.  The tests
 * expect the unprivileged helper to refuse clearly, naming the fix. */
static int
cmd_no_userns (int argc, char **argv)
{
  if (argc < 2)
    die ("no-userns needs a command");
  struct sock_filter f[] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 3),
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, args[0])),
    BPF_JUMP (BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
      || prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
    die ("seccomp: %s", strerror (errno));
  execvp (argv[1], argv + 1);
  die ("%s: %s", argv[1], strerror (errno));
}

/* ---- main ---- */

static const struct subcommand {
  const char *name, *args;
  int (*run) (int argc, char **argv);
} subcommands[] = {
  { "frame", "FILE", cmd_frame },
  { "frame-truncated", "", cmd_frame },
  { "frame-oversized", "", cmd_frame },
  { "frame-wrong-version", "", cmd_frame },
  { "frame-bad-magic", "", cmd_frame },
  { "frame-unknown-field", "", cmd_frame },
  { "frame-report-type", "", cmd_frame },
  { "frame-empty", "", cmd_frame },
  { "frame-with-fds", "", cmd_frame },
  { "argc0", "", cmd_argc0 },
  { "closed-stdio", "", cmd_closed_stdio },
  { "many-fds", "[COMMAND [ARG]...]", cmd_many_fds },
  { "ptrace", "[RUNS]", cmd_ptrace },
  { "env-hostile", "", cmd_env_hostile },
  { "symlink-race", "DIR [RUNS [TARGET]]", cmd_symlink_race },
  { "symlink-bind", "DIR", cmd_symlink_bind },
  { "join", "", cmd_join },
  { "no-userns", "COMMAND [ARG]...", cmd_no_userns },
};

static void __attribute__ ((noreturn))
usage (void)
{
  fprintf (stderr, "usage: airlock-hostile HELPER SUBCOMMAND [ARG]...\n"
                   "subcommands:\n");
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    fprintf (stderr, "  %s %s\n", subcommands[i].name, subcommands[i].args);
  exit (RESULT_ERROR);
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    usage ();
  helper_path = argv[1];
  if (!getcwd (cwd, sizeof cwd))
    die ("getcwd: %s", strerror (errno));
  /* Reports and relayed output interleave with our own lines: no buffering
   * surprises. */
  setvbuf (stdout, NULL, _IOLBF, 0);
  signal (SIGPIPE, SIG_IGN);
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    if (!strcmp (argv[2], subcommands[i].name))
      return subcommands[i].run (argc - 2, argv + 2);
  usage ();
}

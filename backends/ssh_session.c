/* SPDX-License-Identifier: MIT */
/* The ssh backend's sessions (see ssh_session.h).
 *
 * Nothing is installed on the remote host.  Every command is one ssh
 * channel over the persistent master (ssh_transport.c) running the fixed
 * bootstrap, which reads the POSIX-sh wrapper (ssh_wrapper.sh) from its
 * stdin, then the command's script and environment: so neither is ever in
 * a remote argv.  The wrapper makes a 0700 job directory, starts the
 * command detached in a session of its own (its pid is its sid) with its
 * stdout, stderr and fd 3 going to files there and, when asked, a remote
 * deadline (TERM, grace, KILL by session id); a runner writes its exit
 * status atomically.  The wrapper then streams the three files by byte
 * offset in frames, and removes the directory only after we acknowledged
 * the end.
 *
 * A channel that ends without the end frame (master killed, link down,
 * sshd restarted) is resumed from the offsets we hold, with a bounded
 * exponential backoff: nothing is lost or doubled, and a command that
 * ended meanwhile still delivers everything and its status.  A kill while
 * the host cannot be reached returns BACKEND_KILL_PENDING and is sent
 * with the resume.  What cannot be resumed (a stdin stream cut in the
 * middle) kills the command and says so.
 *
 * event_fd is one epoll descriptor over every channel's pipes and pidfd
 * and a timerfd for the backoff; nothing polls in a loop. */
#define _GNU_SOURCE
#include "ssh_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "event_queue.h"
#include "terminal_eof.h"
#include "sh_words.h"
#include "ssh_wrapper.h"
#include "xprintf.h"
#include "monotonic_ms.h"

#define RETRY_FIRST_MS 500
#define RETRY_MAX_MS 30000
/* Without a connection this long, a running command is lost. */
#define LOST_AFTER_MS (10 * 60 * 1000)
/* The wrapper says something at least every 2 s: silence this long means
 * the link is down even before ssh notices (ServerAlive). */
#define SILENT_MS 7000
#define READ_CHUNK 65536
#define STDIN_FRAME (1 << 20)
#define TX_HIGH (8 << 20)
#define CLOSE_TIMEOUT_MS 15000
/* A terminal job: how long its terminal may go on after the command's end
 * was heard (its last output in flight), and how long the end may take to
 * be heard after the terminal closed (the follower polls and frames it). */
#define TTY_DRAIN_MS 5000
#define TTY_END_WAIT_MS 10000
#define TTY_IN_MAX (4 << 20)

struct ssh_job {
  uint32_t id;
  char name[64];
  struct ssh_proc ch;          /* ch.pid > 0 or fds open: a live channel */
  bool out_eof;
  char *tx;                    /* to the channel's stdin */
  size_t tx_len, tx_off;
  char hdr[512];               /* a frame header being read */
  size_t hdr_len;
  int body_stream;             /* the frame body being read: stream, 0 none */
  uint64_t body_left, body_skip;
  uint64_t off[4];             /* bytes delivered of streams 1-3 */
  char *err_text;              /* ssh's stderr of the current channel */
  size_t err_len;
  uint32_t pid;
  bool ended, finished;        /* R seen; nothing more to do remotely */
  bool reported;               /* EXITED or ERROR given to the session */
  bool forgotten;              /* the session layer ended it: no events */
  char *fail;                  /* L or E frame: why it is lost */
  bool stdin_pipe, stdin_eof, stdin_cut;
  uint64_t stdin_bytes;        /* queued so far */
  bool heard;                  /* the wrapper said something, ever */
  int pending_sig;             /* to send with the next resume */
  long long lost_since, retry_at, last_heard;
  int attempts;
  char *why_down;              /* ssh's words for the last loss */
  uint32_t grace_ms;
  bool rides;                  /* followed by the session's agent */
  struct ssh_job *body_to;     /* the agent's channel: whose body this is */
  bool body_drop;              /* ... nobody's any more: skipped */
  /* A terminal job (see "terminal jobs" below): its `ssh -tt` client on a
   * local terminal whose master is ptm. */
  bool pty, tty_started;
  unsigned rows, cols;
  char term[64];
  struct ssh_proc tty;
  int ptm;
  char *tty_in;                /* input the terminal has not taken yet */
  size_t tty_in_len;
  bool mid_line;
  char *tty_err;               /* the -tt client's stderr */
  size_t tty_err_len;
  bool have_end;               /* R came while the terminal still talks */
  int end_status;
  int tty_status;              /* the -tt client's exit status */
  long long tty_deadline;      /* 0, or see tty_pump */
  struct ssh_job *next;
};

struct backend_session {
  struct ssh_target t;
  char *name;                  /* user@host:port */
  char *session;
  char *remote_dir;
  char token[17];
  bool disposable;
  int ep, timer;
  struct ssh_job *jobs;
  struct ssh_job *agent;       /* the agent's channel (ssh_agent.sh) */
  struct event_queue q;
  char *target_key;            /* for sharing the master (master_refs) */
};

/* Sessions of this daemon sharing one master: `ssh -O exit` when the
 * last one closes. */
struct master_ref {
  char *key;
  int n;
  struct master_ref *next;
};
static struct master_ref *master_refs;

static int
master_ref (const char *key, int delta)
{
  struct master_ref **p = &master_refs;
  while (*p && strcmp ((*p)->key, key))
    p = &(*p)->next;
  if (!*p && delta > 0 && (*p = calloc (1, sizeof **p)) && !((*p)->key = strdup (key)))
    {
      free (*p);
      *p = NULL;
    }
  if (!*p)
    return 0;
  int n = ((*p)->n += delta);
  if (n <= 0)
    {
      struct master_ref *r = *p;
      *p = r->next;
      free (r->key);
      free (r);
    }
  return n;
}

/* Terminal jobs (defined below, "terminal jobs"). */
static bool tty_live (const struct ssh_job *j);
static void tty_open (struct backend_session *s, struct ssh_job *j);
static void tty_close (struct backend_session *s, struct ssh_job *j, bool kill_it);
static void tty_flush (struct backend_session *s, struct ssh_job *j);
static bool tty_pump (struct backend_session *s, struct ssh_job *j);

/* ---- events ---- */

static void
report_end (struct backend_session *s, struct ssh_job *j, int status, const char *lost)
{
  if (j->reported)
    return;
  j->reported = true;
  if (j->forgotten)
    return;
  struct backend_event ev = { .job = j->id };
  if (lost)
    {
      ev.type = BACKEND_ERROR;
      char *m = xprintf ("the command on %s was lost: %s", s->name, lost);
      event_queue_push (&s->q, &ev, NULL, 0, m ? m : lost);
      free (m);
      fprintf (stderr, "airlock: session %s, job %u: lost: %s\n", s->session, j->id, lost);
    }
  else
    {
      ev.type = BACKEND_EXITED;
      ev.exit_code = status;
      event_queue_push (&s->q, &ev, NULL, 0, NULL);
    }
}

/* ---- channels ---- */

static void
ep_add (struct backend_session *s, int fd, uint32_t events)
{
  if (fd < 0)
    return;
  struct epoll_event e = { .events = events, .data.fd = fd };
  epoll_ctl (s->ep, EPOLL_CTL_ADD, fd, &e);
}

static void
ep_del (struct backend_session *s, int *fd)
{
  if (*fd < 0)
    return;
  epoll_ctl (s->ep, EPOLL_CTL_DEL, *fd, NULL);
  close (*fd);
  *fd = -1;
}

static bool
channel_live (const struct ssh_job *j)
{
  return j->ch.pid > 0 || j->ch.out >= 0;
}

static void
tx_want (struct backend_session *s, struct ssh_job *j)
{
  if (j->ch.in < 0)
    return;
  struct epoll_event e = { .events = j->tx_len > j->tx_off ? EPOLLOUT : 0,
                           .data.fd = j->ch.in };
  epoll_ctl (s->ep, EPOLL_CTL_MOD, j->ch.in, &e);
}

static int
tx_add (struct ssh_job *j, const void *data, size_t n)
{
  if (j->tx_off && j->tx_off >= j->tx_len / 2)
    {
      /* Compact: a long stdin stream must not grow the buffer forever. */
      memmove (j->tx, j->tx + j->tx_off, j->tx_len - j->tx_off);
      j->tx_len -= j->tx_off;
      j->tx_off = 0;
    }
  char *b = realloc (j->tx, j->tx_len + n + 1);
  if (!b)
    return -ENOMEM;
  memcpy (b + j->tx_len, data, n);
  j->tx = b;
  j->tx_len += n;
  return 0;
}

static int
tx_printf (struct ssh_job *j, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
static int
tx_printf (struct ssh_job *j, const char *fmt, ...)
{
  char buf[128];
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (buf, sizeof buf, fmt, ap);
  va_end (ap);
  return tx_add (j, buf, (size_t) n);
}

static void
tx_pump (struct backend_session *s, struct ssh_job *j)
{
  while (j->ch.in >= 0 && j->tx_off < j->tx_len)
    {
      ssize_t w = write (j->ch.in, j->tx + j->tx_off, j->tx_len - j->tx_off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && errno == EAGAIN)
        break;
      if (w <= 0)
        {
          ep_del (s, &j->ch.in); /* the channel is going: its end says more */
          break;
        }
      j->tx_off += (size_t) w;
    }
  if (j->tx_off == j->tx_len)
    j->tx_off = j->tx_len = 0;
  tx_want (s, j);
}

static void
channel_close (struct backend_session *s, struct ssh_job *j, bool kill_it)
{
  ep_del (s, &j->ch.in);
  ep_del (s, &j->ch.out);
  ep_del (s, &j->ch.err);
  if (j->ch.pidfd >= 0)
    epoll_ctl (s->ep, EPOLL_CTL_DEL, j->ch.pidfd, NULL);
  ssh_proc_end (&j->ch, kill_it);
  free (j->tx);
  j->tx = NULL;
  j->tx_len = j->tx_off = 0;
  j->hdr_len = 0;
  j->body_stream = 0;
  j->body_left = j->body_skip = 0;
  j->out_eof = false;
}

/* The preamble of a wrapper run: variables, then the wrapper. */
static char *
wrapper_input (struct backend_session *s, const char *vars)
{
  char *base = sh_quote (s->remote_dir);
  char *code = base ? xprintf ("B=%s %s\n%s", base, vars, SSH_WRAPPER) : NULL;
  free (base);
  if (!code)
    return NULL;
  char *all = xprintf ("%zu\n%s", strlen (code), code);
  free (code);
  return all;
}

/* A channel running the bootstrap, fed `in` (taken). */
static int
channel_start (struct backend_session *s, struct ssh_job *j, char *in, char **err)
{
  if (!in)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  if (ssh_spawn (&s->t, NULL, false, &j->ch, err) < 0)
    {
      free (in);
      return -1;
    }
  free (j->tx);
  j->tx = NULL;
  j->tx_len = j->tx_off = 0;
  tx_add (j, in, strlen (in));
  free (in);
  free (j->err_text);
  j->err_text = NULL;
  j->err_len = 0;
  j->out_eof = false;
  j->last_heard = monotonic_ms ();
  ep_add (s, j->ch.in, EPOLLOUT);
  ep_add (s, j->ch.out, EPOLLIN);
  ep_add (s, j->ch.err, EPOLLIN);
  ep_add (s, j->ch.pidfd, EPOLLIN);
  return 0;
}

static int
channel_open (struct backend_session *s, struct ssh_job *j, const char *vars,
              char **err)
{
  return channel_start (s, j, wrapper_input (s, vars), err);
}

/* The session's agent, started when a command needs it: the bootstrap's
 * sh hands over to bash, which reads the wrapper (for its functions) and
 * the agent from the same stdin. */
static int
agent_start (struct backend_session *s, char **err)
{
  struct ssh_job *a = s->agent;
  if (channel_live (a))
    return 0;
  static const char stage1[] = "exec bash -c 'read -r n && eval \"$(head -c \"$n\")\"'";
  char *base = sh_quote (s->remote_dir);
  char *code = base ? xprintf ("B=%s M=agent TOK=%s\n%s%s", base, s->token, SSH_WRAPPER,
                               SSH_AGENT) : NULL;
  char *in = code ? xprintf ("%zu\n%s%zu\n%s", strlen (stage1), stage1, strlen (code), code)
                  : NULL;
  free (base);
  free (code);
  a->heard = false;
  a->hdr_len = 0;
  a->body_stream = 0;
  a->body_to = NULL;
  free (a->why_down);
  a->why_down = NULL;
  return channel_start (s, a, in, err);
}

static void
arm_timer (struct backend_session *s)
{
  long long best = -1;
  for (struct ssh_job *j = s->jobs; j; j = j->next)
    {
      if (!channel_live (j) && !j->finished && j->retry_at >= 0
          && (best < 0 || j->retry_at < best))
        best = j->retry_at;
      if (j->tty_deadline > 0 && (best < 0 || j->tty_deadline < best))
        best = j->tty_deadline;
    }
  struct itimerspec it = { 0 };
  if (best >= 0)
    {
      long long d = best - monotonic_ms ();
      if (d < 1)
        d = 1;
      it.it_value.tv_sec = d / 1000;
      it.it_value.tv_nsec = (d % 1000) * 1000000;
    }
  timerfd_settime (s->timer, 0, &it, NULL);
}

/* Send what a signal means: K SIG, or for TERM, TERM then KILL after the
 * grace period (remotely, so it holds without us). */
static void
send_signal (struct backend_session *s, struct ssh_job *j, int sig)
{
  if (j->rides && sig == SIGTERM)
    tx_printf (s->agent, "T %u %u\n", j->id, j->grace_ms);
  else if (j->rides)
    tx_printf (s->agent, "K %u %d\n", j->id, sig);
  else if (sig == SIGTERM)
    tx_printf (j, "T %u\n", j->grace_ms);
  else
    tx_printf (j, "K %d\n", sig);
}

/* Follow the job again from the offsets we hold. */
static int
resume (struct backend_session *s, struct ssh_job *j, char **err)
{
  if (j->pty && !j->tty_started && !j->reported)
    {
      /* Only the run channel says when the terminal may open. */
      report_end (s, j, 0, "the connection dropped before its terminal opened; "
                  "a terminal cannot be resumed, so the command is not run");
      j->pending_sig = SIGKILL;
    }
  char *name = sh_quote (j->name);
  char *vars = name ? xprintf ("M=resume J=%s O1=%llu O2=%llu O3=%llu", name,
                               (unsigned long long) j->off[1],
                               (unsigned long long) j->off[2],
                               (unsigned long long) j->off[3]) : NULL;
  free (name);
  if (!vars)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  int rc = channel_open (s, j, vars, err);
  free (vars);
  /* Sent with every resume until the remote side answers (frame()). */
  if (rc == 0 && j->pending_sig)
    send_signal (s, j, j->pending_sig);
  return rc;
}

static void
forget (struct backend_session *s, struct ssh_job *j)
{
  if (s->agent && s->agent->body_to == j)
    {
      s->agent->body_to = NULL;
      s->agent->body_drop = true;
    }
  channel_close (s, j, true);
  if (j->pty)
    tty_close (s, j, true);
  for (struct ssh_job **p = &s->jobs; *p; p = &(*p)->next)
    if (*p == j)
      {
        *p = j->next;
        break;
      }
  free (j->err_text);
  free (j->fail);
  free (j->why_down);
  free (j->tty_in);
  free (j->tty_err);
  free (j);
}

static void deliver (struct backend_session *s, struct ssh_job *j, int stream,
                     const char *p, size_t n);

static void
output (struct backend_session *s, struct ssh_job *j, int stream, const char *p,
        size_t n)
{
  j->off[stream] += n;
  deliver (s, j, stream, p, n);
}

/* Output to the session (no offset: a terminal's is not in a file). */
static void
deliver (struct backend_session *s, struct ssh_job *j, int stream, const char *p,
         size_t n)
{
  if (j->forgotten || j->reported)
    return;
  struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = stream,
                              .len = n };
  event_queue_push (&s->q, &ev, p, n, NULL);
}

/* One header line (without its newline). */
static void
frame (struct backend_session *s, struct ssh_job *j, char *h)
{
  j->last_heard = monotonic_ms ();
  j->heard = true;
  j->pending_sig = 0; /* the wrapper runs: it had the resume's kill */
  if (j->lost_since)
    {
      fprintf (stderr, "airlock: session %s, job %u: resumed after %lld ms\n",
               s->session, j->id, j->last_heard - j->lost_since);
      j->lost_since = 0;
      j->attempts = 0;
    }
  char c = h[0];
  const char *arg = h[1] == ' ' ? h + 2 : h + 1;
  if (c == 'O')
    {
      int st;
      unsigned long long off, len;
      if (sscanf (arg, "%d %llu %llu", &st, &off, &len) != 3 || st < 1 || st > 3
          || off > j->off[st])
        {
          free (j->fail);
          j->fail = xprintf ("the remote wrapper sent a frame out of order (%.60s)", h);
          return;
        }
      j->body_stream = st;
      j->body_skip = j->off[st] - off; /* already delivered before a resume */
      j->body_left = len;
    }
  else if (c == 'S')
    {
      if (!j->pid && !j->forgotten && !j->reported)
        {
          j->pid = (uint32_t) strtoul (arg, NULL, 10);
          struct backend_event ev = { .type = BACKEND_STARTED, .job = j->id, .pid = j->pid };
          event_queue_push (&s->q, &ev, NULL, 0, NULL);
          if (j->pty)
            tty_flush (s, j); /* input held until now */
        }
    }
  else if (c == 'R')
    {
      j->ended = true;
      if (j->pty && tty_live (j))
        {
          /* Said when the terminal's last output is in (tty_pump). */
          j->have_end = true;
          j->end_status = atoi (arg);
          j->tty_deadline = monotonic_ms () + TTY_DRAIN_MS;
        }
      else
        report_end (s, j, atoi (arg), NULL);
      /* delivered: the remote removes the directory */
      if (j->rides)
        tx_printf (s->agent, "A %u\n", j->id);
      else
        tx_add (j, "A\n", 2);
    }
  else if (c == 'L' || c == 'E')
    {
      free (j->fail);
      j->fail = strdup (arg);
    }
  else if (c == 'Y')
    tty_open (s, j);
}

/* A frame of the agent: "C JOB ...", for the job it follows. */
static void
agent_frame (struct backend_session *s, char *h)
{
  struct ssh_job *a = s->agent;
  a->last_heard = monotonic_ms ();
  a->heard = true;
  if (h[0] == 'H' || h[1] != ' ')
    return;
  char *rest;
  unsigned long id = strtoul (h + 2, &rest, 10);
  struct ssh_job *j = NULL;
  for (struct ssh_job *k = s->jobs; k; k = k->next)
    if (k->rides && k->id == id)
      j = k;
  char b[sizeof a->hdr];
  snprintf (b, sizeof b, "%c%s", h[0], rest);
  if (!j)
    {
      /* Not ours any more (ended, forgotten): its output is skipped. */
      unsigned long long off, len;
      int st;
      if (h[0] == 'O' && sscanf (rest, "%d %llu %llu", &st, &off, &len) == 3)
        {
          a->body_stream = st;
          a->body_left = len;
          a->body_skip = 0;
          a->body_to = NULL;
          a->body_drop = true;
        }
      return;
    }
  frame (s, j, b);
  if (j->body_stream)
    {
      /* Its body follows on the agent's channel. */
      a->body_stream = j->body_stream;
      a->body_left = j->body_left;
      a->body_skip = j->body_skip;
      a->body_to = j;
      a->body_drop = false;
      j->body_stream = 0;
      if (!a->body_left)
        a->body_stream = 0;
    }
  else if (j->ended)
    {
      j->finished = true;
      forget (s, j);
    }
  else if (j->fail)
    {
      report_end (s, j, 0, j->fail);
      j->finished = true;
      forget (s, j);
    }
}

/* Parse what the channel sent. */
static void
parse (struct backend_session *s, struct ssh_job *j, const char *p, size_t n)
{
  j->last_heard = monotonic_ms (); /* a long frame body counts too */
  while (n)
    {
      if (j->body_stream)
        {
          size_t k = n < j->body_left ? n : (size_t) j->body_left;
          size_t skip = k < j->body_skip ? k : (size_t) j->body_skip;
          j->body_skip -= skip;
          if (k > skip && !j->body_drop)
            output (s, j->body_to ? j->body_to : j, j->body_stream, p + skip, k - skip);
          j->body_left -= k;
          p += k;
          n -= k;
          if (!j->body_left)
            j->body_stream = 0;
          continue;
        }
      const char *nl = memchr (p, '\n', n);
      size_t k = nl ? (size_t) (nl - p) : n;
      if (j->hdr_len + k >= sizeof j->hdr)
        k = sizeof j->hdr - 1 - j->hdr_len; /* overlong: cut (never ours) */
      memcpy (j->hdr + j->hdr_len, p, k);
      j->hdr_len += k;
      if (!nl)
        return;
      j->hdr[j->hdr_len] = 0;
      j->hdr_len = 0;
      n -= (size_t) (nl - p) + 1;
      p = nl + 1;
      if (j == s->agent)
        agent_frame (s, j->hdr);
      else
        frame (s, j, j->hdr);
    }
}

static void link_lost (struct backend_session *s, struct ssh_job *j);

/* The agent's channel ended: the commands it followed are resumed each
 * over a channel of its own (ssh_wrapper.sh, M=resume), as after any
 * dropped connection; those it never heard of, when it never ran at all,
 * did not start. */
static void
agent_ended (struct backend_session *s, int status)
{
  struct ssh_job *a = s->agent;
  a->body_to = NULL;
  a->body_stream = 0;
  a->hdr_len = 0;
  for (struct ssh_job *j = s->jobs, *next; j; j = next)
    {
      next = j->next;
      if (!j->rides)
        continue;
      j->rides = false;
      if (!a->heard)
        {
          char *m = a->why_down ? strdup (a->why_down)
                    : xprintf ("it did not start: ssh exited with status %d%s%.300s", status,
                               a->err_text ? ": " : "", a->err_text ? a->err_text : "");
          report_end (s, j, 0, m ? m : "it did not start");
          free (m);
          j->finished = true;
          forget (s, j);
          continue;
        }
      free (j->why_down);
      j->why_down = a->why_down ? strdup (a->why_down) : NULL;
      j->heard = true;
      j->last_heard = a->last_heard;
      link_lost (s, j);
    }
  a->heard = false;
  arm_timer (s);
}

/* The channel ended (status: ssh's exit status). */
static void
channel_ended (struct backend_session *s, struct ssh_job *j, int status)
{
  if (j->err_text && status == 255)
    {
      free (j->why_down);
      j->why_down = ssh_explain (&s->t, j->err_text);
      if (!j->why_down)
        j->why_down = xprintf ("ssh exited with status 255: %.300s", j->err_text);
    }
  channel_close (s, j, false);
  if (j == s->agent)
    {
      agent_ended (s, status);
      return;
    }
  if (j->ended)
    {
      /* Delivered and acknowledged (or the ack is lost with the
       * connection: the directory then ages out, see docs/ssh.md).  A
       * terminal still talking is forgotten when it ends. */
      j->finished = true;
      if (!(j->pty && tty_live (j)))
        forget (s, j);
      return;
    }
  if (j->fail)
    {
      report_end (s, j, 0, j->fail);
      j->finished = true;
      forget (s, j);
      return;
    }
  if (!j->heard)
    {
      /* Not a word from the wrapper, ever: the command never started
       * (the host cannot be reached, or refused us).  Said now, rather
       * than after minutes of retries. */
      char *m = j->why_down ? strdup (j->why_down)
                : xprintf ("it did not start: ssh exited with status %d%s%.300s", status,
                           j->err_text ? ": " : "", j->err_text ? j->err_text : "");
      report_end (s, j, 0, m ? m : "it did not start");
      free (m);
      j->finished = true;
      forget (s, j);
      return;
    }
  link_lost (s, j);
}

/* The job's follower is gone with its connection: resumed after a
 * backoff, over a channel of its own. */
static void
link_lost (struct backend_session *s, struct ssh_job *j)
{
  long long now = monotonic_ms ();
  if (j->stdin_pipe && !j->stdin_eof && !j->stdin_cut)
    {
      /* The remote end of its stdin went with the channel: the command
       * reads the end of its input.  Bytes in flight may be gone: it
       * must not go on with a stream silently cut short. */
      j->stdin_cut = true;
      if (j->stdin_bytes)
        {
          j->pending_sig = SIGKILL;
          report_end (s, j, 0, "the connection dropped while its stdin was being "
                      "sent; a stdin stream cannot be resumed, so the command is killed");
        }
    }
  if (!j->lost_since)
    {
      j->lost_since = now;
      j->attempts = 0;
      fprintf (stderr, "airlock: session %s, job %u: the connection to %s dropped "
               "(%s); resuming\n", s->session, j->id, s->name,
               j->why_down ? j->why_down : "ssh ended");
    }
  if (now - j->lost_since > LOST_AFTER_MS)
    {
      char *m = xprintf ("no connection to %s for %d s (%s); the command may still "
                         "run there, in %s/%s", s->name, LOST_AFTER_MS / 1000,
                         j->why_down ? j->why_down : "ssh failed", s->remote_dir, j->name);
      report_end (s, j, 0, m ? m : "no connection");
      free (m);
      j->finished = true;
      forget (s, j);
      return;
    }
  long long delay = (long long) RETRY_FIRST_MS << (j->attempts < 6 ? j->attempts : 6);
  if (delay > RETRY_MAX_MS)
    delay = RETRY_MAX_MS;
  j->attempts++;
  j->retry_at = now + delay;
}

static void slurp (struct backend_session *s, int *fd, char **text, size_t *len);

static void
read_err (struct backend_session *s, struct ssh_job *j)
{
  slurp (s, &j->ch.err, &j->err_text, &j->err_len);
}

/* Whatever the job's channel has now, at most one chunk of output. */
static void
pump_job (struct backend_session *s, struct ssh_job *j)
{
  if (!channel_live (j))
    return;
  tx_pump (s, j);
  if (j->ch.err >= 0)
    read_err (s, j);
  if (j->ch.out >= 0)
    {
      static char buf[READ_CHUNK];
      ssize_t n = read (j->ch.out, buf, sizeof buf);
      if (n > 0)
        parse (s, j, buf, (size_t) n);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        {
          ep_del (s, &j->ch.out);
          j->out_eof = true;
        }
    }
  if (j->ch.out < 0 && j->ch.pid > 0)
    {
      int st = ssh_proc_reap (&j->ch);
      if (st >= 0)
        {
          if (j->ch.err >= 0)
            read_err (s, j);
          channel_ended (s, j, st);
        }
    }
}

/* ---- terminal jobs ----
 *
 * The run channel makes the job directory as for any job, with the
 * terminal file $J/pty (the wrapper again, as M=pty) written from its
 * stdin beside the script, and says "Y" instead of starting the runner.
 * Then a second client, `ssh -tt` over the same master, runs
 * `exec bash DIR/pty` (a path in the remote argv; the script never is):
 * bash is the remote terminal's session leader, so the job's pid is its
 * session id and the kill paths, the remote deadline and the sweep are
 * those of every job (ssh_wrapper.sh, pt).  The run channel follows it as
 * usual: S, the meta stream, R (the exit status bash writes), A.
 *
 * Locally the -tt client leads a session whose controlling terminal is
 * a pty of ours: its master carries the output (one stream, 1) and the
 * input, and a TIOCSWINSZ on it signals the client (SIGWINCH), which
 * sends the window-change request.  A terminal cannot be resumed: when
 * its client loses the connection, the job is reported lost and killed
 * remotely (with the run channel's resume if that is down too). */

static bool
tty_live (const struct ssh_job *j)
{
  return j->tty.pid > 0 || j->ptm >= 0;
}

static void
tty_want (struct backend_session *s, struct ssh_job *j)
{
  if (j->ptm < 0)
    return;
  struct epoll_event e = { .events = EPOLLIN | (j->tty_in_len && j->pid ? EPOLLOUT : 0),
                           .data.fd = j->ptm };
  epoll_ctl (s->ep, EPOLL_CTL_MOD, j->ptm, &e);
}

/* Input to the terminal, once the command runs: bytes typed before the
 * remote side started could meet our terminal before ssh made it raw
 * (and be echoed here). */
static void
tty_flush (struct backend_session *s, struct ssh_job *j)
{
  if (j->ptm < 0 || !j->pid)
    return;
  size_t done = 0;
  while (done < j->tty_in_len)
    {
      ssize_t w = write (j->ptm, j->tty_in + done, j->tty_in_len - done);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break; /* full (EAGAIN), or the end: the read side says it */
      done += (size_t) w;
    }
  memmove (j->tty_in, j->tty_in + done, j->tty_in_len - done);
  j->tty_in_len -= done;
  tty_want (s, j);
}

static void
tty_close (struct backend_session *s, struct ssh_job *j, bool kill_it)
{
  ep_del (s, &j->ptm);
  ep_del (s, &j->tty.err);
  if (j->tty.pidfd >= 0)
    epoll_ctl (s->ep, EPOLL_CTL_DEL, j->tty.pidfd, NULL);
  ssh_proc_end (&j->tty, kill_it);
}

/* The job cannot go on without its terminal: lost, and killed remotely. */
static void
tty_lost (struct backend_session *s, struct ssh_job *j, const char *why)
{
  char *m = xprintf ("its terminal (ssh -tt) %s; a terminal cannot be resumed, so "
                     "the command is killed", why);
  report_end (s, j, 0, m ? m : why);
  free (m);
  j->tty_deadline = 0;
  if (channel_live (j) && j->ch.in >= 0)
    {
      send_signal (s, j, SIGKILL);
      tx_pump (s, j);
    }
  else
    j->pending_sig = SIGKILL; /* with the resume */
}

static void
tty_open (struct backend_session *s, struct ssh_job *j)
{
  if (!j->pty || j->tty_started || j->reported)
    return;
  j->tty_started = true;
  char *path = xprintf ("%s/%s/pty", s->remote_dir, j->name);
  char *q = path ? sh_quote (path) : NULL;
  char *cmd = q ? xprintf ("exec bash %s", q) : NULL;
  char *err = NULL;
  if (!cmd)
    err = xprintf ("out of memory");
  else if (ssh_spawn_tty (&s->t, cmd, j->term, j->rows, j->cols, &j->tty, &j->ptm, &err) == 0)
    {
      ep_add (s, j->ptm, EPOLLIN);
      ep_add (s, j->tty.err, EPOLLIN);
      ep_add (s, j->tty.pidfd, EPOLLIN);
      tty_want (s, j);
    }
  if (err)
    {
      char *m = xprintf ("could not start: %s", err);
      tty_lost (s, j, m ? m : err);
      free (m);
    }
  free (err);
  free (cmd);
  free (q);
  free (path);
}

static void
slurp (struct backend_session *s, int *fd, char **text, size_t *len)
{
  char buf[4096];
  ssize_t n;
  while (*fd >= 0 && (n = read (*fd, buf, sizeof buf)) != 0)
    {
      if (n < 0)
        {
          if (errno != EAGAIN && errno != EINTR)
            ep_del (s, fd);
          return;
        }
      if (*len > 65536)
        continue;
      char *b = realloc (*text, *len + (size_t) n + 1);
      if (!b)
        return;
      memcpy (b + *len, buf, (size_t) n);
      *len += (size_t) n;
      b[*len] = 0;
      *text = b;
    }
  ep_del (s, fd); /* its end: no longer readable for nothing */
}

/* The -tt client ended (its terminal drained): status, its exit status. */
static bool
tty_ended (struct backend_session *s, struct ssh_job *j, int status)
{
  tty_close (s, j, false);
  j->tty_deadline = 0;
  j->tty_status = status;
  if (j->have_end)
    report_end (s, j, j->end_status, NULL);
  if (j->reported)
    {
      if (j->finished)
        {
          forget (s, j);
          return true;
        }
      return false;
    }
  /* ssh's own failure (255, with its words, or the master gone: a mux
   * client says nothing then): the connection.  Else the remote bash
   * ended, and the run channel brings its exit status. */
  const char *e = j->tty_err ? j->tty_err + strspn (j->tty_err, " \r\n") : "";
  bool master_gone = false;
  if (status == 255 && !*e)
    {
      char *out = NULL, *eout = NULL, *err = NULL;
      master_gone = ssh_run (&s->t, "check", false, NULL, 0, 5000, &out, &eout, &err) != 0;
      free (out);
      free (eout);
      free (err);
    }
  if (status == 255 && (*e || master_gone))
    {
      char *why = *e ? ssh_explain (&s->t, e) : NULL;
      char *m = xprintf ("lost its connection (%s)",
                         why ? why : *e ? e : "the ssh master connection ended");
      tty_lost (s, j, m ? m : "lost its connection");
      free (m);
      free (why);
    }
  else
    j->tty_deadline = monotonic_ms () + TTY_END_WAIT_MS;
  return false;
}

/* The terminal's output, input and end.  true: j is gone. */
static bool
tty_pump (struct backend_session *s, struct ssh_job *j)
{
  if (j->tty.err >= 0)
    slurp (s, &j->tty.err, &j->tty_err, &j->tty_err_len);
  if (j->ptm >= 0)
    {
      tty_flush (s, j);
      static char buf[READ_CHUNK];
      ssize_t n = read (j->ptm, buf, sizeof buf);
      if (n > 0)
        deliver (s, j, 1, buf, (size_t) n);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR))
        ep_del (s, &j->ptm); /* EIO: the client and its terminal are gone */
    }
  if (j->ptm < 0 && j->tty.pid > 0)
    {
      int st = ssh_proc_reap (&j->tty);
      if (st >= 0)
        {
          if (j->tty.err >= 0)
            slurp (s, &j->tty.err, &j->tty_err, &j->tty_err_len);
          return tty_ended (s, j, st);
        }
    }
  if (j->tty_deadline > 0 && monotonic_ms () >= j->tty_deadline)
    {
      j->tty_deadline = 0;
      if (tty_live (j))
        {
          /* The command ended long ago; something keeps its terminal. */
          tty_close (s, j, true);
          return tty_ended (s, j, 0);
        }
      if (!j->reported)
        {
          char *m = xprintf ("closed (ssh exit status %d%s%.300s) and the command's end "
                             "was not heard within %d s", j->tty_status, j->tty_err ? ": " : "",
                             j->tty_err ? j->tty_err : "", TTY_END_WAIT_MS / 1000);
          tty_lost (s, j, m ? m : "closed");
          free (m);
        }
    }
  return false;
}

/* ---- operations ---- */

static struct ssh_job *
find_job (struct backend_session *s, uint32_t id)
{
  for (struct ssh_job *j = s->jobs; j; j = j->next)
    if (j->id == id && !j->forgotten)
      return j;
  for (struct ssh_job *j = s->jobs; j; j = j->next)
    if (j->id == id)
      return j;
  return NULL;
}

static int
ssh_op_spawn (struct backend_session *s, const struct backend_spawn *sp, char **err)
{
  struct ssh_job *j = calloc (1, sizeof *j);
  if (!j)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  j->id = sp->job;
  j->ch = (struct ssh_proc){ .pid = -1, .pidfd = -1, .in = -1, .out = -1, .err = -1 };
  j->tty = j->ch;
  j->ptm = -1;
  j->pty = sp->pty != NULL;
  if (j->pty)
    {
      j->rows = sp->pty->rows;
      j->cols = sp->pty->cols;
      snprintf (j->term, sizeof j->term, "%s", sp->pty->term ? sp->pty->term : "xterm");
    }
  /* A terminal job's input goes to its terminal, not to a stdin pipe. */
  j->stdin_pipe = sp->stdin_pipe && !j->pty;
  j->grace_ms = sp->grace_ms ? sp->grace_ms : 2000;
  j->retry_at = -1;
  snprintf (j->name, sizeof j->name, "%s-%u", s->token, sp->job);
  char *env = sh_export_lines (sp->envp);
  /* argv as sh words; the session layer's are fixed (no secrets). */
  char *args = sh_argv_words (sp->argv);
  char *cwd = sh_quote (sp->cwd ? sp->cwd : "/");
  char *name = sh_quote (j->name);

  /* The remote deadline a little after ours: ours ends the job (124);
   * the remote one holds when we cannot reach the host. */
  unsigned long long tmo = sp->timeout_ms ? sp->timeout_ms + 1000 : 0;
  /* A terminal job's file: the wrapper again, run by bash as M=pty. */
  char *base = j->pty ? sh_quote (s->remote_dir) : NULL;
  char *pty_file = base && args && cwd && name
                       ? xprintf ("B=%s M=pty J=%s T=%llu G=%u CW=%s; set --%s\n%s", base, name,
                                  tmo, j->grace_ms, cwd, args, SSH_WRAPPER)
                       : NULL;
  free (base);
  char pl[32] = "";
  if (pty_file)
    snprintf (pl, sizeof pl, " PL=%zu", strlen (pty_file));
  char *vars = env && args && cwd && name && (pty_file || !j->pty)
                   ? xprintf ("M=run J=%s SL=%zu EL=%zu%s IN=%d T=%llu G=%u CW=%s; set --%s",
                              name, sp->script ? sp->script_len : 0, strlen (env), pl,
                              j->stdin_pipe ? 1 : 0, tmo, j->grace_ms, cwd, args)
                   : NULL;
  free (name);
  int rc = -1;
  /* Without stdin (nearly every command), the session's agent starts
   * it: no channel, no wrapper to start.  Its line of words must be one
   * line. */
  bool ride = !sp->stdin_pipe && !j->pty && vars && !strchr (cwd, '\n') && !strchr (args, '\n')
              && agent_start (s, err) == 0;
  free (*err); /* (the command's own channel says it again) */
  *err = NULL;
  if (!vars)
    *err = xprintf ("out of memory");
  else if (ride)
    {
      struct ssh_job *a = s->agent;
      j->rides = true;
      rc = tx_printf (a, "N %u %zu %zu %llu %u\n", j->id, sp->script ? sp->script_len : 0,
                      strlen (env), tmo, j->grace_ms);
      if (rc == 0)
        rc = tx_add (a, cwd, strlen (cwd));
      if (rc == 0)
        rc = tx_add (a, args, strlen (args));
      if (rc == 0)
        rc = tx_add (a, "\n", 1);
      if (rc == 0 && sp->script)
        rc = tx_add (a, sp->script, sp->script_len);
      if (rc == 0)
        rc = tx_add (a, env, strlen (env));
      if (rc == 0)
        rc = tx_add (a, "G\n", 2);
      if (rc < 0)
        *err = xprintf ("out of memory");
      else
        {
          j->next = s->jobs;
          s->jobs = j;
          tx_pump (s, a);
        }
    }
  else if ((rc = channel_open (s, j, vars, err)) == 0)
    {
      if (sp->script)
        tx_add (j, sp->script, sp->script_len);
      tx_add (j, env, strlen (env));
      if (pty_file)
        tx_add (j, pty_file, strlen (pty_file));
      j->next = s->jobs;
      s->jobs = j;
      tx_pump (s, j);
    }
  free (vars);
  free (pty_file);
  free (env);
  free (args);
  free (cwd);
  if (rc < 0)
    {
      free (j);
      return -1;
    }
  return 0;
}

/* Input for a terminal job; its end is the terminal's EOF character, as
 * typed (terminal_eof.h).  It stays open. */
static int
tty_input (struct backend_session *s, struct ssh_job *j, const void *data, size_t n,
           bool eof)
{
  if (j->reported || j->ended)
    return -ESRCH;
  if (j->tty_started && j->ptm < 0)
    return -EPIPE;
  char end[2] = { 4, 4 }; /* ^D, before the terminal exists */
  bool mid = terminal_mid_line (j->mid_line, data, n);
  size_t k = !eof ? 0 : j->ptm >= 0 ? terminal_eof (j->ptm, mid, end) : mid ? 2 : 1;
  if (j->tty_in_len + n + k > TTY_IN_MAX)
    return -ENOBUFS;
  char *b = realloc (j->tty_in, j->tty_in_len + n + k + 1);
  if (!b)
    return -ENOMEM;
  memcpy (b + j->tty_in_len, data, n);
  memcpy (b + j->tty_in_len + n, end, k);
  j->tty_in = b;
  j->tty_in_len += n + k;
  j->mid_line = k ? false : mid;
  tty_flush (s, j);
  return 0;
}

/* The kernel signals the -tt client (SIGWINCH), which sends the
 * window-change request; before the terminal exists, its first size. */
static int
ssh_op_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  struct ssh_job *j = find_job (s, job);
  if (!j || j->reported || j->ended)
    return -ESRCH;
  if (!j->pty)
    return -ENOTTY;
  j->rows = rows;
  j->cols = cols;
  struct winsize ws = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
  if (j->ptm >= 0 && ioctl (j->ptm, TIOCSWINSZ, &ws) < 0)
    return -errno;
  return 0;
}

static int
ssh_op_write_stdin (struct backend_session *s, uint32_t job, const void *data,
                    size_t n, bool eof)
{
  struct ssh_job *j = find_job (s, job);
  if (j && j->pty)
    return tty_input (s, j, data, n, eof);
  if (!j || !j->stdin_pipe || j->stdin_eof || j->reported)
    return -ESRCH;
  if (!channel_live (j) || j->stdin_cut)
    return -EPIPE;
  const char *p = data;
  j->stdin_bytes += n;
  while (n)
    {
      size_t k = n < STDIN_FRAME ? n : STDIN_FRAME;
      if (tx_printf (j, "D %zu\n", k) < 0 || tx_add (j, p, k) < 0)
        return -ENOMEM;
      p += k;
      n -= k;
      /* Backpressure, as the other backends' pipes: wait while the
       * channel takes a large backlog (nothing else needs the daemon
       * as much as this command's own input). */
      long long until = monotonic_ms () + 60000;
      while (j->ch.in >= 0 && j->tx_len - j->tx_off > TX_HIGH && monotonic_ms () < until)
        {
          struct pollfd f = { .fd = j->ch.in, .events = POLLOUT };
          poll (&f, 1, 1000);
          tx_pump (s, j);
        }
      if (j->ch.in < 0)
        return -EPIPE;
    }
  if (eof)
    {
      j->stdin_eof = true;
      tx_add (j, "C\n", 2);
    }
  tx_pump (s, j);
  return 0;
}

static int
ssh_op_signal (struct backend_session *s, uint32_t job, int sig)
{
  struct ssh_job *j = find_job (s, job);
  if (!j || j->ended)
    return -ESRCH;
  if (j->reported && !j->forgotten)
    j->forgotten = true; /* lost: the session layer's KILL */
  long long now = monotonic_ms ();
  struct ssh_job *c = j->rides ? s->agent : j;
  if (channel_live (c) && c->ch.in >= 0)
    {
      send_signal (s, j, sig);
      tx_pump (s, c);
      if (now - c->last_heard < SILENT_MS)
        return 0;
    }
  /* The host cannot be reached now: sent with the resume, at once if the
   * channel is already gone. */
  if (!j->pending_sig || sig == SIGKILL)
    j->pending_sig = sig;
  if (!channel_live (j) && !j->rides)
    {
      j->retry_at = now;
      arm_timer (s);
    }
  j->forgotten = true; /* the session layer ends it now (124, kill_pending) */
  fprintf (stderr, "airlock: session %s, job %u: %s cannot be reached; the kill "
           "is sent when it can\n", s->session, job, s->name);
  return BACKEND_KILL_PENDING;
}

static int
ssh_op_event_fd (struct backend_session *s)
{
  return s->ep;
}

static int
ssh_op_next_event (struct backend_session *s, struct backend_event *ev, char **err)
{
  (void) err; /* the session is never lost as a whole: jobs are */
  if (event_queue_empty (&s->q))
    {
      uint64_t ticks;
      if (read (s->timer, &ticks, sizeof ticks) < 0)
        {
          /* not expired */
        }
      if (channel_live (s->agent))
        pump_job (s, s->agent);
      long long now = monotonic_ms ();
      for (struct ssh_job *j = s->jobs, *next; j; j = next)
        {
          next = j->next;
          if (j->pty && tty_pump (s, j))
            continue;
          if (channel_live (j))
            pump_job (s, j);
          else if (!j->finished && j->retry_at >= 0 && now >= j->retry_at)
            {
              char *e = NULL;
              j->retry_at = -1;
              if (resume (s, j, &e) < 0)
                {
                  report_end (s, j, 0, e ? e : "cannot start ssh");
                  free (e);
                  forget (s, j);
                }
            }
        }
      arm_timer (s);
    }
  return event_queue_pop (&s->q, ev) ? 1 : 0;
}

static int
ssh_op_health (struct backend_session *s, char **err)
{
  char *out = NULL, *eout = NULL;
  int rc = ssh_run (&s->t, "check", false, NULL, 0, 10000, &out, &eout, err);
  if (rc != 0)
    {
      free (*err);
      *err = NULL;
      free (out);
      free (eout);
      /* No master (it timed out): a fresh connection. */
      const char *ping = "6\nexit 0";
      rc = ssh_run (&s->t, NULL, false, ping, strlen (ping), 20000, &out, &eout, err);
      if (rc != 0 && !*err)
        {
          *err = ssh_explain (&s->t, eout ? eout : "");
          if (!*err)
            *err = xprintf ("%s does not answer (ssh exit %d)", s->name, rc);
        }
    }
  free (out);
  free (eout);
  return rc == 0 ? 0 : -1;
}

/* A real machine: the whole gate, unless declared disposable. */
static void
ssh_op_reach (struct backend_session *s, struct backend_reach *r)
{
  r->isolated = s->disposable;
  r->host_filesystem = !s->disposable;
  r->host_network = !s->disposable;
}

static int
ssh_op_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  (void) s;
  (void) err;
  p->isolation = "remote-host";
  p->namespaces[0] = NULL;
  p->seccomp = false;
  p->no_new_privs = false;
  p->capabilities = -1;
  p->network = "host";
  p->privilege = "ssh";
  p->verified = false;
  return 0;
}

static void
free_session (struct backend_session *s)
{
  while (s->jobs)
    forget (s, s->jobs);
  if (s->agent)
    {
      channel_close (s, s->agent, true);
      free (s->agent->err_text);
      free (s->agent->fail);
      free (s->agent->why_down);
      free (s->agent);
    }
  event_queue_clear (&s->q);
  if (s->ep >= 0)
    close (s->ep);
  if (s->timer >= 0)
    close (s->timer);
  ssh_target_clear (&s->t);
  free ((char *) s->t.host);
  free ((char *) s->t.user);
  free ((char *) s->t.key);
  free ((char *) s->t.config);
  free ((char *) s->t.known_hosts);
  free ((char *) s->t.program);
  free ((char *) s->t.strict);
  for (char **o = (char **) s->t.options; o && *o; o++)
    free (*o);
  free ((char **) s->t.options);
  free (s->target_key);
  free (s->name);
  free (s->session);
  free (s->remote_dir);
  free (s);
}

static void
ssh_op_close (struct backend_session *s)
{
  /* Our channels first; then, over one channel, every job of ours still
   * there is killed (by session id) and its directory removed. */
  size_t n = 0;
  channel_close (s, s->agent, true);
  for (struct ssh_job *j = s->jobs; j; j = j->next)
    {
      channel_close (s, j, true);
      if (j->pty)
        tty_close (s, j, true);
      n += strlen (j->name) + 1;
    }
  /* Always: the session's finished commands may have left processes. */
    {
      char *names = calloc (1, n + 1), *o = names;
      for (struct ssh_job *j = s->jobs; names && j; j = j->next)
        o += sprintf (o, "%s%s", o == names ? "" : " ", j->name);
      char *q = names ? sh_quote (names) : NULL;
      char *vars = q ? xprintf ("M=close TOK=%s J=%s", s->token, q) : NULL;
      char *in = vars ? wrapper_input (s, vars) : NULL;
      char *out = NULL, *eout = NULL, *err = NULL;
      if (in && ssh_run (&s->t, NULL, false, in, strlen (in), CLOSE_TIMEOUT_MS, &out,
                         &eout, &err) != 0)
        fprintf (stderr, "airlock: session %s: cannot remove its jobs on %s (%s); "
                 "they are swept at a later connection after ssh.job_ttl\n",
                 s->session, s->name, err ? err : eout ? eout : "?");
      free (names);
      free (q);
      free (vars);
      free (in);
      free (out);
      free (eout);
      free (err);
    }
  if (s->target_key && master_ref (s->target_key, -1) == 0)
    {
      char *out = NULL, *eout = NULL, *err = NULL;
      ssh_run (&s->t, "exit", false, NULL, 0, 5000, &out, &eout, &err);
      free (out);
      free (eout);
      free (err);
    }
  free_session (s);
}

static const struct backend_ops ssh_ops = {
  .name = "ssh",
  .signal = ssh_op_signal,
  .spawn = ssh_op_spawn,
  .write_stdin = ssh_op_write_stdin,
  .resize = ssh_op_resize,
  .event_fd = ssh_op_event_fd,
  .next_event = ssh_op_next_event,
  .health = ssh_op_health,
  .reach = ssh_op_reach,
  .posture = ssh_op_posture,
  .oom_kills = NULL,
  .close = ssh_op_close,
};

const struct backend_ops *
ssh_session_ops (void)
{
  return &ssh_ops;
}

/* ---- open ---- */

static char *
dup_or_null (const char *s)
{
  return s ? strdup (s) : NULL;
}

/* A "P key value" line of the probe's answer (malloc'd), or NULL. */
static char *
probe_value (const char *out, const char *key)
{
  char pat[32];
  snprintf (pat, sizeof pat, "P %s ", key);
  for (const char *p = out; p && *p; p = strchr (p, '\n') ? strchr (p, '\n') + 1 : NULL)
    if (!strncmp (p, pat, strlen (pat)))
      {
        p += strlen (pat);
        const char *e = strchr (p, '\n');
        return strndup (p, e ? (size_t) (e - p) : strlen (p));
      }
  return NULL;
}

/* Why authentication failed, with the identities ssh offered. */
static char *
auth_failure (struct backend_session *s, const char *input, const char *first)
{
  char *out = NULL, *eout = NULL, *err = NULL;
  ssh_run (&s->t, NULL, true, input, strlen (input), 30000, &out, &eout, &err);
  char *tried = eout ? ssh_identities_tried (eout) : NULL;
  char *m;
  if (tried)
    m = xprintf ("%s; identities tried: %s.  Put the public key in the remote "
                 "user's ~/.ssh/authorized_keys, or set ssh.key to the right one",
                 first, tried);
  else
    m = xprintf ("%s; no identity was offered: %s", first,
                 s->t.key ? "ssh.key could not be used (does the file exist, is it "
                            "readable, without a passphrase or in the agent?)"
                          : "set ssh.key, start an agent (SSH_AUTH_SOCK in the "
                            "daemon's environment), or make a default key (~/.ssh/id_ed25519)");
  free (tried);
  free (out);
  free (eout);
  free (err);
  return m;
}

struct backend_session *
ssh_session_open (const struct ssh_session_options *o, char **cwd, char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->ep = s->timer = -1;
  s->t = o->target;
  s->t.control_dir = NULL;
  s->t.host = dup_or_null (o->target.host);
  s->t.user = dup_or_null (o->target.user);
  s->t.key = dup_or_null (o->target.key);
  s->t.config = dup_or_null (o->target.config);
  s->t.known_hosts = dup_or_null (o->target.known_hosts);
  s->t.program = dup_or_null (o->target.program);
  s->t.strict = dup_or_null (o->target.strict);
  size_t n_opt = 0;
  for (const char *const *p = o->target.options; p && *p; p++)
    n_opt++;
  char **opts = calloc (n_opt + 1, sizeof *opts);
  for (size_t i = 0; opts && i < n_opt; i++)
    opts[i] = strdup (o->target.options[i]);
  s->t.options = (const char *const *) opts;
  s->session = strdup (o->session ? o->session : "?");
  s->remote_dir = strdup (o->remote_dir ? o->remote_dir : ".airlock");
  s->disposable = o->disposable;
  s->ep = epoll_create1 (EPOLL_CLOEXEC);
  s->timer = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if ((s->agent = calloc (1, sizeof *s->agent)))
    {
      s->agent->ch = (struct ssh_proc){ .pid = -1, .pidfd = -1, .in = -1, .out = -1, .err = -1 };
      s->agent->retry_at = -1;
      snprintf (s->agent->name, sizeof s->agent->name, "agent");
    }
  uint8_t rnd[8];
  if (!s->t.host || !opts || !s->session || !s->remote_dir || s->ep < 0 || s->timer < 0
      || !s->agent
      || getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    {
      *err = xprintf ("cannot set up the ssh session: %s", strerror (errno ? errno : ENOMEM));
      free_session (s);
      return NULL;
    }
  for (int i = 0; i < 8; i++)
    snprintf (s->token + 2 * i, 3, "%02x", rnd[i]);
  ep_add (s, s->timer, EPOLLIN);
  if (s->t.key && access (s->t.key, R_OK) < 0)
    {
      *err = xprintf ("ssh.key %s: %s", s->t.key, strerror (errno));
      free_session (s);
      return NULL;
    }
  if (ssh_target_init (&s->t, o->runtime_dir, err) < 0)
    {
      free_session (s);
      return NULL;
    }
  s->name = ssh_target_name (&s->t);
  /* The probe: sh, bash, the tools, the working and job directories;
   * stale job directories swept. */
  char *wd = o->workdir ? sh_quote (o->workdir) : strdup ("''");
  char *vars = wd ? xprintf ("M=probe WD=%s TTL=%lld", wd, o->job_ttl_s) : NULL;
  char *in = vars ? wrapper_input (s, vars) : NULL;
  free (wd);
  free (vars);
  char *out = NULL, *eout = NULL;
  int timeout = (s->t.connect_timeout + 30) * 1000;
  int rc = in ? ssh_run (&s->t, NULL, false, in, strlen (in), timeout, &out, &eout, err)
              : (*err = xprintf ("out of memory"), -1);
  char *bash = NULL, *missing = NULL, *e = NULL;
  for (size_t n = eout ? strlen (eout) : 0; n && (eout[n - 1] == '\n' || eout[n - 1] == ' '); n--)
    eout[n - 1] = 0;
  if (rc == 255)
    {
      char *why = ssh_explain (&s->t, eout);
      if (why && strstr (why, "refused authentication"))
        {
          char *m = auth_failure (s, in, why);
          free (why);
          why = m;
        }
      *err = why ? why : xprintf ("cannot connect to %s: ssh failed (%.300s)", s->name, eout);
    }
  else if (rc == 127 || (rc > 0 && eout && strstr (eout, "sh: ")))
    *err = xprintf ("%s has no POSIX sh to run airlock's wrapper (exit %d: %.200s); the "
                    "ssh backend needs /bin/sh and coreutils on the remote host",
                    s->name, rc, eout);
  else if (rc >= 0 && out && (e = strstr (out, "E ")) && (e == out || e[-1] == '\n'))
    *err = xprintf ("%s: %.*s", s->name, (int) strcspn (e + 2, "\n"), e + 2);
  else if (rc >= 0 && !(out && strstr (out, "P ok 1")))
    *err = xprintf ("%s: the remote check did not finish (ssh exit %d: %.300s)", s->name,
                    rc, eout && *eout ? eout : "no output");
  else if (rc >= 0 && (!(bash = probe_value (out, "bash")) || !*bash))
    *err = xprintf ("%s has no bash: airlock sessions need bash (4.4 or later) on the "
                    "remote host; install it there", s->name);
  else if (rc >= 0 && (missing = probe_value (out, "missing")) && missing[strspn (missing, " ")])
    *err = xprintf ("%s lacks tools the ssh backend needs:%s (setsid is util-linux; head, "
                    "tail and stat are GNU coreutils)", s->name, missing);
  else if (rc >= 0)
    *cwd = probe_value (out, "wd");
  free (bash);
  free (missing);
  free (in);
  free (out);
  free (eout);
  if (*err)
    {
      free_session (s);
      return NULL;
    }
  s->target_key = xprintf ("%s/%s", s->t.control_dir, s->name);
  if (s->target_key)
    master_ref (s->target_key, 1);
  return s;
}

/* SPDX-License-Identifier: MIT */
/* The per-user daemon: owns the named sessions, listens on a unix socket
 * in a 0700 runtime directory, speaks newline-delimited JSON (api.c),
 * reaps idle sessions, and exits when it has no session and no client and
 * has been idle.  If it dies, its sessions die with it (each sandbox's
 * helper has it as parent-death target); the next daemon reports them as
 * lost and never re-creates them silently. */
#define _GNU_SOURCE
#include "api_internal.h"
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <unistr.h>

#include "backend_open.h"
#include "runtime_dir.h"

struct client {
  int fd;
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_len, out_cap, out_off;
  bool closing, overlong, eof;
};

void
client_send (struct client *c, cJSON *msg)
{
  char *text = cJSON_PrintUnformatted (msg);
  cJSON_Delete (msg);
  if (!text)
    return;
  size_t n = strlen (text);
  if (c->out_off)
    {
      /* What was written already makes room: the buffer holds only what
       * is still queued (bounded by the callers, see api.c's pump). */
      memmove (c->out, c->out + c->out_off, c->out_len - c->out_off);
      c->out_len -= c->out_off;
      c->out_off = 0;
    }
  if (c->out_len + n + 1 > c->out_cap)
    {
      size_t cap = (c->out_len + n + 1) * 2;
      char *p = realloc (c->out, cap);
      if (!p)
        {
          free (text);
          c->closing = true;
          return;
        }
      c->out = p;
      c->out_cap = cap;
    }
  memcpy (c->out + c->out_len, text, n);
  c->out[c->out_len + n] = '\n';
  c->out_len += n + 1;
  free (text);
}

static void
client_free (struct daemon *d, struct client *c)
{
  api_client_gone (d, c);
  close (c->fd);
  free (c->in);
  free (c->out);
  free (c);
}

/* ---- the session table ---- */

struct dsession *
daemon_find (struct daemon *d, const char *name)
{
  for (struct dsession *s = d->sessions; s; s = s->next)
    if (!strcmp (s->name, name))
      return s;
  return NULL;
}

bool
daemon_is_lost (struct daemon *d, const char *name)
{
  for (size_t i = 0; i < d->nlost; i++)
    if (!strcmp (d->lost[i], name))
      return true;
  return false;
}

/* The names this daemon owns, on disk, so that a successor knows which
 * sessions died with us. */
static void
save_names (struct daemon *d)
{
  char path[4200], tmp[4300];
  snprintf (path, sizeof path, "%s/" DAEMON_SESSIONS, d->dir);
  snprintf (tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen (tmp, "we");
  if (!f)
    return;
  for (struct dsession *s = d->sessions; s; s = s->next)
    fprintf (f, "%s\n", s->name);
  for (size_t i = 0; i < d->nlost; i++)
    fprintf (f, "%s\n", d->lost[i]);
  if (fclose (f) == 0)
    rename (tmp, path);
}

void
daemon_forget_lost (struct daemon *d, const char *name)
{
  for (size_t i = 0; i < d->nlost; i++)
    if (!strcmp (d->lost[i], name))
      {
        free (d->lost[i]);
        d->lost[i] = d->lost[--d->nlost];
        save_names (d);
        return;
      }
}

int
daemon_add (struct daemon *d, struct dsession *ds)
{
  ds->next = d->sessions;
  d->sessions = ds;
  save_names (d);
  return 0;
}

void
daemon_remove (struct daemon *d, struct dsession *ds)
{
  /* First, while the session is still listed: its waiting clients get an
   * answer, its queue is emptied. */
  api_session_gone (ds->s, "the session was closed while the command ran");
  for (struct dsession **p = &d->sessions; *p; p = &(*p)->next)
    if (*p == ds)
      {
        *p = ds->next;
        break;
      }
  session_close (ds->s);
  id_set_clear (&ds->approvals);
  config_free (ds->cfg);
  free (ds->config_hash);
  free (ds->name);
  free (ds->backend);
  free (ds);
  save_names (d);
}

static void
load_lost (struct daemon *d)
{
  char path[4200];
  snprintf (path, sizeof path, "%s/" DAEMON_SESSIONS, d->dir);
  FILE *f = fopen (path, "re");
  char line[512];
  while (f && fgets (line, sizeof line, f))
    {
      line[strcspn (line, "\n")] = '\0';
      char **p = realloc (d->lost, (d->nlost + 1) * sizeof *p);
      if (!*line || !p)
        continue;
      d->lost = p;
      d->lost[d->nlost++] = strdup (line);
    }
  if (f)
    fclose (f);
}

/* ---- the loop ---- */

static int
listen_on (const char *dir, char **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  if ((size_t) snprintf (addr.sun_path, sizeof addr.sun_path, "%s/" DAEMON_SOCKET, dir)
      >= sizeof addr.sun_path)
    {
      if (asprintf (err, "%s: path too long for a socket", dir) < 0)
        *err = NULL;
      return -1;
    }
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  unlink (addr.sun_path);
  if (fd < 0 || bind (fd, (struct sockaddr *) &addr, sizeof addr) < 0
      || listen (fd, 16) < 0)
    {
      if (asprintf (err, "cannot listen on %s: %s", addr.sun_path, strerror (errno)) < 0)
        *err = NULL;
      if (fd >= 0)
        close (fd);
      return -1;
    }
  return fd;
}

static void
accept_client (struct daemon *d)
{
  int fd = accept4 (d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return;
  /* Only our own user: the directory is 0700, and we check the peer. */
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0
      || cred.uid != getuid ())
    {
      close (fd);
      return;
    }
  for (size_t i = 0; i < MAX_CLIENTS; i++)
    if (!d->clients[i])
      {
        struct client *c = calloc (1, sizeof *c);
        if (!c)
          break;
        c->fd = fd;
        d->clients[i] = c;
        return;
      }
  close (fd);
}

/* One complete request line: text the API can parse, or one error that
 * names the problem without echoing the bytes. */
static void
handle_line (struct daemon *d, struct client *c, const char *line, size_t len)
{
  const char *nul = memchr (line, '\0', len);
  const uint8_t *bad = nul ? NULL : u8_check ((const uint8_t *) line, len);
  if (!nul && !bad)
    return api_handle (d, c, line, len);
  cJSON *e = cJSON_CreateObject ();
  cJSON_AddFalseToObject (e, "ok");
  cJSON *err = cJSON_AddObjectToObject (e, "error");
  cJSON_AddStringToObject (err, "code", "bad_request");
  char msg[160];
  snprintf (msg, sizeof msg, nul ? "the request holds a NUL byte at byte %zu: "
            "requests are JSON text, one per line"
            : "the request is not valid UTF-8 (at byte %zu): requests are "
            "JSON text in UTF-8, one per line",
            nul ? (size_t) (nul - line) : (size_t) ((const char *) bad - line));
  cJSON_AddStringToObject (err, "message", msg);
  client_send (c, e);
}

/* Read what the client sent and handle each complete line.  A line over
 * MAX_LINE gets one error; the rest of it is skipped as it comes, and the
 * connection goes on at the next newline. */
static void
read_client (struct daemon *d, struct client *c)
{
  char buf[65536];
  if (c->eof)
    return;
  ssize_t n = read (c->fd, buf, sizeof buf);
  if (n == 0)
    {
      /* Half-closed: answer what was asked (execs finish), then go. */
      c->eof = true;
      return;
    }
  if (n < 0 && errno != EAGAIN && errno != EINTR)
    {
      c->closing = true;
      return;
    }
  for (const char *p = buf, *end = buf + (n > 0 ? n : 0); p < end;)
    {
      const char *nl = memchr (p, '\n', (size_t) (end - p));
      size_t take = (size_t) ((nl ? nl : end) - p);
      const char *next = nl ? nl + 1 : end;
      if (c->overlong)
        {
          c->overlong = !nl;
          p = next;
          continue;
        }
      if (c->in_len + take > MAX_LINE)
        {
          cJSON *e = cJSON_CreateObject ();
          cJSON_AddFalseToObject (e, "ok");
          cJSON *err = cJSON_AddObjectToObject (e, "error");
          cJSON_AddStringToObject (err, "code", "bad_request");
          cJSON_AddStringToObject (err, "message", "request line longer than 4 MiB: "
                                   "ignored up to its newline");
          client_send (c, e);
          c->in_len = 0;
          c->overlong = !nl;
          p = next;
          continue;
        }
      if (c->in_len + take > c->in_cap)
        {
          size_t cap = (c->in_len + take) * 2;
          char *q = realloc (c->in, cap < MAX_LINE ? cap : MAX_LINE);
          if (!q)
            {
              c->closing = true;
              return;
            }
          c->in = q;
          c->in_cap = cap < MAX_LINE ? cap : MAX_LINE;
        }
      memcpy (c->in + c->in_len, p, take);
      c->in_len += take;
      if (nl)
        {
          size_t len = c->in_len;
          c->in_len = 0;
          handle_line (d, c, c->in, len);
        }
      p = next;
    }
}

static void write_client (struct client *c);

/* What is queued, now (as far as the socket takes it without waiting):
 * for progress events during a long request. */
void
client_flush (struct client *c)
{
  write_client (c);
}

size_t
client_queued (const struct client *c)
{
  return c->out_len - c->out_off;
}

static void
write_client (struct client *c)
{
  while (c->out_off < c->out_len && !c->closing)
    {
      ssize_t n = write (c->fd, c->out + c->out_off, c->out_len - c->out_off);
      if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
      if (n <= 0)
        {
          /* Gone (EPIPE, reset): what was queued can never be delivered. */
          c->closing = true;
          break;
        }
      c->out_off += (size_t) n;
    }
  c->out_len = c->out_off = 0;
}

static void
reap_idle (struct daemon *d)
{
  long long now = session_now_ms ();
  for (struct dsession *s = d->sessions, *next; s; s = next)
    {
      next = s->next;
      long long idle = config_int (s->cfg, "session.idle_timeout") * 1000;
      session_prune_jobs (s->s, config_int (s->cfg, "jobs.finished_ttl") * 1000);
      if (!session_busy (s->s) && now - session_idle_since (s->s) > idle)
        daemon_remove (d, s);
    }
}

static void
lose_session (struct daemon *d, struct dsession *s, const char *why)
{
  fprintf (stderr, "airlock daemon: session %s lost: %s\n", s->name, why);
  char msg[600];
  snprintf (msg, sizeof msg, "session %s lost: %s", s->name, why);
  api_session_gone (s->s, msg);
  char **p = realloc (d->lost, (d->nlost + 1) * sizeof *p);
  if (p)
    {
      d->lost = p;
      d->lost[d->nlost++] = strdup (s->name);
    }
  daemon_remove (d, s);
}

/* SIGTERM and SIGINT end the daemon the orderly way: its sessions are
 * closed, so nothing of theirs (a docker container) is left behind. */
static volatile sig_atomic_t stop_requested;

static void
on_stop_signal (int sig)
{
  (void) sig;
  stop_requested = 1;
}

static bool
session_is_open (void *d, const char *name)
{
  return daemon_find (d, name) != NULL;
}

static void
serve_loop (struct daemon *d)
{
  d->idle_since = session_now_ms ();
  long long orphans_reaped = d->idle_since - 60000; /* at start, then each minute */
  while (!d->stop && !stop_requested)
    {
      struct pollfd p[1 + MAX_CLIENTS + 256];
      void *who[1 + MAX_CLIENTS + 256];
      size_t n = 0;
      p[n] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
      who[n++] = NULL;
      for (size_t i = 0; i < MAX_CLIENTS; i++)
        if (d->clients[i])
          {
            struct client *c = d->clients[i];
            p[n] = (struct pollfd){ .fd = c->fd,
                                    .events = (c->eof ? 0 : POLLIN)
                                              | (c->out_len ? POLLOUT : 0) };
            who[n++] = c;
          }
      size_t first_session = n;
      long long wake = 1000; /* idle reaping runs at least every second */
      long long wait_dl = api_next_deadline ();
      if (wait_dl >= 0)
        {
          long long left = wait_dl - session_now_ms ();
          wake = left < 0 ? 0 : left < wake ? left : wake;
        }
      for (struct dsession *s = d->sessions; s && n < 1 + MAX_CLIENTS + 256; s = s->next)
        {
          p[n] = (struct pollfd){ .fd = session_fd (s->s), .events = POLLIN };
          who[n++] = s;
          long long dl = session_deadline (s->s);
          if (dl >= 0)
            {
              long long left = dl - session_now_ms ();
              wake = left < 0 ? 0 : left < wake ? left : wake;
            }
        }
      if (poll (p, n, (int) wake) < 0 && errno != EINTR)
        break;
      if (p[0].revents)
        accept_client (d);
      for (size_t i = 1; i < first_session; i++)
        {
          struct client *c = who[i];
          if (c->eof && (p[i].revents & (POLLHUP | POLLERR)))
            c->closing = true; /* gone for good, not just half-closed */
          else if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            read_client (d, c);
          if (p[i].revents & POLLOUT)
            write_client (c);
        }
      /* Every session: events, then timeouts (a deadline needs no fd). */
      for (struct dsession *s = d->sessions, *next; s; s = next)
        {
          next = s->next;
          char *err = NULL;
          if (session_process (s->s, &err) < 0)
            lose_session (d, s, err ? err : "the sandbox ended");
          free (err);
        }
      bool any_client = false;
      for (size_t i = 0; i < MAX_CLIENTS; i++)
        if (d->clients[i])
          {
            write_client (d->clients[i]);
            struct client *c = d->clients[i];
            /* A half-closed client stays until all it asked is answered. */
            if ((c->closing || (c->eof && !api_client_waiting (d, c)))
                && !c->out_len)
              {
                client_free (d, d->clients[i]);
                d->clients[i] = NULL;
              }
            else
              any_client = true;
          }
      api_waits_tick (d);
      reap_idle (d);
      api_approval_tick (d);
      long long now = session_now_ms ();
      if (now - orphans_reaped >= 60000)
        {
          backend_reap_orphans (d->cfg, d->dir, session_is_open, d);
          orphans_reaped = now;
        }
      if (any_client || d->sessions)
        d->idle_since = now;
      else if (now - d->idle_since > (long long) d->idle_exit_sec * 1000)
        break;
    }
}

/* Started by a client (client_commands.c): a pipe on which to say why we
 * cannot start, closed once we listen. */
static int ready_fd = -1;

static void
take_ready_fd (void)
{
  const char *v = getenv ("AIRLOCK_DAEMON_READY_FD");
  char *end = NULL;
  long fd = v ? strtol (v, &end, 10) : -1;
  struct stat st;
  if (v && end != v && !*end && fd > 2 && fd < 1024 && fstat ((int) fd, &st) == 0
      && S_ISFIFO (st.st_mode))
    {
      ready_fd = (int) fd;
      fcntl (ready_fd, F_SETFD, FD_CLOEXEC); /* not for sandboxes */
    }
  unsetenv ("AIRLOCK_DAEMON_READY_FD");
}

static void
ready (void)
{
  if (ready_fd >= 0)
    close (ready_fd);
  ready_fd = -1;
}

static int
cannot_start (char *err)
{
  fprintf (stderr, "airlock daemon: %s\n", err ? err : "out of memory");
  if (ready_fd >= 0)
    dprintf (ready_fd, "%s\n", err ? err : "out of memory");
  free (err);
  ready ();
  return 1;
}

int
daemon_main (int idle_exit_sec)
{
  static struct daemon d;
  char *err = NULL;
  take_ready_fd ();
  d.idle_exit_sec = idle_exit_sec;
  d.started_ms = session_now_ms ();
  if (runtime_dir (d.dir, sizeof d.dir, &err) < 0)
    return cannot_start (err);
  char lock[4200];
  snprintf (lock, sizeof lock, "%s/" DAEMON_LOCK, d.dir);
  int lfd = open (lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lfd < 0 || flock (lfd, LOCK_EX | LOCK_NB) < 0)
    {
      /* The client that started us connects to that one. */
      fprintf (stderr, "airlock daemon: another daemon is running (%s)\n", lock);
      ready ();
      return 0;
    }
  /* What a broken file would make every request fail with is said now. */
  if (!(d.cfg = config_load (&err)) || !(d.approval = approval_open (d.cfg, &err))
      || (d.listen_fd = listen_on (d.dir, &err)) < 0)
    return cannot_start (err);
  ready ();
  signal (SIGPIPE, SIG_IGN);
  struct sigaction stop = { .sa_handler = on_stop_signal };
  sigaction (SIGTERM, &stop, NULL);
  sigaction (SIGINT, &stop, NULL);
  load_lost (&d);
  serve_loop (&d);
  while (d.sessions)
    daemon_remove (&d, d.sessions);
  char sock[4200];
  snprintf (sock, sizeof sock, "%s/" DAEMON_SOCKET, d.dir);
  unlink (sock);
  return 0;
}

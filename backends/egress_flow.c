/* SPDX-License-Identifier: MIT */
/* The flows of airlock-egress.  See egress_flow.h.
 *
 * Threads: the main thread owns the listeners and accepts; each accepted
 * connection gets a detached thread that owns its two fds and ends by
 * closing them.  A thread reads only the policy (immutable while
 * threads run), its own struct flow, the audit writer (locked) and the
 * stop pipe: every poll of a flow also waits on the stop pipe's read end,
 * which becomes readable once, for good, when the process stops. */
#define _GNU_SOURCE
#include "egress_flow.h"
#include "monotonic_ms.h"
#include "egress_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RELAY_BUF 65536
/* Upstream addresses tried per flow. */
#define MAX_ADDRESSES 8
#define REASON_MAX 1024

struct listener
{
  int fd;
  uint32_t fake;
  uint16_t port;
  char *path;
  char *name;
  const struct egress_rule *rule;
};

struct egress_flows
{
  const struct egress_policy *policy;
  struct egress_audit *audit;
  char *dir;
  struct listener *listeners;
  size_t n_listeners, cap_listeners;
  int stop_pipe[2];
  int peek_ms;
  pthread_mutex_t lock; /* active */
  pthread_cond_t idle;
  unsigned active;
};

/* What one flow thread gets (its own copy). */
struct flow
{
  struct egress_flows *flows;
  int client;
  int upstream;
  char name[EGRESS_MAX_NAME + 1];
  char fake[INET_ADDRSTRLEN];
  uint16_t port;
  const struct egress_rule *rule;
};

/* ---- the listeners ---- */

static char *
private_dir (char **err)
{
  const char *bases[2] = { getenv ("XDG_RUNTIME_DIR"), "/tmp" };
  for (size_t i = 0; i < 2; i++)
    {
      const char *b = bases[i];
      struct stat st;
      /* Room for "/airlock-egress.XXXXXX/10.99.255.254-65535" in a
         sun_path. */
      if (!b || b[0] != '/' || strlen (b) > 60 || stat (b, &st) < 0
          || !S_ISDIR (st.st_mode) || access (b, W_OK | X_OK) < 0)
        continue;
      char *t;
      if (asprintf (&t, "%s/airlock-egress.XXXXXX", b) < 0)
        break;
      if (mkdtemp (t))
        return t; /* mkdtemp makes it 0700 */
      free (t);
    }
  if (asprintf (err, "cannot make a private directory for the listeners in "
                "$XDG_RUNTIME_DIR or /tmp: %s", strerror (errno)) < 0)
    *err = NULL;
  return NULL;
}

struct egress_flows *
egress_flows_new (const struct egress_policy *p, struct egress_audit *audit,
                  char **err)
{
  char *dir = private_dir (err);
  if (!dir)
    return NULL;
  struct egress_flows *f = calloc (1, sizeof *f);
  if (!f || pipe2 (f->stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
    {
      if (asprintf (err, "cannot set up the flows: %s", strerror (errno)) < 0)
        *err = NULL;
      rmdir (dir);
      free (dir);
      free (f);
      return NULL;
    }
  f->policy = p;
  f->audit = audit;
  f->dir = dir;
  f->peek_ms = EGRESS_PEEK_MS;
  const char *t = getenv ("AIRLOCK_EGRESS_PEEK_MS");
  if (t && atoi (t) > 0 && atoi (t) < EGRESS_PEEK_MS)
    f->peek_ms = atoi (t);
  pthread_mutex_init (&f->lock, NULL);
  pthread_cond_init (&f->idle, NULL);
  return f;
}

const char *
egress_flows_listen (struct egress_flows *f, uint32_t fake, uint16_t port,
                     const char *name, const struct egress_rule *rule,
                     char **err)
{
  for (size_t i = 0; i < f->n_listeners; i++)
    if (f->listeners[i].fake == fake && f->listeners[i].port == port)
      return f->listeners[i].path;
  if (f->n_listeners >= EGRESS_MAX_LISTENERS)
    {
      if (asprintf (err, "too many listeners (%d)", EGRESS_MAX_LISTENERS) < 0)
        *err = NULL;
      return NULL;
    }
  if (f->n_listeners == f->cap_listeners)
    {
      size_t cap = f->cap_listeners ? 2 * f->cap_listeners : 16;
      struct listener *l = realloc (f->listeners, cap * sizeof *l);
      if (!l)
        {
          *err = strdup ("out of memory");
          return NULL;
        }
      f->listeners = l;
      f->cap_listeners = cap;
    }

  struct in_addr a = { .s_addr = htonl (fake) };
  char text[INET_ADDRSTRLEN];
  inet_ntop (AF_INET, &a, text, sizeof text);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int n = snprintf (sa.sun_path, sizeof sa.sun_path, "%s/%s-%u", f->dir, text,
                    (unsigned) port);
  if (n < 0 || (size_t) n >= sizeof sa.sun_path)
    {
      if (asprintf (err, "listener path too long in %s", f->dir) < 0)
        *err = NULL;
      return NULL;
    }
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  /* slirp's connect to it is a blocking one, made from the thread that
     also accepts: a backlog far above the connections one round of the
     main loop can start keeps that connect from ever waiting. */
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0
      || listen (fd, 128) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      unlink (sa.sun_path);
      if (asprintf (err, "cannot listen on %s: %s", sa.sun_path,
                    strerror (e)) < 0)
        *err = NULL;
      return NULL;
    }
  struct listener *l = &f->listeners[f->n_listeners];
  l->fd = fd;
  l->fake = fake;
  l->port = port;
  l->path = strdup (sa.sun_path);
  l->name = strdup (name);
  l->rule = rule;
  if (!l->path || !l->name)
    {
      close (fd);
      unlink (sa.sun_path);
      free (l->path);
      free (l->name);
      *err = strdup ("out of memory");
      return NULL;
    }
  f->n_listeners++;
  return l->path;
}

size_t
egress_flows_pollfds (const struct egress_flows *f, struct pollfd *out,
                      size_t cap)
{
  size_t n = 0;
  for (size_t i = 0; i < f->n_listeners && n < cap; i++)
    out[n++] = (struct pollfd) { .fd = f->listeners[i].fd, .events = POLLIN };
  return n;
}

unsigned
egress_flows_active (struct egress_flows *f)
{
  pthread_mutex_lock (&f->lock);
  unsigned n = f->active;
  pthread_mutex_unlock (&f->lock);
  return n;
}

/* ---- one flow ---- */

static void
flow_audit (struct flow *fl, bool allow, const char *reason,
            const char *address, const char *sni, const char *host)
{
  struct audit_network net = {
    .name = fl->name, .address = address, .port = fl->port, .sni = sni,
    .host = host, .fake_address = fl->fake,
  };
  egress_audit (fl->flows->audit, allow, reason, fl->rule->text, &net);
}

/* poll one fd (and the stop pipe) until it has events or deadline.
   1 ready, 0 timed out, -1 stopping or error. */
static int
wait_fd (struct flow *fl, int fd, short events, int64_t deadline)
{
  for (;;)
    {
      int64_t left = deadline - monotonic_ms ();
      if (left <= 0)
        return 0;
      struct pollfd p[2] = {
        { .fd = fd, .events = events },
        { .fd = fl->flows->stop_pipe[0], .events = POLLIN },
      };
      int rc = poll (p, 2, (int) (left > 60000 ? 60000 : left));
      if (rc < 0 && errno == EINTR)
        continue;
      if (rc < 0 || p[1].revents)
        return -1;
      if (rc > 0)
        return 1;
    }
}

enum peeked
{
  PEEKED_TLS,     /* sni set */
  PEEKED_HTTP,    /* host set */
  PEEKED_OPAQUE,  /* neither, and the rule allows that */
  PEEKED_DENIED,  /* audited */
  PEEKED_GONE,    /* closed, stopping: nothing to audit */
};

/* Read the start of the flow into buf (*len) until it names a host. */
static enum peeked
peek (struct flow *fl, uint8_t *buf, size_t *len, char *seen, size_t cap)
{
  /* A rule naming a port other than 80/443 explicitly also lets through
     a protocol that is neither TLS nor HTTP (ssh, git://, ...). */
  bool opaque_ok = fl->rule->n_ports > 0 && fl->port != 80
                   && fl->port != 443;
  int64_t deadline = monotonic_ms () + (opaque_ok ? EGRESS_OPAQUE_MS
                                            : fl->flows->peek_ms);
  char why[REASON_MAX];
  *len = 0;
  for (;;)
    {
      int w = wait_fd (fl, fl->client, POLLIN, deadline);
      if (w < 0)
        return PEEKED_GONE;
      if (w == 0)
        {
          if (opaque_ok)
            return PEEKED_OPAQUE;
          snprintf (why, sizeof why, "no TLS SNI or HTTP Host within %d ms",
                    fl->flows->peek_ms);
          flow_audit (fl, false, why, NULL, NULL, NULL);
          return PEEKED_DENIED;
        }
      ssize_t n = recv (fl->client, buf + *len, EGRESS_PEEK_MAX - *len, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n <= 0)
        {
          /* Closed before it said where to: nothing was decided. */
          if (opaque_ok && *len > 0)
            return PEEKED_OPAQUE;
          return PEEKED_GONE;
        }
      *len += (size_t) n;
      bool tls = buf[0] == 0x16;
      enum peek_result r = tls ? tls_peek_sni (buf, *len, seen, cap)
                               : http_peek_host (buf, *len, seen, cap);
      if (r == PEEK_MORE && *len < EGRESS_PEEK_MAX)
        continue;
      if (r == PEEK_FOUND)
        {
          /* "allowed.test." names allowed.test too */
          size_t sl = strlen (seen);
          if (sl > 1 && seen[sl - 1] == '.')
            seen[sl - 1] = '\0';
          if (!strcmp (seen, fl->name))
            return tls ? PEEKED_TLS : PEEKED_HTTP;
          snprintf (why, sizeof why, "%s %s does not match %s",
                    tls ? "SNI" : "Host", seen, fl->name);
          flow_audit (fl, false, why, NULL, tls ? seen : NULL,
                      tls ? NULL : seen);
          return PEEKED_DENIED;
        }
      /* TLS without an SNI, HTTP without a Host: those protocols, and
         they name nothing, so they never pass as another protocol. */
      if (opaque_ok && r != PEEK_NONE)
        return PEEKED_OPAQUE;
      if (r == PEEK_NONE)
        snprintf (why, sizeof why, "%s names no host",
                  tls ? "the TLS ClientHello" : "the HTTP request");
      else if (r == PEEK_INVALID)
        snprintf (why, sizeof why, "neither TLS with an SNI nor HTTP with "
                  "a Host on port %u", (unsigned) fl->port);
      else
        snprintf (why, sizeof why, "no TLS SNI or HTTP Host in the first "
                  "%d bytes", EGRESS_PEEK_MAX);
      flow_audit (fl, false, why, NULL, NULL, NULL);
      return PEEKED_DENIED;
    }
}

/* The flow's real addresses: network.resolve first, else the system's
   resolver.  Returns how many (at most MAX_ADDRESSES). */
static size_t
resolve (struct flow *fl, struct sockaddr_storage *out, char *why,
         size_t whylen)
{
  const struct egress_policy *p = fl->flows->policy;
  for (size_t i = 0; i < p->n_resolve; i++)
    if (!strcmp (p->resolve[i].name, fl->name))
      {
        memset (&out[0], 0, sizeof out[0]);
        if (p->resolve[i].family == AF_INET)
          {
            struct sockaddr_in *s = (struct sockaddr_in *) &out[0];
            s->sin_family = AF_INET;
            memcpy (&s->sin_addr, p->resolve[i].addr, 4);
            s->sin_port = htons (fl->port);
          }
        else
          {
            struct sockaddr_in6 *s = (struct sockaddr_in6 *) &out[0];
            s->sin6_family = AF_INET6;
            memcpy (&s->sin6_addr, p->resolve[i].addr, 16);
            s->sin6_port = htons (fl->port);
          }
        return 1;
      }
  struct addrinfo hints = { .ai_family = AF_UNSPEC,
                            .ai_socktype = SOCK_STREAM };
  struct addrinfo *res = NULL;
  int rc = getaddrinfo (fl->name, NULL, &hints, &res);
  if (rc != 0)
    {
      snprintf (why, whylen, "cannot resolve %s: %s", fl->name,
                gai_strerror (rc));
      return 0;
    }
  size_t n = 0;
  for (struct addrinfo *a = res; a && n < MAX_ADDRESSES; a = a->ai_next)
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6)
        && a->ai_addrlen <= sizeof out[n])
      {
        memset (&out[n], 0, sizeof out[n]);
        memcpy (&out[n], a->ai_addr, a->ai_addrlen);
        if (a->ai_family == AF_INET)
          ((struct sockaddr_in *) &out[n])->sin_port = htons (fl->port);
        else
          ((struct sockaddr_in6 *) &out[n])->sin6_port = htons (fl->port);
        n++;
      }
  freeaddrinfo (res);
  if (!n)
    snprintf (why, whylen, "%s has no IPv4 or IPv6 address", fl->name);
  return n;
}

static void
address_bytes (const struct sockaddr_storage *ss, uint8_t addr[16],
               char *text, size_t cap)
{
  memset (addr, 0, 16);
  if (ss->ss_family == AF_INET)
    memcpy (addr, &((const struct sockaddr_in *) ss)->sin_addr, 4);
  else
    memcpy (addr, &((const struct sockaddr_in6 *) ss)->sin6_addr, 16);
  inet_ntop (ss->ss_family, addr, text, cap);
}

/* Connect, bounded by EGRESS_CONNECT_MS.  The fd, or -1 with errno. */
static int
connect_bounded (struct flow *fl, const struct sockaddr_storage *ss)
{
  socklen_t len = ss->ss_family == AF_INET ? sizeof (struct sockaddr_in)
                                           : sizeof (struct sockaddr_in6);
  int fd = socket (ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   0);
  if (fd < 0)
    return -1;
  if (connect (fd, (const struct sockaddr *) ss, len) == 0)
    return fd;
  if (errno != EINPROGRESS)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  int w = wait_fd (fl, fd, POLLOUT, monotonic_ms () + EGRESS_CONNECT_MS);
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  if (w == 1 && getsockopt (fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0
      && soerr == 0)
    return fd;
  close (fd);
  errno = w == 0 ? ETIMEDOUT : w < 0 ? ECANCELED : soerr ? soerr : EIO;
  return -1;
}

/* Write all of buf to fd (non-blocking), bounded by the stop pipe. */
static int
send_all (struct flow *fl, int fd, const uint8_t *buf, size_t len)
{
  size_t off = 0;
  while (off < len)
    {
      ssize_t n = send (fd, buf + off, len - off, MSG_NOSIGNAL);
      if (n > 0)
        {
          off += (size_t) n;
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        {
          if (wait_fd (fl, fd, POLLOUT, monotonic_ms () + EGRESS_CONNECT_MS) != 1)
            return -1;
          continue;
        }
      return -1;
    }
  return 0;
}

/* One direction of the relay. */
struct pipe_dir
{
  int from, to;
  uint8_t *buf;
  size_t len, off;
  bool eof;      /* from has ended */
  bool shut;     /* to has been shut for writing */
};

/* Move what can be moved without waiting.  -1 on an error that ends the
   relay. */
static int
pump (struct pipe_dir *d, short from_ev, short to_ev)
{
  if (!d->eof && d->len == 0 && (from_ev & (POLLIN | POLLHUP | POLLERR)))
    {
      ssize_t n = recv (d->from, d->buf, RELAY_BUF, 0);
      if (n > 0)
        {
          d->len = (size_t) n;
          d->off = 0;
        }
      else if (n == 0)
        d->eof = true;
      else if (errno != EINTR && errno != EAGAIN)
        return -1;
    }
  if (d->len > d->off && (to_ev & (POLLOUT | POLLERR | POLLHUP)))
    {
      ssize_t n = send (d->to, d->buf + d->off, d->len - d->off,
                        MSG_NOSIGNAL);
      if (n > 0)
        {
          d->off += (size_t) n;
          if (d->off == d->len)
            d->len = d->off = 0;
        }
      else if (n < 0 && errno != EINTR && errno != EAGAIN)
        return -1;
    }
  if (d->eof && d->len == 0 && !d->shut)
    {
      shutdown (d->to, SHUT_WR);
      d->shut = true;
    }
  return 0;
}

static void
relay (struct flow *fl)
{
  uint8_t *b1 = malloc (RELAY_BUF), *b2 = malloc (RELAY_BUF);
  struct pipe_dir up = { .from = fl->client, .to = fl->upstream, .buf = b1 };
  struct pipe_dir down = { .from = fl->upstream, .to = fl->client, .buf = b2 };
  /* Each round either moves bytes or sleeps in poll: both directions
     wait for readiness, never spin. */
  while (b1 && b2 && !(up.shut && down.shut))
    {
      struct pollfd p[3] = {
        { .fd = fl->client }, { .fd = fl->upstream },
        { .fd = fl->flows->stop_pipe[0], .events = POLLIN },
      };
      if (!up.eof && up.len == 0)
        p[0].events |= POLLIN;
      if (down.len > down.off)
        p[0].events |= POLLOUT;
      if (!down.eof && down.len == 0)
        p[1].events |= POLLIN;
      if (up.len > up.off)
        p[1].events |= POLLOUT;
      /* Both sides idle with nothing asked: only when everything is
         done, which the loop condition catches. */
      if (!p[0].events && !p[1].events)
        break;
      /* poll reports HUP and ERR even for an fd asked for nothing: such an
         fd stays out of this round, or a peer that is gone would wake
         every poll at once while the other side is idle. */
      for (int i = 0; i < 2; i++)
        if (!p[i].events)
          p[i].fd = -1;
      int rc = poll (p, 3, -1);
      if (rc < 0 && errno == EINTR)
        continue;
      if (rc < 0 || p[2].revents)
        break;
      /* Only a direction that is waiting on an fd acts on what it
         reports. */
      short c_in = (p[0].events & POLLIN) ? p[0].revents : 0;
      short c_out = (p[0].events & POLLOUT) ? p[0].revents : 0;
      short u_in = (p[1].events & POLLIN) ? p[1].revents : 0;
      short u_out = (p[1].events & POLLOUT) ? p[1].revents : 0;
      if (pump (&up, c_in, u_out) < 0 || pump (&down, u_in, c_out) < 0)
        break;
    }
  free (b1);
  free (b2);
}

static void
flow_run (struct flow *fl)
{
  uint8_t *buf = malloc (EGRESS_PEEK_MAX);
  if (!buf)
    return;
  char seen[EGRESS_MAX_NAME + 1] = "";
  size_t len = 0;
  enum peeked k = peek (fl, buf, &len, seen, sizeof seen);
  if (k == PEEKED_DENIED || k == PEEKED_GONE)
    {
      free (buf);
      return;
    }

  char why[REASON_MAX] = "";
  struct sockaddr_storage addrs[MAX_ADDRESSES];
  size_t n = resolve (fl, addrs, why, sizeof why);
  char text[INET6_ADDRSTRLEN] = "";
  bool any_allowed = false;
  int last_errno = 0;
  for (size_t i = 0; i < n && fl->upstream < 0; i++)
    {
      uint8_t a[16];
      char buf2[REASON_MAX];
      const char *no = NULL;
      address_bytes (&addrs[i], a, text, sizeof text);
      if (!egress_address_allowed (fl->flows->policy, addrs[i].ss_family, a,
                                   buf2, sizeof buf2, &no))
        {
          if (!any_allowed && !why[0])
            snprintf (why, sizeof why, "%s", no ? no : "address not allowed");
          continue;
        }
      any_allowed = true;
      fl->upstream = connect_bounded (fl, &addrs[i]);
      if (fl->upstream < 0)
        {
          last_errno = errno;
          if (last_errno == ECANCELED)
            break;
        }
    }
  const char *sni = k == PEEKED_TLS ? seen : NULL;
  const char *host = k == PEEKED_HTTP ? seen : NULL;
  if (fl->upstream < 0)
    {
      if (last_errno == ECANCELED)
        ; /* stopping */
      else if (any_allowed)
        {
          snprintf (why, sizeof why, "connect failed: %s",
                    strerror (last_errno));
          flow_audit (fl, false, why, text, sni, host);
        }
      else
        flow_audit (fl, false, why[0] ? why : "no address", n ? text : NULL,
                    sni, host);
      free (buf);
      return;
    }

  if (k == PEEKED_OPAQUE)
    snprintf (why, sizeof why, "neither TLS nor HTTP on port %u, which %s "
              "names: bound to %s by its fake address only",
              (unsigned) fl->port, fl->rule->text, fl->name);
  else
    snprintf (why, sizeof why, "%s %s matches", sni ? "SNI" : "Host", seen);
  struct audit_network net = {
    .name = fl->name, .address = text, .port = fl->port, .sni = sni,
    .host = host, .fake_address = fl->fake,
  };
  /* A flow that cannot be logged does not go on. */
  if (egress_audit (fl->flows->audit, true, why, fl->rule->text, &net) < 0
      || send_all (fl, fl->upstream, buf, len) < 0)
    {
      free (buf);
      return;
    }
  free (buf);
  relay (fl);
}

static void *
flow_thread (void *arg)
{
  struct flow *fl = arg;
  struct egress_flows *f = fl->flows;
  flow_run (fl);
  close (fl->client);
  if (fl->upstream >= 0)
    close (fl->upstream);
  free (fl);
  pthread_mutex_lock (&f->lock);
  if (--f->active == 0)
    pthread_cond_broadcast (&f->idle);
  pthread_mutex_unlock (&f->lock);
  return NULL;
}

static void
start_flow (struct egress_flows *f, const struct listener *l, int fd)
{
  struct flow *fl = calloc (1, sizeof *fl);
  bool full;
  pthread_mutex_lock (&f->lock);
  full = f->active >= EGRESS_MAX_FLOWS;
  if (!full && fl)
    f->active++;
  pthread_mutex_unlock (&f->lock);
  if (!fl || full)
    {
      struct in_addr a = { .s_addr = htonl (l->fake) };
      char fake[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &a, fake, sizeof fake);
      struct audit_network net = { .name = l->name, .port = l->port,
                                   .fake_address = fake };
      char why[64];
      snprintf (why, sizeof why, "too many connections (%d at once)",
                EGRESS_MAX_FLOWS);
      egress_audit (f->audit, false, fl ? why : "out of memory",
                    l->rule->text, &net);
      close (fd);
      free (fl);
      return;
    }
  fl->flows = f;
  fl->client = fd;
  fl->upstream = -1;
  snprintf (fl->name, sizeof fl->name, "%s", l->name);
  struct in_addr a = { .s_addr = htonl (l->fake) };
  inet_ntop (AF_INET, &a, fl->fake, sizeof fl->fake);
  fl->port = l->port;
  fl->rule = l->rule;

  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  /* Buffers are on the heap; a small stack keeps 256 threads cheap. */
  pthread_attr_setstacksize (&attr, 256 * 1024);
  int rc = pthread_create (&t, &attr, flow_thread, fl);
  pthread_attr_destroy (&attr);
  if (rc != 0)
    {
      struct audit_network net = { .name = l->name, .port = l->port,
                                   .fake_address = fl->fake };
      egress_audit (f->audit, false, "cannot start a thread for the flow",
                    l->rule->text, &net);
      close (fd);
      free (fl);
      pthread_mutex_lock (&f->lock);
      f->active--;
      pthread_mutex_unlock (&f->lock);
    }
}

void
egress_flows_accept (struct egress_flows *f, const struct pollfd *fds,
                     size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      if (!(fds[i].revents & POLLIN))
        continue;
      const struct listener *l = NULL;
      for (size_t j = 0; j < f->n_listeners && !l; j++)
        if (f->listeners[j].fd == fds[i].fd)
          l = &f->listeners[j];
      if (!l)
        continue;
      /* All that wait (the backlog bounds the loop). */
      for (int k = 0; k < 256; k++)
        {
          int c = accept4 (l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0)
            break;
          start_flow (f, l, c);
        }
    }
}

int
egress_flows_stop (struct egress_flows *f)
{
  if (!f)
    return 0;
  /* Readable for good: every flow's poll wakes and ends. */
  if (write (f->stop_pipe[1], "x", 1) < 0)
    {
      /* (a full pipe is readable too) */
    }
  struct timespec until;
  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += 3;
  pthread_mutex_lock (&f->lock);
  while (f->active > 0)
    if (pthread_cond_timedwait (&f->idle, &f->lock, &until) == ETIMEDOUT)
      break;
  unsigned left = f->active;
  pthread_mutex_unlock (&f->lock);

  for (size_t i = 0; i < f->n_listeners; i++)
    {
      close (f->listeners[i].fd);
      unlink (f->listeners[i].path);
      free (f->listeners[i].path);
      free (f->listeners[i].name);
    }
  free (f->listeners);
  f->listeners = NULL;
  f->n_listeners = 0;
  rmdir (f->dir);
  if (left)
    return -1; /* a thread may still read f */
  close (f->stop_pipe[0]);
  close (f->stop_pipe[1]);
  pthread_mutex_destroy (&f->lock);
  pthread_cond_destroy (&f->idle);
  free (f->dir);
  free (f);
  return 0;
}

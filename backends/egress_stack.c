/* SPDX-License-Identifier: MIT */
/* libslirp glue, the frame prefilter, the DNS answers and the fake
 * addresses of airlock-egress.  See egress_stack.h.
 *
 * Why the prefilter: slirp in restricted mode refuses (RST) a TCP
 * connection to anything but a registered forward, but it would answer
 * DNS from the host's resolver and pass UDP it is asked to; so only ARP
 * and TCP ever reach it, and DNS is answered here. */
#define _GNU_SOURCE
#include "egress_stack.h"
#include "egress_network.h"
#include "egress_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <slirp/libslirp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX 65536
#define ETH_HLEN 14
#define NAME_PORTS 32 /* ports of one name, over every rule naming it */
#define DNS_TTL 60
#define MAX_TIMERS 64

struct timer
{
  SlirpTimerCb cb;
  void *cb_opaque;
  int64_t expire_ms; /* -1: not armed */
  bool used;
};

struct fake_name
{
  char name[EGRESS_MAX_NAME + 1];
  uint16_t ports[NAME_PORTS];
  const struct egress_rule *rules[NAME_PORTS];
  size_t n_ports;
};

struct egress_stack
{
  int tap;
  Slirp *slirp;
  const struct egress_policy *policy;
  struct egress_audit *audit;
  struct egress_flows *flows;
  struct fake_name *names; /* names[i] has EGRESS_FAKE_FIRST + i */
  size_t n_names;
  struct timer timers[MAX_TIMERS];
  struct egress_pollset *ps; /* during prepare/dispatch */
  uint8_t *frame;
  bool tap_gone;
};

int
egress_pollset_add (struct egress_pollset *ps, int fd, short events)
{
  if (ps->n == ps->cap)
    {
      size_t cap = ps->cap ? 2 * ps->cap : 64;
      struct pollfd *f = realloc (ps->fds, cap * sizeof *f);
      if (!f)
        return -1;
      ps->fds = f;
      ps->cap = cap;
    }
  ps->fds[ps->n] = (struct pollfd) { .fd = fd, .events = events };
  return (int) ps->n++;
}

static int64_t
mono_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
addr_text (uint32_t host_order, char out[INET_ADDRSTRLEN])
{
  struct in_addr a = { .s_addr = htonl (host_order) };
  inet_ntop (AF_INET, &a, out, INET_ADDRSTRLEN);
}

static void
deny (struct egress_stack *s, const char *reason, const char *name,
      uint32_t dst, unsigned port)
{
  char fake[INET_ADDRSTRLEN];
  addr_text (dst, fake);
  struct audit_network net = { .name = name, .port = port,
                               .fake_address = dst ? fake : NULL };
  egress_audit (s->audit, false, reason, NULL, &net);
}

/* ---- slirp's callbacks ---- */

static ssize_t
cb_send_packet (const void *buf, size_t len, void *opaque)
{
  struct egress_stack *s = opaque;
  /* A full tap queue drops the frame; TCP retransmits. */
  ssize_t n = write (s->tap, buf, len);
  return n < 0 && errno != EAGAIN ? -1 : (ssize_t) len;
}

static void
cb_guest_error (const char *msg, void *opaque)
{
  (void) msg;
  (void) opaque;
}

static int64_t
cb_clock_get_ns (void *opaque)
{
  (void) opaque;
  return mono_ns ();
}

static void *
cb_timer_new (SlirpTimerCb cb, void *cb_opaque, void *opaque)
{
  struct egress_stack *s = opaque;
  for (size_t i = 0; i < MAX_TIMERS; i++)
    if (!s->timers[i].used)
      {
        s->timers[i] = (struct timer) { .cb = cb, .cb_opaque = cb_opaque,
                                        .expire_ms = -1, .used = true };
        return &s->timers[i];
      }
  fprintf (stderr, "airlock-egress: out of timers\n");
  abort ();
}

static void
cb_timer_free (void *timer, void *opaque)
{
  (void) opaque;
  ((struct timer *) timer)->used = false;
}

static void
cb_timer_mod (void *timer, int64_t expire_time, void *opaque)
{
  (void) opaque;
  ((struct timer *) timer)->expire_ms = expire_time;
}

static void
cb_poll_fd (int fd, void *opaque)
{
  (void) fd;
  (void) opaque;
}

static void
cb_notify (void *opaque)
{
  /* The loop asks slirp for its fds every round: nothing to wake. */
  (void) opaque;
}

static const SlirpCb callbacks = {
  .send_packet = cb_send_packet,
  .guest_error = cb_guest_error,
  .clock_get_ns = cb_clock_get_ns,
  .timer_new = cb_timer_new,
  .timer_free = cb_timer_free,
  .timer_mod = cb_timer_mod,
  .register_poll_fd = cb_poll_fd,
  .unregister_poll_fd = cb_poll_fd,
  .notify = cb_notify,
};

static int
cb_add_poll (int fd, int events, void *opaque)
{
  struct egress_stack *s = opaque;
  short ev = 0;
  if (events & SLIRP_POLL_IN)
    ev |= POLLIN;
  if (events & SLIRP_POLL_OUT)
    ev |= POLLOUT;
  if (events & SLIRP_POLL_PRI)
    ev |= POLLPRI;
  return egress_pollset_add (s->ps, fd, ev);
}

static int
cb_get_revents (int idx, void *opaque)
{
  struct egress_stack *s = opaque;
  if (idx < 0 || (size_t) idx >= s->ps->n)
    return 0;
  short r = s->ps->fds[idx].revents;
  int out = 0;
  if (r & POLLIN)
    out |= SLIRP_POLL_IN;
  if (r & POLLOUT)
    out |= SLIRP_POLL_OUT;
  if (r & POLLPRI)
    out |= SLIRP_POLL_PRI;
  if (r & POLLERR)
    out |= SLIRP_POLL_ERR;
  if (r & POLLHUP)
    out |= SLIRP_POLL_HUP;
  return out;
}

/* ---- setup ---- */

struct egress_stack *
egress_stack_new (int tap, const struct egress_policy *p,
                  struct egress_audit *audit, struct egress_flows *flows,
                  char **err)
{
  struct egress_stack *s = calloc (1, sizeof *s);
  if (s)
    {
      s->names = calloc (EGRESS_MAX_NAMES, sizeof *s->names);
      s->frame = malloc (FRAME_MAX);
    }
  if (!s || !s->names || !s->frame)
    {
      if (s)
        {
          free (s->names);
          free (s->frame);
          free (s);
        }
      *err = strdup ("out of memory");
      return NULL;
    }
  int fl = fcntl (tap, F_GETFL);
  if (fl < 0 || fcntl (tap, F_SETFL, fl | O_NONBLOCK) < 0)
    {
      if (asprintf (err, "fd 3 (the tap): %s", strerror (errno)) < 0)
        *err = NULL;
      egress_stack_free (s);
      return NULL;
    }
  s->tap = tap;
  s->policy = p;
  s->audit = audit;
  s->flows = flows;

  SlirpConfig cfg = {
    .version = SLIRP_CONFIG_VERSION_MAX < 4 ? SLIRP_CONFIG_VERSION_MAX : 4,
    /* slirp opens no connection of its own: only our forwards. */
    .restricted = 1,
    .in_enabled = true,
    .vnetwork = { htonl (EGRESS_NETWORK) },
    .vnetmask = { htonl (EGRESS_NETMASK) },
    .vhost = { htonl (EGRESS_GATEWAY) },
    .in6_enabled = false,
    .vdhcp_start = { htonl (EGRESS_SANDBOX) },
    .vnameserver = { htonl (EGRESS_RESOLVER) },
    .if_mtu = EGRESS_MTU,
    .if_mru = EGRESS_MTU,
    .disable_host_loopback = true,
#if SLIRP_CONFIG_VERSION_MAX >= 3
    .disable_dns = true,
#endif
#if SLIRP_CONFIG_VERSION_MAX >= 4
    .disable_dhcp = true,
#endif
  };
  s->slirp = slirp_new (&cfg, &callbacks, s);
  if (!s->slirp)
    {
      *err = strdup ("libslirp could not start");
      egress_stack_free (s);
      return NULL;
    }
  return s;
}

bool
egress_stack_tap_gone (const struct egress_stack *s)
{
  return s->tap_gone;
}

void
egress_stack_free (struct egress_stack *s)
{
  if (!s)
    return;
  if (s->slirp)
    slirp_cleanup (s->slirp);
  free (s->names);
  free (s->frame);
  free (s);
}

/* ---- fake addresses ---- */

static const struct fake_name *
fake_lookup (const struct egress_stack *s, uint32_t addr)
{
  if (addr < EGRESS_FAKE_FIRST || addr - EGRESS_FAKE_FIRST >= s->n_names)
    return NULL;
  return &s->names[addr - EGRESS_FAKE_FIRST];
}

static bool
fake_has_port (const struct fake_name *n, uint16_t port)
{
  for (size_t i = 0; i < n->n_ports; i++)
    if (n->ports[i] == port)
      return true;
  return false;
}

/* The ports every rule naming it allows, each listened on and forwarded
   by slirp. */
static void
open_ports (struct egress_stack *s, struct fake_name *n, uint32_t fake)
{
  static const uint16_t web[] = { 80, 443 };
  for (size_t r = 0; r < s->policy->n_allow; r++)
    {
      const struct egress_rule *rule = &s->policy->allow[r];
      /* The rule alone, asked through the policy's own matcher. */
      struct egress_policy one = *s->policy;
      one.allow = (struct egress_rule *) rule;
      one.n_allow = 1;
      if (!egress_match_name (&one, n->name))
        continue;
      const uint16_t *ports = rule->n_ports ? rule->ports : web;
      size_t np = rule->n_ports ? rule->n_ports : 2;
      for (size_t i = 0; i < np && n->n_ports < NAME_PORTS; i++)
        {
          if (fake_has_port (n, ports[i]))
            continue;
          char *err = NULL;
          const char *path = egress_flows_listen (s->flows, fake, ports[i],
                                                  n->name, rule, &err);
          struct in_addr a = { .s_addr = htonl (fake) };
          if (!path || slirp_add_unix (s->slirp, path, &a, ports[i]) < 0)
            {
              fprintf (stderr, "airlock-egress: %s:%u: %s\n", n->name,
                       (unsigned) ports[i], err ? err : "slirp_add_unix");
              free (err);
              continue;
            }
          n->ports[n->n_ports] = ports[i];
          n->rules[n->n_ports++] = rule;
        }
    }
}

/* The fake address of an allowed name, given on first use; 0 when the
   table is full. */
static uint32_t
fake_for (struct egress_stack *s, const char *name,
          const struct egress_rule *rule)
{
  for (size_t i = 0; i < s->n_names; i++)
    if (!strcmp (s->names[i].name, name))
      return EGRESS_FAKE_FIRST + (uint32_t) i;
  if (s->n_names >= EGRESS_MAX_NAMES
      || EGRESS_FAKE_FIRST + s->n_names > EGRESS_FAKE_LAST)
    return 0;
  struct fake_name *n = &s->names[s->n_names];
  uint32_t fake = EGRESS_FAKE_FIRST + (uint32_t) s->n_names++;
  snprintf (n->name, sizeof n->name, "%s", name);
  open_ports (s, n, fake);

  char text[INET_ADDRSTRLEN], why[EGRESS_MAX_NAME + 64];
  addr_text (fake, text);
  snprintf (why, sizeof why, "%s is %s in the sandbox", name, text);
  struct audit_network net = { .name = name, .fake_address = text };
  egress_audit (s->audit, true, why, rule->text, &net);
  return fake;
}

/* ---- frames ---- */

static uint16_t
get16 (const uint8_t *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t
get32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
         | (uint32_t) p[2] << 8 | p[3];
}

static void
put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) (v >> 8);
  p[1] = (uint8_t) v;
}

static uint16_t
ip_checksum (const uint8_t *h, size_t len)
{
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += get16 (h + i);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t) ~sum;
}

/* Answer a DNS query (eth+ip+udp at f; the DNS message at dns, dlen). */
static void
answer_dns (struct egress_stack *s, const uint8_t *f, size_t ihl,
            const uint8_t *dns, size_t dlen)
{
  struct dns_query q;
  if (dns_parse_query (dns, dlen, &q) < 0)
    return; /* not a query we answer: dropped */

  uint8_t out[ETH_HLEN + 20 + 8 + EGRESS_DNS_MAX + 64];
  uint8_t *reply = out + ETH_HLEN + 20 + 8;
  size_t cap = sizeof out - (ETH_HLEN + 20 + 8);
  int rlen;
  const struct egress_rule *rule =
    q.name[0] ? egress_match_name (s->policy, q.name) : NULL;
  if (!rule)
    {
      char why[EGRESS_MAX_NAME + 64];
      snprintf (why, sizeof why, "no network.allow rule names %s",
                q.name[0] ? q.name : ".");
      deny (s, why, q.name, 0, 0);
      rlen = dns_build_reply (dns, &q, 3, NULL, 0, reply, cap);
    }
  else if (q.qclass != 1)
    rlen = dns_build_reply (dns, &q, 4, NULL, 0, reply, cap);
  else if (q.qtype == 1)
    {
      uint32_t fake = fake_for (s, q.name, rule);
      if (!fake)
        {
          deny (s, "too many names in use (" "fake addresses exhausted)",
                q.name, 0, 0);
          rlen = dns_build_reply (dns, &q, 5, NULL, 0, reply, cap);
        }
      else
        {
          uint8_t a[4] = { (uint8_t) (fake >> 24), (uint8_t) (fake >> 16),
                           (uint8_t) (fake >> 8), (uint8_t) fake };
          rlen = dns_build_reply (dns, &q, 0, a, DNS_TTL, reply, cap);
        }
    }
  else
    rlen = dns_build_reply (dns, &q, 0, NULL, 0, reply, cap); /* NODATA */
  if (rlen < 0)
    return;

  const uint8_t *ip = f + ETH_HLEN;
  const uint8_t *udp = ip + ihl;
  memcpy (out, f + 6, 6);     /* to the sandbox's MAC */
  memcpy (out + 6, f, 6);     /* from the gateway's */
  put16 (out + 12, 0x0800);
  uint8_t *oip = out + ETH_HLEN;
  memset (oip, 0, 20);
  oip[0] = 0x45;
  put16 (oip + 2, (uint16_t) (20 + 8 + rlen));
  put16 (oip + 6, 0x4000); /* DF */
  oip[8] = 64;
  oip[9] = 17;
  memcpy (oip + 12, ip + 16, 4);
  memcpy (oip + 16, ip + 12, 4);
  put16 (oip + 10, ip_checksum (oip, 20));
  uint8_t *oudp = oip + 20;
  memcpy (oudp, udp + 2, 2);
  memcpy (oudp + 2, udp, 2);
  put16 (oudp + 4, (uint16_t) (8 + rlen));
  put16 (oudp + 6, 0); /* no UDP checksum: allowed over IPv4 */
  if (write (s->tap, out, ETH_HLEN + 20 + 8 + (size_t) rlen) < 0)
    {
      /* dropped; the resolver retries */
    }
}

static void
ipv4 (struct egress_stack *s, uint8_t *f, size_t len)
{
  const uint8_t *ip = f + ETH_HLEN;
  size_t avail = len - ETH_HLEN;
  if (avail < 20 || (ip[0] >> 4) != 4)
    return;
  size_t ihl = (size_t) (ip[0] & 15) * 4;
  size_t total = get16 (ip + 2);
  if (ihl < 20 || total < ihl || total > avail)
    return;
  uint32_t dst = get32 (ip + 16);
  char dtext[INET_ADDRSTRLEN], why[EGRESS_MAX_NAME + 128];
  addr_text (dst, dtext);
  unsigned proto = ip[9];
  if (get16 (ip + 6) & 0x3fff)
    {
      /* A fragment: nothing the sandbox needs, and the checks below need
         whole headers. */
      snprintf (why, sizeof why, "fragmented IPv4 to %s is not accepted",
                dtext);
      deny (s, why, NULL, dst, 0);
      return;
    }
  const uint8_t *l4 = ip + ihl;
  size_t l4len = total - ihl;
  if (proto == 17 && l4len >= 8)
    {
      unsigned dport = get16 (l4 + 2);
      size_t ulen = get16 (l4 + 4);
      if (dst == EGRESS_RESOLVER && dport == 53)
        {
          if (ulen >= 8 && ulen <= l4len)
            answer_dns (s, f, ihl, l4 + 8, ulen - 8);
          return;
        }
      snprintf (why, sizeof why, "UDP to %s:%u is not DNS to the resolver",
                dtext, dport);
      deny (s, why, NULL, dst, dport);
      return;
    }
  if (proto == 6 && l4len >= 20)
    {
      unsigned dport = get16 (l4 + 2);
      uint8_t flags = l4[13];
      if ((flags & 0x12) == 0x02)
        {
          /* A new connection: slirp answers RST unless it is forwarded;
             the why goes to the audit log here. */
          const struct fake_name *n = fake_lookup (s, dst);
          if (!n)
            {
              snprintf (why, sizeof why, "TCP to %s:%u: not the address of "
                        "an allowed name", dtext, dport);
              deny (s, why, NULL, dst, dport);
            }
          else if (!fake_has_port (n, (uint16_t) dport))
            {
              snprintf (why, sizeof why, "port %u is not allowed for %s",
                        dport, n->name);
              deny (s, why, n->name, dst, dport);
            }
        }
      slirp_input (s->slirp, f, (int) (ETH_HLEN + total));
      return;
    }
  if (proto == 1)
    snprintf (why, sizeof why, "ICMP to %s is not allowed", dtext);
  else
    snprintf (why, sizeof why, "IP protocol %u to %s is not allowed", proto,
              dtext);
  deny (s, why, NULL, dst, 0);
}

static void
frame (struct egress_stack *s, uint8_t *f, size_t len)
{
  if (len < ETH_HLEN)
    return;
  switch (get16 (f + 12))
    {
    case 0x0806: /* ARP: slirp answers for the gateway and resolver */
      slirp_input (s->slirp, f, (int) len);
      break;
    case 0x0800:
      ipv4 (s, f, len);
      break;
    default:
      /* IPv6 (router solicitations ...) and the rest: quietly dropped. */
      break;
    }
}

/* ---- the loop's two halves ---- */

void
egress_stack_prepare (struct egress_stack *s, struct egress_pollset *ps,
                      int *timeout_ms)
{
  s->ps = ps;
  egress_pollset_add (ps, s->tap, POLLIN);
  int64_t now = mono_ns () / 1000000;
  for (size_t i = 0; i < MAX_TIMERS; i++)
    if (s->timers[i].used && s->timers[i].expire_ms >= 0)
      {
        int64_t left = s->timers[i].expire_ms - now;
        if (left < 0)
          left = 0;
        if (*timeout_ms < 0 || left < *timeout_ms)
          *timeout_ms = (int) left;
      }
  uint32_t t = *timeout_ms < 0 ? UINT32_MAX : (uint32_t) *timeout_ms;
  slirp_pollfds_fill (s->slirp, &t, cb_add_poll, s);
  if (t != UINT32_MAX)
    *timeout_ms = (int) (t > 60000 ? 60000 : t);
}

void
egress_stack_dispatch (struct egress_stack *s, struct egress_pollset *ps,
                       int rc)
{
  s->ps = ps;
  slirp_pollfds_poll (s->slirp, rc < 0, cb_get_revents, s);
  /* The tap is always the first fd the stack added (found by value: the
     caller may have added its own before). */
  for (size_t i = 0; i < ps->n; i++)
    if (ps->fds[i].fd == s->tap)
      {
        /* An error on the tap would be reported again at once by every
           poll: the sandbox's network is gone, and so is our work. */
        if (ps->fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))
          s->tap_gone = true;
        if (ps->fds[i].revents & POLLIN)
          for (int k = 0; k < EGRESS_FRAMES_PER_ROUND; k++)
            {
              ssize_t n = read (s->tap, s->frame, FRAME_MAX);
              if (n < 0 && errno != EAGAIN && errno != EINTR)
                s->tap_gone = true;
              if (n <= 0)
                break;
              frame (s, s->frame, (size_t) n);
            }
        break;
      }
  int64_t now = mono_ns () / 1000000;
  for (size_t i = 0; i < MAX_TIMERS; i++)
    if (s->timers[i].used && s->timers[i].expire_ms >= 0
        && s->timers[i].expire_ms <= now)
      {
        s->timers[i].expire_ms = -1;
        s->timers[i].cb (s->timers[i].cb_opaque);
      }
  s->ps = NULL;
}

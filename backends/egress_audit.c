/* SPDX-License-Identifier: MIT */
/* The rate-limited audit writer of airlock-egress.  See egress_audit.h.
 *
 * The limiter is a fixed table of EGRESS_AUDIT_KEYS slots, each a key, the
 * start of its window, the lines written in it and the lines held back
 * since the last written one.  A new key takes a free slot or the least
 * recently used one (its held-back count is then lost: bounded memory
 * wins over a perfect count). */
#define _GNU_SOURCE
#include "egress_audit.h"
#include "monotonic_ms.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX 128

struct slot
{
  char key[KEY_MAX];  /* "allow|name" / "deny|address"; "" = free */
  int64_t window_ms;  /* when this window started */
  int64_t used_ms;    /* last use, for eviction */
  unsigned written;   /* lines written in this window */
  unsigned long held; /* lines held back since the last written one */
};

struct egress_audit
{
  struct audit_log *log;
  char *session, *backend;
  pthread_mutex_t lock; /* the table */
  struct slot slots[EGRESS_AUDIT_KEYS];
};

struct egress_audit *
egress_audit_open (const char *session, const char *backend, char **err)
{
  char *dir = audit_log_state_dir (getenv ("XDG_STATE_HOME"), getenv ("HOME"),
                                   err);
  if (!dir)
    return NULL;
  struct audit_log *log = audit_log_open (dir, 0, AUDIT_LOG_DEFAULT_KEEP, err);
  free (dir);
  if (!log)
    return NULL;
  struct egress_audit *a = calloc (1, sizeof *a);
  if (!a)
    {
      audit_log_close (log);
      return NULL;
    }
  a->log = log;
  /* "" is `airlock run`: no session, as the gate logs it. */
  a->session = session && *session ? strdup (session) : NULL;
  a->backend = backend ? strdup (backend) : NULL;
  pthread_mutex_init (&a->lock, NULL);
  return a;
}

/* May a line of this key be written now?  *held: how many were held back
   before it. */
static bool
admit (struct egress_audit *a, const char *key, unsigned long *held)
{
  int64_t now = monotonic_ms ();
  struct slot *s = NULL, *lru = NULL;
  for (size_t i = 0; i < EGRESS_AUDIT_KEYS && !s; i++)
    if (a->slots[i].key[0] && !strcmp (a->slots[i].key, key))
      s = &a->slots[i];
  /* A new key: a free slot, else the least recently used one. */
  for (size_t i = 0; i < EGRESS_AUDIT_KEYS && !s; i++)
    {
      struct slot *c = &a->slots[i];
      if (!c->key[0])
        {
          lru = c;
          break;
        }
      if (!lru || c->used_ms < lru->used_ms)
        lru = c;
    }
  if (!s)
    {
      s = lru;
      memset (s, 0, sizeof *s);
      snprintf (s->key, sizeof s->key, "%s", key);
      s->window_ms = now;
    }
  s->used_ms = now;
  if (now - s->window_ms >= EGRESS_AUDIT_WINDOW_MS)
    {
      s->window_ms = now;
      s->written = 0;
    }
  if (s->written >= EGRESS_AUDIT_BURST)
    {
      s->held++;
      return false;
    }
  s->written++;
  *held = s->held;
  s->held = 0;
  return true;
}

int
egress_audit (struct egress_audit *a, bool allow, const char *reason,
              const char *rule, const struct audit_network *net)
{
  const char *decision = allow ? "allow" : "deny";
  const char *what = NULL;
  if (net)
    what = net->name ? net->name
           : net->fake_address ? net->fake_address : net->address;
  char key[KEY_MAX];
  snprintf (key, sizeof key, "%s|%s", decision, what ? what : "");

  unsigned long held = 0;
  pthread_mutex_lock (&a->lock);
  bool write = admit (a, key, &held);
  pthread_mutex_unlock (&a->lock);
  if (!write)
    return 0;

  const char *rules[1] = { rule };
  struct audit_entry e = {
    .session = a->session, .backend = a->backend, .decision = decision,
    .decided_by = "network-allowlist", .reason = reason,
    .rules = rule ? rules : NULL, .n_rules = rule ? 1 : 0,
    .network = net, .suppressed = held,
  };
  char *err = NULL;
  if (audit_log_write (a->log, &e, &err) < 0)
    {
      fprintf (stderr, "airlock-egress: %s\n", err ? err : "audit log");
      free (err);
      return -1;
    }
  return 0;
}

void
egress_audit_close (struct egress_audit *a)
{
  if (!a)
    return;
  audit_log_close (a->log);
  pthread_mutex_destroy (&a->lock);
  free (a->session);
  free (a->backend);
  free (a);
}

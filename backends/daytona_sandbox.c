/* SPDX-License-Identifier: MIT */
/* A Daytona sandbox's life through the REST API (see daytona_sandbox.h):
 * found again by airlock's labels and name, or created (from an image as
 * buildInfo "FROM image", or from a snapshot); started or restored; waited
 * for as the SDKs do; stopped or deleted at the end. */
#define _GNU_SOURCE
#include "daytona_sandbox.h"
#include "monotonic_ms.h"
#include "xprintf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CALL_MS 60000        /* one call's own bound, inside the deadline */
#define CREATE_TRIES 4       /* creates after an ambiguous failure */
#define CLEANUP_S 60         /* deleting what a failed open created */

static void
say (const struct daytona_sandbox_options *o, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
say (const struct daytona_sandbox_options *o, const char *fmt, ...)
{
  if (!o || !o->progress)
    return;
  va_list ap;
  va_start (ap, fmt);
  char *line = NULL;
  if (vasprintf (&line, fmt, ap) >= 0)
    {
      o->progress (o->progress_ctx, line);
      free (line);
    }
  va_end (ap);
}

static uint64_t
call_deadline (uint64_t deadline)
{
  uint64_t cap = (uint64_t) monotonic_ms () + CALL_MS;
  return deadline && deadline < cap ? deadline : cap;
}

static void
pause_ms (unsigned ms)
{
  struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
  nanosleep (&ts, NULL);
}

static const char *
jstr (const cJSON *o, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (o, name);
  return cJSON_IsString (v) ? v->valuestring : NULL;
}

void
daytona_sandbox_clear (struct daytona_sandbox *sb)
{
  free (sb->id);
  free (sb->name);
  free (sb->state);
  free (sb->toolbox_url);
  *sb = (struct daytona_sandbox){ 0 };
}

/* sb from a Sandbox object of the API; -1 when it is not one. */
static int
take_sandbox (struct daytona_sandbox *sb, const cJSON *j)
{
  const char *id = jstr (j, "id"), *state = jstr (j, "state");
  const char *tb = jstr (j, "toolboxProxyUrl"), *name = jstr (j, "name");
  if (!id || !*id)
    return -1;
  char *nid = strdup (id), *nstate = strdup (state ? state : "unknown");
  char *nname = name ? strdup (name) : sb->name ? strdup (sb->name) : strdup (id);
  char *ntb = NULL;
  if (tb && *tb)
    {
      size_t n = strlen (tb);
      while (n && tb[n - 1] == '/')
        n--;
      ntb = xprintf ("%.*s/%s", (int) n, tb, id);
    }
  else if (sb->toolbox_url && sb->id && !strcmp (sb->id, id))
    ntb = strdup (sb->toolbox_url);
  bool reused = sb->reused;
  daytona_sandbox_clear (sb);
  *sb = (struct daytona_sandbox){ .id = nid, .name = nname, .state = nstate,
                                  .toolbox_url = ntb, .reused = reused };
  return nid && nname && nstate ? 0 : -1;
}

/* Whether a sandbox (its JSON) carries every airlock.* label of o: one
 * found by name alone must be this owner's and session's. */
static bool
ours (const cJSON *j, const struct daytona_sandbox_options *o)
{
  const cJSON *labels = cJSON_GetObjectItemCaseSensitive (j, "labels");
  for (const char *const *l = o->labels; l && *l; l++)
    {
      const char *eq = strchr (*l, '=');
      if (!eq || strncmp (*l, "airlock.", 8))
        continue;
      char *k = strndup (*l, (size_t) (eq - *l));
      const char *v = k ? jstr (labels, k) : NULL;
      free (k);
      if (!v || strcmp (v, eq + 1))
        return false;
    }
  return true;
}

/* GET url (taken, NULL: out of memory): 0 with *r, -1 with *err. */
static int
api_get (struct daytona_http *h, char *url, uint64_t deadline, struct daytona_reply *r,
         char **err)
{
  if (!url)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  struct daytona_request rq = { .method = "GET", .url = url,
                                .deadline_ms = call_deadline (deadline) };
  int rc = daytona_call (h, &rq, r, err);
  free (url);
  return rc;
}

/* GET /sandbox/{idOrName}: 1 found (sb filled), 0 not found, -1 error;
 * with check, one without check's airlock labels is an error. */
static int
get_checked (struct daytona_http *h, const char *id_or_name, uint64_t deadline,
             const struct daytona_sandbox_options *check, struct daytona_sandbox *sb,
             char **reason, char **err)
{
  char *esc = daytona_http_escape (id_or_name);
  struct daytona_reply r;
  int rc = api_get (h, esc ? xprintf ("/sandbox/%s", esc) : NULL, deadline, &r, err);
  free (esc);
  if (rc < 0)
    return -1;
  if (r.status == 404)
    rc = 0;
  else if (r.status == 200 && check && !ours (r.json, check))
    {
      *err = xprintf ("a Daytona sandbox named %s exists, but it is not the one airlock "
                      "made for this session (its airlock.owner and airlock.session labels "
                      "differ): airlock leaves it alone; delete or rename it, or use another "
                      "session name",
                      id_or_name);
      rc = -1;
    }
  else if (r.status == 200 && take_sandbox (sb, r.json) == 0)
    {
      rc = 1;
      if (reason)
        {
          const char *why = jstr (r.json, "errorReason");
          free (*reason);
          *reason = why && *why ? strdup (why) : NULL;
        }
    }
  else
    {
      char *what = xprintf ("looking up the Daytona sandbox %s", id_or_name);
      *err = daytona_error_text (h, &r, what ? what : "looking up a sandbox");
      free (what);
      rc = -1;
    }
  daytona_reply_free (&r);
  return rc;
}

static int
get_sandbox (struct daytona_http *h, const char *id_or_name, uint64_t deadline,
             struct daytona_sandbox *sb, char **reason, char **err)
{
  return get_checked (h, id_or_name, deadline, NULL, sb, reason, err);
}

/* The sandbox with this name and airlock's labels (those starting with
 * "airlock."): GET /sandbox?labels=...&name=...  1 found, 0 not, -1. */
static int
find_sandbox (struct daytona_http *h, const struct daytona_sandbox_options *o,
              uint64_t deadline, struct daytona_sandbox *sb, char **err)
{
  cJSON *labels = cJSON_CreateObject ();
  for (const char *const *l = o->labels; labels && l && *l; l++)
    {
      const char *eq = strchr (*l, '=');
      if (eq && !strncmp (*l, "airlock.", 8))
        {
          char *k = strndup (*l, (size_t) (eq - *l));
          if (k)
            cJSON_AddStringToObject (labels, k, eq + 1);
          free (k);
        }
    }
  char *text = labels ? cJSON_PrintUnformatted (labels) : NULL;
  cJSON_Delete (labels);
  char *el = text ? daytona_http_escape (text) : NULL;
  char *en = daytona_http_escape (o->name);
  char *url = el && en ? xprintf ("/sandbox?labels=%s&name=%s&limit=100", el, en) : NULL;
  free (text);
  free (el);
  free (en);
  struct daytona_reply r;
  int rc = api_get (h, url, deadline, &r, err);
  if (rc < 0)
    return -1;
  if (r.status != 200)
    {
      *err = daytona_error_text (h, &r, "listing the Daytona sandboxes");
      daytona_reply_free (&r);
      return -1;
    }
  /* {items, nextCursor}; older servers answered a bare list */
  const cJSON *items = cJSON_IsArray (r.json) ? r.json
                       : cJSON_GetObjectItemCaseSensitive (r.json, "items");
  const cJSON *it;
  rc = 0;
  cJSON_ArrayForEach (it, items)
    {
      const char *name = jstr (it, "name"), *state = jstr (it, "state");
      /* the name filter matches prefixes: the name itself counts */
      if (name && !strcmp (name, o->name) && !(state && !strcmp (state, "destroyed")))
        {
          rc = take_sandbox (sb, it) == 0 ? 1 : 0;
          break;
        }
    }
  daytona_reply_free (&r);
  return rc;
}

static cJSON *
pairs_object (const char *const *pairs)
{
  cJSON *o = cJSON_CreateObject ();
  for (const char *const *p = pairs; o && p && *p; p++)
    {
      const char *eq = strchr (*p, '=');
      if (!eq)
        continue;
      char *k = strndup (*p, (size_t) (eq - *p));
      if (k)
        {
          cJSON_DeleteItemFromObjectCaseSensitive (o, k); /* the last one wins */
          cJSON_AddStringToObject (o, k, eq + 1);
        }
      free (k);
    }
  return o;
}

/* The CreateSandbox body. */
static cJSON *
create_body (const struct daytona_sandbox_options *o)
{
  cJSON *b = cJSON_CreateObject ();
  if (!b)
    return NULL;
  cJSON_AddStringToObject (b, "name", o->name);
  cJSON_AddItemToObject (b, "labels", pairs_object (o->labels));
  cJSON_AddItemToObject (b, "env", pairs_object (o->env));
  if (o->target)
    cJSON_AddStringToObject (b, "target", o->target);
  if (o->snapshot)
    cJSON_AddStringToObject (b, "snapshot", o->snapshot);
  else if (o->image)
    {
      /* there is no image field: an image is a one-line build */
      char *df = xprintf ("FROM %s\n", o->image);
      cJSON *bi = cJSON_AddObjectToObject (b, "buildInfo");
      if (df && bi)
        cJSON_AddStringToObject (bi, "dockerfileContent", df);
      free (df);
      /* the server refuses resources with a snapshot */
      if (o->cpus > 0)
        cJSON_AddNumberToObject (b, "cpu", o->cpus);
      if (o->memory_gb > 0)
        cJSON_AddNumberToObject (b, "memory", o->memory_gb);
      if (o->disk_gb > 0)
        cJSON_AddNumberToObject (b, "disk", o->disk_gb);
    }
  /* always sent: the server's default (15 min) would stop a session's
   * sandbox, and its commands with it, behind airlock's back */
  cJSON_AddNumberToObject (b, "autoStopInterval", o->auto_stop_min);
  if (o->auto_archive_min > 0)
    cJSON_AddNumberToObject (b, "autoArchiveInterval", o->auto_archive_min);
  return b;
}

/* POST /sandbox.  1 created (sb filled), 0 it exists already (409, or an
 * ambiguous failure after which it was found: sb filled, reused), -1. */
static int
create_sandbox (struct daytona_http *h, const struct daytona_sandbox_options *o,
                uint64_t deadline, struct daytona_sandbox *sb, char **err)
{
  cJSON *body = create_body (o);
  if (!body)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  int rc = -1;
  unsigned seed = (unsigned) monotonic_ms ();
  for (int attempt = 1;; attempt++)
    {
      struct daytona_request rq = { .method = "POST", .url = "/sandbox", .json = body,
                                    .deadline_ms = call_deadline (deadline),
                                    .not_idempotent = true };
      struct daytona_reply r;
      char *cerr = NULL;
      bool ambiguous;
      if (daytona_call (h, &rq, &r, &cerr) < 0)
        ambiguous = true;
      else if (r.status == 200 || r.status == 201)
        {
          rc = take_sandbox (sb, r.json) == 0 ? 1 : -1;
          if (rc < 0)
            *err = xprintf ("creating the Daytona sandbox %s: the answer is not a "
                            "sandbox (no id)", o->name);
          daytona_reply_free (&r);
          break;
        }
      else if (r.status == 409)
        {
          daytona_reply_free (&r);
          int f = get_checked (h, o->name, deadline, o, sb, NULL, err);
          if (f == 0)
            *err = xprintf ("creating the Daytona sandbox %s: the server says it exists "
                            "(HTTP 409), but it cannot be found by that name", o->name);
          rc = f == 1 ? 0 : -1;
          break;
        }
      else
        ambiguous = r.status == 502 || r.status == 503 || r.status == 504;
      if (!ambiguous)
        {
          char *what = xprintf ("creating the Daytona sandbox %s", o->name);
          *err = daytona_error_text (h, &r, what ? what : "creating a sandbox");
          free (what);
          daytona_reply_free (&r);
          break;
        }
      /* Sent, perhaps acted on, no clear answer: whether it exists now
       * decides, never a blind second create. */
      char *why = cerr ? cerr : xprintf ("HTTP %ld", r.status);
      daytona_reply_free (&r);
      char *gerr = NULL;
      int f = get_checked (h, o->name, deadline, o, sb, NULL, &gerr);
      if (f == 1)
        {
          free (why);
          rc = 0;
          break;
        }
      unsigned wait = daytona_backoff_ms ((unsigned) attempt, &seed);
      if (attempt >= CREATE_TRIES || (uint64_t) monotonic_ms () + wait >= deadline)
        {
          *err = xprintf ("creating the Daytona sandbox %s: no clear answer after %d "
                          "attempts (%s)%s%s",
                          o->name, attempt, why ? why : "failed", gerr ? "; " : "",
                          gerr ? gerr : "");
          free (why);
          free (gerr);
          break;
        }
      fprintf (stderr, "airlock daemon: daytona: POST /sandbox: %s; not created, "
               "retrying in %u ms\n", why ? why : "failed", wait);
      free (why);
      free (gerr);
      pause_ms (wait);
    }
  cJSON_Delete (body);
  return rc;
}

static bool
is (const char *state, const char *s)
{
  return state && !strcmp (state, s);
}

/* POST /sandbox/{id}/start (a stopped one starts, an archived one is
 * restored). */
static int
post_action (struct daytona_http *h, struct daytona_sandbox *sb, const char *action,
             uint64_t deadline, char **err)
{
  char *url = xprintf ("/sandbox/%s/%s", sb->id, action);
  struct daytona_request rq = { .method = "POST", .url = url,
                                .deadline_ms = call_deadline (deadline) };
  struct daytona_reply r;
  int rc = url ? daytona_call (h, &rq, &r, err) : -1;
  free (url);
  if (rc < 0)
    {
      if (!*err)
        *err = xprintf ("out of memory");
      return -1;
    }
  if (r.status == 200 || r.status == 201 || r.status == 202 || r.status == 204)
    {
      if (r.json)
        take_sandbox (sb, r.json);
    }
  else
    {
      char *what = xprintf ("%s the Daytona sandbox %s (%s)",
                            !strcmp (action, "start") ? "starting" : "stopping", sb->name,
                            sb->id);
      *err = daytona_error_text (h, &r, what ? what : action);
      free (what);
      rc = -1;
    }
  daytona_reply_free (&r);
  return rc;
}

/* Poll until "started", as the SDKs do: every 100 ms, after 5 s 10 %
 * longer each time, at most 1 s apart.  A stopped or archived sandbox is
 * started once (or again when it went back); error and build_failed end
 * it with the server's reason. */
static int
wait_started (struct daytona_http *h, struct daytona_sandbox *sb,
              const struct daytona_sandbox_options *o, const char *image,
              int timeout_s, uint64_t deadline, char **err)
{
  uint64_t t0 = (uint64_t) monotonic_ms ();
  double interval = 100;
  char *seen = NULL, *reason = NULL;
  int rc = -1;
  uint64_t started_at = 0;
  for (;;)
    {
      const char *st = sb->state;
      if (!seen || strcmp (seen, st))
        {
          if (is (st, "pending_build") || is (st, "building_snapshot")
              || is (st, "pulling_snapshot"))
            say (o, "building image %s (sandbox %s)", image ? image : "(snapshot)", sb->name);
          else if (is (st, "restoring"))
            {
              if (!started_at) /* else said when it was asked for */
                say (o, "restoring archived sandbox %s", sb->name);
            }
          else if (!is (st, "started") && !is (st, "stopped") && !is (st, "archived")
                   && !is (st, "paused"))
            say (o, "state: %s", st);
          free (seen);
          seen = strdup (st);
        }
      if (is (st, "started"))
        {
          rc = 0;
          break;
        }
      if (is (st, "error") || is (st, "build_failed"))
        {
          if (!reason)
            {
              /* the first sight of it: read again for the reason */
              char *gerr = NULL;
              struct daytona_sandbox again = { 0 };
              if (get_sandbox (h, sb->id, deadline, &again, &reason, &gerr) < 0)
                free (gerr);
              daytona_sandbox_clear (&again);
            }
          *err = xprintf ("the Daytona sandbox %s (%s) %s: %s", sb->name, sb->id,
                          is (st, "error") ? "failed to start" : "could not be built",
                          reason ? reason : "the server gave no reason");
          break;
        }
      if (is (st, "destroyed") || is (st, "destroying"))
        {
          *err = xprintf ("the Daytona sandbox %s (%s) was deleted while it was starting",
                          sb->name, sb->id);
          break;
        }
      if ((is (st, "stopped") || is (st, "archived") || is (st, "paused"))
          && (!started_at || (uint64_t) monotonic_ms () - started_at > 10000))
        {
          say (o, is (st, "archived") ? "restoring archived sandbox %s"
                                      : "starting stopped sandbox %s",
               sb->name);
          started_at = (uint64_t) monotonic_ms ();
          if (post_action (h, sb, "start", deadline, err) < 0)
            break;
          continue;
        }
      uint64_t now = (uint64_t) monotonic_ms ();
      if (now + (uint64_t) interval >= deadline)
        {
          *err = xprintf ("the Daytona sandbox %s (%s) did not start within %d s (state "
                          "%s); a large image may take longer to build: raise "
                          "daytona.start_timeout, or use a prepared snapshot "
                          "(daytona.snapshot)",
                          sb->name, sb->id, timeout_s, st);
          break;
        }
      pause_ms ((unsigned) interval);
      if (now - t0 > 5000)
        interval = interval * 1.1 > 1000 ? 1000 : interval * 1.1;
      int g = get_sandbox (h, sb->id, deadline, sb, &reason, err);
      if (g < 0)
        break;
      if (g == 0)
        {
          *err = xprintf ("the Daytona sandbox %s (%s) disappeared while it was starting "
                          "(deleted outside airlock?)", sb->name, sb->id);
          break;
        }
    }
  free (seen);
  free (reason);
  return rc;
}

/* A reused sandbox keeps the auto-stop interval of the open that made
 * it; this open's daytona.auto_stop is what the user asked for now. */
static int
set_auto_stop (struct daytona_http *h, const struct daytona_sandbox *sb, int minutes,
               uint64_t deadline, char **err)
{
  char *url = xprintf ("/sandbox/%s/autostop/%d", sb->id, minutes < 0 ? 0 : minutes);
  struct daytona_request rq = { .method = "POST", .url = url,
                                .deadline_ms = call_deadline (deadline) };
  struct daytona_reply r;
  int rc = url ? daytona_call (h, &rq, &r, err) : -1;
  free (url);
  if (rc < 0)
    {
      if (!*err)
        *err = xprintf ("out of memory");
      return -1;
    }
  if (r.status < 200 || r.status > 299)
    {
      char *what = xprintf ("setting the reused Daytona sandbox %s's auto-stop interval "
                            "(daytona.auto_stop) to %d min", sb->name, minutes);
      *err = daytona_error_text (h, &r, what ? what : "setting the auto-stop interval");
      free (what);
      rc = -1;
    }
  daytona_reply_free (&r);
  return rc;
}

int
daytona_sandbox_acquire (struct daytona_http *h, const struct daytona_sandbox_options *o,
                         struct daytona_sandbox *sb, char **err)
{
  *sb = (struct daytona_sandbox){ 0 };
  int timeout_s = o->start_timeout_s > 0 ? o->start_timeout_s : 300;
  uint64_t deadline = (uint64_t) monotonic_ms () + (uint64_t) timeout_s * 1000;
  int f = find_sandbox (h, o, deadline, sb, err);
  if (f < 0)
    return -1;
  bool created = false;
  if (f == 1)
    {
      sb->reused = true;
      /* one that broke is of no use to anyone: replaced */
      if (is (sb->state, "error") || is (sb->state, "build_failed"))
        {
          say (o, "the kept sandbox %s is in state %s: deleting it, creating a new one",
               sb->name, sb->state);
          if (daytona_sandbox_release (h, sb, false, CLEANUP_S, err) < 0)
            {
              daytona_sandbox_clear (sb);
              return -1;
            }
          daytona_sandbox_clear (sb);
          f = 0;
        }
      else
        say (o, "reusing sandbox %s (%s, %s)", sb->name, sb->id, sb->state);
    }
  if (f == 0)
    {
      if (o->snapshot)
        say (o, "creating sandbox %s from snapshot %s", o->name, o->snapshot);
      else
        say (o, "creating sandbox %s from image %s", o->name,
             o->image ? o->image : "(the default snapshot)");
      int c = create_sandbox (h, o, deadline, sb, err);
      if (c < 0)
        return -1;
      created = c == 1;
      sb->reused = !created;
    }
  if (!sb->name && !(sb->name = strdup (o->name)))
    return -1;
  if (wait_started (h, sb, o, o->snapshot ? o->snapshot : o->image, timeout_s, deadline,
                    err)
      < 0)
    {
      /* nothing left behind by an open that failed */
      if (created)
        {
          char *derr = NULL;
          if (daytona_sandbox_release (h, sb, false, CLEANUP_S, &derr) < 0)
            {
              char *m = xprintf ("%s; deleting it failed too: %s", *err, derr);
              if (m)
                {
                  free (*err);
                  *err = m;
                }
            }
          free (derr);
        }
      daytona_sandbox_clear (sb);
      return -1;
    }
  if (sb->reused && set_auto_stop (h, sb, o->auto_stop_min, deadline, err) < 0)
    {
      daytona_sandbox_clear (sb);
      return -1;
    }
  if (!sb->toolbox_url)
    {
      /* older answers lack toolboxProxyUrl: ask for it */
      char *url = xprintf ("/sandbox/%s/toolbox-proxy-url", sb->id);
      struct daytona_request rq = { .method = "GET", .url = url,
                                    .deadline_ms = call_deadline (0) };
      struct daytona_reply r;
      if (url && daytona_call (h, &rq, &r, err) == 0)
        {
          const char *u = r.status == 200 ? jstr (r.json, "url") : NULL;
          if (u)
            {
              size_t n = strlen (u);
              while (n && u[n - 1] == '/')
                n--;
              sb->toolbox_url = xprintf ("%.*s/%s", (int) n, u, sb->id);
            }
          else
            *err = daytona_error_text (h, &r, "asking for the sandbox's toolbox URL");
          daytona_reply_free (&r);
        }
      free (url);
      if (!sb->toolbox_url)
        {
          if (!*err)
            *err = xprintf ("out of memory");
          daytona_sandbox_clear (sb);
          return -1;
        }
    }
  return 0;
}

char *
daytona_sandbox_state (struct daytona_http *h, const struct daytona_sandbox *sb, bool *gone,
                       char **err)
{
  *gone = false;
  struct daytona_sandbox now = { 0 };
  int g = get_sandbox (h, sb->id, 0, &now, NULL, err);
  if (g < 0)
    return NULL;
  if (g == 0 || is (now.state, "destroyed") || is (now.state, "destroying"))
    {
      *gone = true;
      *err = xprintf ("the Daytona sandbox %s (%s) no longer exists", sb->name, sb->id);
      daytona_sandbox_clear (&now);
      return NULL;
    }
  char *state = now.state;
  now.state = NULL;
  daytona_sandbox_clear (&now);
  return state;
}

int
daytona_sandbox_start (struct daytona_http *h, struct daytona_sandbox *sb, int timeout_s,
                       char **err)
{
  uint64_t deadline = (uint64_t) monotonic_ms () + (uint64_t) (timeout_s > 0 ? timeout_s : 300) * 1000;
  int g = get_sandbox (h, sb->id, deadline, sb, NULL, err);
  if (g == 0)
    *err = xprintf ("the Daytona sandbox %s (%s) no longer exists", sb->name, sb->id);
  if (g <= 0)
    return -1;
  return wait_started (h, sb, NULL, NULL, timeout_s, deadline, err);
}

int
daytona_sandbox_release (struct daytona_http *h, struct daytona_sandbox *sb, bool keep,
                         int timeout_s, char **err)
{
  if (!sb->id)
    return 0;
  uint64_t deadline = (uint64_t) monotonic_ms () + (uint64_t) (timeout_s > 0 ? timeout_s : 60) * 1000;
  char *url = xprintf (keep ? "/sandbox/%s/stop" : "/sandbox/%s", sb->id);
  struct daytona_request rq = { .method = keep ? "POST" : "DELETE", .url = url,
                                .deadline_ms = call_deadline (deadline) };
  struct daytona_reply r;
  if (!url || daytona_call (h, &rq, &r, err) < 0)
    {
      free (url);
      if (!*err)
        *err = xprintf ("out of memory");
      return -1;
    }
  free (url);
  long st = r.status;
  if (st == 404)
    {
      daytona_reply_free (&r);
      return 0; /* gone already */
    }
  if (st < 200 || st >= 300)
    {
      char *what = xprintf ("%s the Daytona sandbox %s (%s)", keep ? "stopping" : "deleting",
                            sb->name, sb->id);
      *err = daytona_error_text (h, &r, what ? what : "releasing the sandbox");
      free (what);
      daytona_reply_free (&r);
      return -1;
    }
  daytona_reply_free (&r);
  /* until it is stopped (or gone: ephemeral ones are), or deleted */
  unsigned interval = 100;
  for (;;)
    {
      struct daytona_sandbox now = { 0 };
      int g = get_sandbox (h, sb->id, deadline, &now, NULL, err);
      if (g < 0)
        return -1;
      bool done = g == 0 || is (now.state, "destroyed")
                  || (keep && (is (now.state, "stopped") || is (now.state, "archived")));
      if (g == 1)
        {
          free (sb->state);
          sb->state = now.state;
          now.state = NULL;
        }
      bool failed = g == 1 && is (sb->state, "error");
      daytona_sandbox_clear (&now);
      if (done)
        return 0;
      if (failed)
        {
          *err = xprintf ("%s the Daytona sandbox %s (%s) failed: it is in state error",
                          keep ? "stopping" : "deleting", sb->name, sb->id);
          return -1;
        }
      if ((uint64_t) monotonic_ms () + interval >= deadline)
        {
          *err = xprintf ("%s the Daytona sandbox %s (%s): still %s after %d s; it may "
                          "need to be removed in Daytona's dashboard",
                          keep ? "stopping" : "deleting", sb->name, sb->id, sb->state,
                          timeout_s);
          return -1;
        }
      pause_ms (interval);
      interval = interval * 2 > 1000 ? 1000 : interval * 2;
    }
}

/* SPDX-License-Identifier: MIT */
/* airlock mcp: the Model Context Protocol on stdio (JSON-RPC 2.0, one
 * message per line), as a client of the per-user daemon like `airlock
 * serve`.  Each tools/call becomes one or two requests of the daemon's
 * JSON-lines API on one connection, matched by id; their events become
 * progress notifications, the gate's approval events become elicitation
 * requests to the client, a cancellation kills the job.  The server holds
 * no session state of its own beyond the names it opened (closed when the
 * client leaves) and who it is (the owner the daemon checks). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval_client.h"
#include "client_commands.h"
#include "config.h"
#include "mcp_tools.h"
#include "random_id.h"
#include "xprintf.h"

#define LATEST_PROTOCOL "2025-11-25"
#define MAX_MESSAGE (16u << 20)       /* a client's line; uploads are base64 */
#define MAX_RESOURCE_TEXT (16u << 20) /* resources/read of a spool */
#define PROGRESS_CHUNK 4000           /* characters of output per progress message */

static const char *const protocols[] = { LATEST_PROTOCOL, "2025-06-18", "2025-03-26",
                                         "2024-11-05" };

/* One client request in flight: a tools/call or a resources/read. */
struct call {
  struct call *next;
  cJSON *rpc_id;
  cJSON *token; /* progress token, or NULL */
  double progress;
  const struct mcp_tool *tool; /* NULL: resources/read */
  cJSON *args;
  long daemon_id; /* the daemon request it waits on */
  int step;
  long job; /* exec, once started */
  bool cancelled;
  char *uri; /* resources/read: what, and the text so far */
  char *text;
  size_t text_len;
  double offset;
};

/* An elicitation we asked the client for: which approval it answers. */
struct elicit {
  struct elicit *next;
  long id;
  double approval;
  struct call *call;
};

static struct {
  struct daemon_conn dc;
  bool daemon_up;
  char owner[160];
  bool stable_owner, share;
  cJSON *defaults;
  struct airlock_config *cfg;
  const char *approval_flag;
  const char *mode; /* the gate mode of our commands, set at initialize */
  bool elicitation;
  const char *protocol;
  long next_id;
  struct call *calls;
  struct elicit *elicits;
  char **opened;
  size_t nopened;
  char **offered;
  size_t noffered;
  char **roots; /* --files-root: the host directories an agent may name */
  size_t nroots;
} srv;

/* ---- writing to the client ---- */

static void
send_msg (cJSON *m)
{
  char *text = cJSON_PrintUnformatted (m);
  cJSON_Delete (m);
  if (!text)
    return;
  size_t n = strlen (text);
  text[n] = '\n';
  for (size_t off = 0; off <= n;)
    {
      ssize_t w = write (1, text + off, n + 1 - off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break; /* the client is gone: stdin's end will tell */
      off += (size_t) w;
    }
  free (text);
}

static cJSON *
rpc (const cJSON *id)
{
  cJSON *m = cJSON_CreateObject ();
  cJSON_AddStringToObject (m, "jsonrpc", "2.0");
  cJSON_AddItemToObject (m, "id", id ? cJSON_Duplicate (id, true) : cJSON_CreateNull ());
  return m;
}

static void
reply (const cJSON *id, cJSON *result)
{
  cJSON *m = rpc (id);
  cJSON_AddItemToObject (m, "result", result);
  send_msg (m);
}

static void
reply_error (const cJSON *id, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *msg = vxprintf (fmt, ap);
  va_end (ap);
  cJSON *m = rpc (id);
  cJSON *e = cJSON_AddObjectToObject (m, "error");
  cJSON_AddNumberToObject (e, "code", code);
  cJSON_AddStringToObject (e, "message", msg ? msg : "error");
  free (msg);
  send_msg (m);
}

static void
notify_progress (struct call *c, double progress, const char *message)
{
  if (!c->token || c->cancelled || progress <= c->progress)
    return;
  c->progress = progress;
  cJSON *m = cJSON_CreateObject ();
  cJSON_AddStringToObject (m, "jsonrpc", "2.0");
  cJSON_AddStringToObject (m, "method", "notifications/progress");
  cJSON *p = cJSON_AddObjectToObject (m, "params");
  cJSON_AddItemToObject (p, "progressToken", cJSON_Duplicate (c->token, true));
  cJSON_AddNumberToObject (p, "progress", progress);
  if (message)
    cJSON_AddStringToObject (p, "message", message);
  send_msg (m);
}

/* ---- the calls in flight ---- */

static void
call_free (struct call *c)
{
  for (struct call **p = &srv.calls; *p; p = &(*p)->next)
    if (*p == c)
      {
        *p = c->next;
        break;
      }
  for (struct elicit **p = &srv.elicits; *p;)
    if ((*p)->call == c)
      {
        struct elicit *e = *p;
        *p = e->next;
        free (e);
      }
    else
      p = &(*p)->next;
  cJSON_Delete (c->rpc_id);
  cJSON_Delete (c->token);
  cJSON_Delete (c->args);
  free (c->uri);
  free (c->text);
  free (c);
}

/* End a tool call with its result (taken): structured content and a
 * text for models that read only text; a cancelled call gets nothing. */
static void
finish (struct call *c, cJSON *structured, char *text, cJSON *more_content)
{
  if (!c->cancelled)
    {
      cJSON *r = cJSON_CreateObject ();
      cJSON *content = cJSON_AddArrayToObject (r, "content");
      cJSON *t = cJSON_CreateObject ();
      cJSON_AddStringToObject (t, "type", "text");
      cJSON_AddStringToObject (t, "text", text ? text : "");
      cJSON_AddItemToArray (content, t);
      if (more_content)
        cJSON_AddItemToArray (content, more_content);
      cJSON_AddItemToObject (r, "structuredContent", structured);
      cJSON_AddBoolToObject (r, "isError", false);
      reply (c->rpc_id, r);
    }
  else
    {
      cJSON_Delete (structured);
      cJSON_Delete (more_content);
    }
  free (text);
  call_free (c);
}

/* End a tool call with a tool error: "CODE: message", for the agent. */
static void
finish_error (struct call *c, const char *code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *msg = vxprintf (fmt, ap);
  va_end (ap);
  if (!c->cancelled)
    {
      cJSON *r = cJSON_CreateObject ();
      cJSON *t = cJSON_CreateObject ();
      char *text = NULL;
      text = xprintf ("%s: %s", code, msg ? msg : "failed");
      cJSON_AddStringToObject (t, "type", "text");
      cJSON_AddStringToObject (t, "text", text ? text : code);
      free (text);
      cJSON_AddItemToArray (cJSON_AddArrayToObject (r, "content"), t);
      cJSON_AddBoolToObject (r, "isError", true);
      reply (c->rpc_id, r);
    }
  free (msg);
  call_free (c);
}

/* A daemon error answer as the call's tool error. */
static void
finish_daemon_error (struct call *c, const cJSON *m)
{
  const cJSON *e = cJSON_GetObjectItemCaseSensitive (m, "error");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (e, "code");
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive (e, "message");
  finish_error (c, cJSON_IsString (code) ? code->valuestring : "error", "%s",
                cJSON_IsString (msg) ? msg->valuestring : "the daemon refused it");
}

/* ---- talking to the daemon ---- */

static bool
daemon_connect (void)
{
  if (srv.daemon_up)
    return true;
  int fd = connect_daemon ("airlock mcp");
  if (fd < 0)
    return false;
  srv.dc.fd = fd;
  srv.dc.len = 0;
  srv.daemon_up = true;
  return true;
}

/* Send a request (taken) for call c (NULL: nobody waits on the answer). */
static void
daemon_request (struct call *c, cJSON *req)
{
  long id = ++srv.next_id;
  cJSON_AddNumberToObject (req, "id", (double) id);
  if (c)
    c->daemon_id = id;
  if (!srv.daemon_up || daemon_send (srv.dc.fd, req) < 0)
    {
      if (c)
        finish_error (c, "daemon_gone", "the airlock daemon cannot be reached");
      return;
    }
}

static cJSON *
op_request (const char *op, const char *session)
{
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", op);
  if (session)
    cJSON_AddStringToObject (req, "session", session);
  cJSON_AddStringToObject (req, "owner", srv.owner);
  return req;
}

static void
copy_field (cJSON *to, const cJSON *from, const char *key, const char *as)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (from, key);
  if (v)
    cJSON_AddItemToObject (to, as ? as : key, cJSON_Duplicate (v, true));
}

static const char *
arg_string (const struct call *c, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (c->args, key);
  return cJSON_IsString (v) ? v->valuestring : NULL;
}

static void
remember (char ***list, size_t *n, const char *s)
{
  for (size_t i = 0; i < *n; i++)
    if (!strcmp ((*list)[i], s))
      return;
  char **p = realloc (*list, (*n + 1) * sizeof *p);
  if (!p)
    return;
  *list = p;
  (*list)[(*n)++] = strdup (s);
}

static void
forget (char **list, size_t *n, const char *s)
{
  for (size_t i = 0; i < *n; i++)
    if (list[i] && !strcmp (list[i], s))
      {
        free (list[i]);
        list[i] = list[--*n];
        return;
      }
}

/* ---- each tool: its first request, and what its answers become ---- */

/* The backend a session would get: the call's, the defaults', or the
 * configuration's. */
static const char *
effective_backend (const cJSON *open)
{
  const cJSON *b = cJSON_GetObjectItemCaseSensitive (open, "backend");
  if (cJSON_IsString (b))
    return b->valuestring;
  return srv.cfg ? config_string (srv.cfg, "backend") : "local";
}

/* Host paths the agent names (a session's workdir, an upload's source, a
 * download's dest) must lie under a --files-root: the agent drives the
 * sandbox, and must not reach the rest of the host through them.  The
 * resolved path (malloc'd) is what goes to the daemon, which writes
 * nothing through a symlink; NULL with *why. */
static char *
under_roots (const char *path, bool may_be_new, char **why)
{
  if (path[0] != '/')
    return *why = xprintf ("%s: not an absolute path", path), NULL;
  char *real = realpath (path, NULL);
  int e = errno;
  if (!real && e == ENOENT && may_be_new)
    {
      char *copy = strdup (path);
      char *slash = copy ? strrchr (copy, '/') : NULL;
      const char *base = slash ? slash + 1 : "";
      if (slash)
        *slash = '\0';
      char *parent = slash ? realpath (*copy ? copy : "/", NULL) : NULL;
      e = errno;
      if (parent && *base && strcmp (base, ".") && strcmp (base, ".."))
        real = xprintf ("%s/%s", strcmp (parent, "/") ? parent : "", base);
      free (parent);
      free (copy);
    }
  if (!real)
    return *why = xprintf ("%s: %s", path, strerror (e)), NULL;
  char list[1024] = "";
  for (size_t i = 0; i < srv.nroots; i++)
    {
      size_t n = strlen (srv.roots[i]);
      if (!strcmp (srv.roots[i], "/")
          || (!strncmp (real, srv.roots[i], n) && (real[n] == '/' || !real[n])))
        return real;
      snprintf (list + strlen (list), sizeof list - strlen (list), "%s%s", *list ? ", " : "",
                srv.roots[i]);
    }
  *why = xprintf ("%s is outside the host directories this MCP server lets an agent name (%s); "
                  "the person who configured it may add one with --files-root DIR",
                  path, list);
  free (real);
  return NULL;
}

/* Replace the host path field key of req by its resolved form, if
 * allowed; false (the call ended) when not. */
static bool
check_host_path (struct call *c, cJSON *req, const char *key, bool may_be_new)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!cJSON_IsString (v))
    return true;
  char *why = NULL, *real = under_roots (v->valuestring, may_be_new, &why);
  if (!real)
    {
      cJSON_Delete (req);
      finish_error (c, "refused", "%s %s", key, why ? why : "refused");
      free (why);
      return false;
    }
  cJSON_ReplaceItemInObjectCaseSensitive (req, key, cJSON_CreateString (real));
  free (real);
  return true;
}

/* job_output's read (after its wait, if any): its last step. */
static void
read_job_output (struct call *c)
{
  c->step = 1;
  cJSON *req = op_request ("job_output", arg_string (c, "session"));
  copy_field (req, c->args, "job", NULL);
  copy_field (req, c->args, "offset", NULL);
  daemon_request (c, req);
}

static void
start_tool (struct call *c)
{
  const char *name = c->tool->name, *session = arg_string (c, "session");
  cJSON *req;
  if (!strcmp (name, "open_session"))
    {
      req = op_request ("open", NULL);
      const cJSON *d;
      cJSON_ArrayForEach (d, srv.defaults)
        if (!cJSON_GetObjectItemCaseSensitive (c->args, d->string))
          cJSON_AddItemToObject (req, d->string, cJSON_Duplicate (d, true));
      cJSON_ArrayForEach (d, c->args)
        cJSON_AddItemToObject (req, d->string, cJSON_Duplicate (d, true));
      if (cJSON_GetObjectItemCaseSensitive (c->args, "workdir")
          && !check_host_path (c, req, "workdir", false))
        return;
      const char *be = effective_backend (req);
      char cwd[4096];
      if (!cJSON_GetObjectItemCaseSensitive (req, "workdir") && strcmp (be, "ssh")
          && strcmp (be, "daytona") && getcwd (cwd, sizeof cwd))
        cJSON_AddStringToObject (req, "workdir", cwd);
      cJSON_AddStringToObject (req, "approval", srv.mode);
      if (srv.share)
        cJSON_AddBoolToObject (req, "share", true);
      cJSON_AddItemToObject (req, "client_env", config_client_env (NULL));
    }
  else if (!strcmp (name, "close_session"))
    req = op_request ("close", session);
  else if (!strcmp (name, "list_sessions"))
    req = op_request ("list", NULL);
  else if (!strcmp (name, "exec"))
    {
      req = op_request ("exec", session);
      static const char *const keys[] = { "command", "timeout", "stdin", "env", "background",
                                          "cwd", "pty" };
      for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        copy_field (req, c->args, keys[i], NULL);
      cJSON_AddStringToObject (req, "approval", srv.mode);
    }
  else if (!strcmp (name, "job_output"))
    {
      const cJSON *w = cJSON_GetObjectItemCaseSensitive (c->args, "wait");
      if (cJSON_IsNumber (w) && w->valuedouble > 0)
        {
          req = op_request ("job_wait", session);
          copy_field (req, c->args, "job", NULL);
          copy_field (req, c->args, "wait", "timeout");
        }
      else
        return read_job_output (c);
    }
  else if (!strcmp (name, "job_stdin"))
    {
      req = op_request ("job_stdin", session);
      copy_field (req, c->args, "job", NULL);
      copy_field (req, c->args, "data", NULL);
      copy_field (req, c->args, "eof", NULL);
    }
  else if (!strcmp (name, "job_resize"))
    {
      req = op_request ("resize", session);
      copy_field (req, c->args, "job", NULL);
      copy_field (req, c->args, "rows", NULL);
      copy_field (req, c->args, "cols", NULL);
    }
  else if (!strcmp (name, "job_kill"))
    {
      req = op_request ("kill", session);
      copy_field (req, c->args, "job", NULL);
    }
  else /* upload, download: the API's own fields */
    {
      req = op_request (name, session);
      const cJSON *a;
      cJSON_ArrayForEach (a, c->args)
        if (strcmp (a->string, "session"))
          cJSON_AddItemToObject (req, a->string, cJSON_Duplicate (a, true));
      if (!check_host_path (c, req, "source", false) || !check_host_path (c, req, "dest", true))
        return;
    }
  daemon_request (c, req);
}

static void
ask_person (struct call *c, const cJSON *m)
{
  const cJSON *num = cJSON_GetObjectItemCaseSensitive (m, "approval");
  const cJSON *cmd = cJSON_GetObjectItemCaseSensitive (m, "command");
  if (!srv.elicitation)
    {
      cJSON *a = op_request ("answer", NULL);
      cJSON_DeleteItemFromObject (a, "owner");
      cJSON_AddItemToObject (a, "approval", cJSON_Duplicate (num, true));
      cJSON_AddStringToObject (a, "answer", "deny");
      daemon_request (NULL, a);
      return;
    }
  char rules[1024] = "";
  const cJSON *r;
  cJSON_ArrayForEach (r, cJSON_GetObjectItemCaseSensitive (m, "rules"))
    {
      const cJSON *rid = cJSON_GetObjectItemCaseSensitive (r, "id");
      const cJSON *desc = cJSON_GetObjectItemCaseSensitive (r, "description");
      if (cJSON_IsString (rid) && cJSON_IsString (desc))
        snprintf (rules + strlen (rules), sizeof rules - strlen (rules), "\n  - %s (%s)",
                  desc->valuestring, rid->valuestring);
    }
  char *text = xprintf ("airlock: the agent wants to run this command in session \"%s\":\n\n"
                        "  %s\n\nIt needs your approval:%s\n\nAllow it once, for the rest of "
                        "the session, always (added to your allowlist), or deny it?",
                        arg_string (c, "session"), cJSON_IsString (cmd) ? cmd->valuestring : "?",
                        rules);
  if (!text)
    return;
  struct elicit *e = calloc (1, sizeof *e);
  if (!e)
    {
      free (text);
      return;
    }
  e->id = ++srv.next_id;
  e->approval = cJSON_IsNumber (num) ? num->valuedouble : 0;
  e->call = c;
  e->next = srv.elicits;
  srv.elicits = e;
  cJSON *q = cJSON_CreateObject ();
  cJSON_AddStringToObject (q, "jsonrpc", "2.0");
  cJSON_AddNumberToObject (q, "id", (double) e->id);
  cJSON_AddStringToObject (q, "method", "elicitation/create");
  cJSON *p = cJSON_AddObjectToObject (q, "params");
  if (!strcmp (srv.protocol, LATEST_PROTOCOL))
    cJSON_AddStringToObject (p, "mode", "form");
  cJSON_AddStringToObject (p, "message", text);
  free (text);
  cJSON_AddItemToObject (
      p, "requestedSchema",
      cJSON_Parse ("{\"type\":\"object\",\"required\":[\"decision\"],\"properties\":{"
                   "\"decision\":{\"type\":\"string\",\"title\":\"Decision\",\"enum\":[\"once\","
                   "\"session\",\"always\",\"deny\"],\"enumNames\":[\"Allow once\",\"Allow for "
                   "this session\",\"Always allow\",\"Deny\"]}}}"));
  send_msg (q);
}

/* The client's answer to an elicitation: the gate's answer. */
static void
elicit_answered (const cJSON *m)
{
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (m, "id");
  struct elicit **p = &srv.elicits;
  while (*p && !(cJSON_IsNumber (id) && (*p)->id == (long) id->valuedouble))
    p = &(*p)->next;
  if (!*p)
    return;
  struct elicit *e = *p;
  *p = e->next;
  const cJSON *res = cJSON_GetObjectItemCaseSensitive (m, "result");
  const cJSON *action = cJSON_GetObjectItemCaseSensitive (res, "action");
  const cJSON *dec = cJSON_GetObjectItemCaseSensitive (
      cJSON_GetObjectItemCaseSensitive (res, "content"), "decision");
  const char *answer = "deny";
  if (cJSON_IsString (action) && !strcmp (action->valuestring, "accept") && cJSON_IsString (dec)
      && (!strcmp (dec->valuestring, "once") || !strcmp (dec->valuestring, "session")
          || !strcmp (dec->valuestring, "always")))
    answer = dec->valuestring;
  cJSON *a = cJSON_CreateObject ();
  cJSON_AddStringToObject (a, "op", "answer");
  cJSON_AddNumberToObject (a, "approval", e->approval);
  cJSON_AddStringToObject (a, "answer", e->call->cancelled ? "deny" : answer);
  daemon_request (NULL, a);
  free (e);
}

/* A cancelled exec's job, stopped through the session's kill path. */
static void
kill_job (struct call *c)
{
  cJSON *k = op_request ("kill", arg_string (c, "session"));
  cJSON_AddNumberToObject (k, "job", (double) c->job);
  daemon_request (NULL, k);
}

/* At most PROGRESS_CHUNK bytes of s, cut before a character. */
static char *
chunk_of (const char *s)
{
  size_t n = strlen (s);
  if (n > PROGRESS_CHUNK)
    for (n = PROGRESS_CHUNK; n && ((unsigned char) s[n] & 0xC0) == 0x80; n--)
      ;
  return strndup (s, n);
}

static void
exec_result (struct call *c, const cJSON *m)
{
  if (!cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (m, "ok")))
    return finish_daemon_error (c, m);
  cJSON *o = cJSON_CreateObject ();
  static const char *const keys[] = { "job", "exit_code", "cause", "stdout", "stderr",
                                      "truncated", "cwd", "duration_ms", "timed_out",
                                      "interrupted", "spool_error", "posture" };
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    copy_field (o, m, keys[i], NULL);
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (m, "exit_code");
  const cJSON *cause = cJSON_GetObjectItemCaseSensitive (m, "cause");
  const cJSON *out = cJSON_GetObjectItemCaseSensitive (m, "stdout");
  const cJSON *err = cJSON_GetObjectItemCaseSensitive (m, "stderr");
  const cJSON *dir = cJSON_GetObjectItemCaseSensitive (m, "cwd");
  cJSON *link = NULL;
  char *uri = NULL;
  if (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (m, "truncated"))
      && (uri = xprintf ("airlock://sessions/%s/jobs/%ld/output", arg_string (c, "session"),
                         c->job)))
    {
      cJSON_AddStringToObject (o, "output_uri", uri);
      remember (&srv.offered, &srv.noffered, uri);
      if (strcmp (srv.protocol, "2025-06-18") >= 0)
        {
          link = cJSON_CreateObject ();
          cJSON_AddStringToObject (link, "type", "resource_link");
          cJSON_AddStringToObject (link, "uri", uri);
          cJSON_AddStringToObject (link, "name", "output");
          cJSON_AddStringToObject (link, "description", "the command's whole output");
          cJSON_AddStringToObject (link, "mimeType", "text/plain");
        }
    }
  char *text = NULL, num[32] = "none";
  if (cJSON_IsNumber (code))
    snprintf (num, sizeof num, "%d", code->valueint);
  text = xprintf ("exit code %s (%s) in %s\n--- stdout ---\n%s\n--- stderr ---\n%s%s%s%s",
                num,
                cJSON_IsString (cause) ? cause->valuestring : "?",
                cJSON_IsString (dir) ? dir->valuestring : "?",
                cJSON_IsString (out) ? out->valuestring : "",
                cJSON_IsString (err) ? err->valuestring : "",
                uri ? "\n[output cut: all of it is the resource " : "", uri ? uri : "",
                uri ? "]" : "");
  free (uri);
  finish (c, o, text, link);
}

static void
exec_message (struct call *c, const cJSON *m)
{
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive (m, "event");
  const char *event = cJSON_IsString (ev) ? ev->valuestring : "";
  if (!strcmp (event, "approval"))
    ask_person (c, m);
  else if (!strcmp (event, "started"))
    {
      const cJSON *j = cJSON_GetObjectItemCaseSensitive (m, "job");
      c->job = cJSON_IsNumber (j) ? (long) j->valuedouble : 0;
      if (c->cancelled)
        kill_job (c);
      else
        {
          char msg[64];
          snprintf (msg, sizeof msg, "started job %ld", c->job);
          c->progress = -1;
          notify_progress (c, 0, msg);
        }
    }
  else if (!strcmp (event, "output"))
    {
      const cJSON *d = cJSON_GetObjectItemCaseSensitive (m, "data");
      const cJSON *off = cJSON_GetObjectItemCaseSensitive (m, "next_offset");
      char *chunk = chunk_of (cJSON_IsString (d) ? d->valuestring : "");
      if (cJSON_IsNumber (off))
        notify_progress (c, off->valuedouble, chunk);
      free (chunk);
    }
  else if (!strcmp (event, "result"))
    {
      if (!c->job)
        {
          const cJSON *j = cJSON_GetObjectItemCaseSensitive (m, "job");
          c->job = cJSON_IsNumber (j) ? (long) j->valuedouble : 0;
        }
      exec_result (c, m);
    }
  else if (!strcmp (event, "progress"))
    ;
  else if (!cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (m, "ok")))
    finish_daemon_error (c, m);
  else /* a background job, started */
    {
      cJSON *o = cJSON_CreateObject ();
      copy_field (o, m, "job", NULL);
      cJSON_AddBoolToObject (o, "background", true);
      copy_field (o, m, "posture", NULL);
      const cJSON *j = cJSON_GetObjectItemCaseSensitive (m, "job");
      finish (c, o,
              xprintf ("started background job %d; read its output with job_output",
                       cJSON_IsNumber (j) ? j->valueint : 0),
              NULL);
    }
}

/* A job object's state fields, as job_output and job_kill answer. */
static cJSON *
job_state (const cJSON *m, const struct call *c)
{
  cJSON *o = cJSON_CreateObject ();
  const cJSON *j = cJSON_GetObjectItemCaseSensitive (c->args, "job");
  cJSON_AddItemToObject (o, "job", cJSON_Duplicate (j, true));
  copy_field (o, m, "data", NULL);
  copy_field (o, m, "next_offset", NULL);
  copy_field (o, m, "state", NULL);
  copy_field (o, m, "exit_code", NULL);
  copy_field (o, m, "cause", NULL);
  return o;
}

static char *
job_text (const cJSON *o)
{
  const cJSON *st = cJSON_GetObjectItemCaseSensitive (o, "state");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (o, "exit_code");
  const cJSON *d = cJSON_GetObjectItemCaseSensitive (o, "data");
  const cJSON *next = cJSON_GetObjectItemCaseSensitive (o, "next_offset");
  char num[32] = "none";
  if (cJSON_IsNumber (code))
    snprintf (num, sizeof num, "%d", code->valueint);
  return xprintf ("job %s, exit code %s%s%.0f%s%s", cJSON_IsString (st) ? st->valuestring : "?",
                  num, next ? ", next_offset " : "", next ? next->valuedouble : 0, d ? "\n" : "",
                  cJSON_IsString (d) ? d->valuestring : "");
}

static void
read_more (struct call *c)
{
  unsigned long job = 0;
  char session[65] = "";
  sscanf (c->uri, "airlock://sessions/%64[^/]/jobs/%lu/output", session, &job);
  cJSON *req = op_request ("job_output", session);
  cJSON_AddNumberToObject (req, "job", (double) job);
  cJSON_AddNumberToObject (req, "offset", c->offset);
  daemon_request (c, req);
}

/* resources/read: the spool, a MiB at a time, until its end. */
static void
resource_message (struct call *c, const cJSON *m)
{
  if (!cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (m, "ok")))
    {
      const cJSON *msg
          = cJSON_GetObjectItemCaseSensitive (cJSON_GetObjectItemCaseSensitive (m, "error"), "message");
      if (!c->cancelled)
        reply_error (c->rpc_id, -32002, "resource %s: %s", c->uri,
                     cJSON_IsString (msg) ? msg->valuestring : "not found");
      return call_free (c);
    }
  const cJSON *d = cJSON_GetObjectItemCaseSensitive (m, "data");
  const cJSON *next = cJSON_GetObjectItemCaseSensitive (m, "next_offset");
  size_t n = cJSON_IsString (d) ? strlen (d->valuestring) : 0;
  if (n && c->text_len + n <= MAX_RESOURCE_TEXT)
    {
      char *t = realloc (c->text, c->text_len + n + 1);
      if (t)
        {
          memcpy (t + c->text_len, d->valuestring, n + 1);
          c->text = t;
          c->text_len += n;
          c->offset = cJSON_IsNumber (next) ? next->valuedouble : c->offset + (double) n;
          return read_more (c);
        }
    }
  if (!c->cancelled)
    {
      cJSON *r = cJSON_CreateObject ();
      cJSON *item = cJSON_CreateObject ();
      cJSON_AddStringToObject (item, "uri", c->uri);
      cJSON_AddStringToObject (item, "mimeType", "text/plain");
      /* never cut silently: say where the rest is */
      char *cut = n ? xprintf ("%s\n[airlock: the output goes on past %u MiB: read the rest with "
                               "job_output from offset %.0f]\n", c->text ? c->text : "",
                               MAX_RESOURCE_TEXT >> 20, c->offset)
                    : NULL;
      cJSON_AddStringToObject (item, "text", cut ? cut : c->text ? c->text : "");
      free (cut);
      cJSON_AddItemToArray (cJSON_AddArrayToObject (r, "contents"), item);
      reply (c->rpc_id, r);
    }
  call_free (c);
}

static void
tool_message (struct call *c, const cJSON *m)
{
  const char *name = c->tool->name;
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive (m, "event");
  bool ok = cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (m, "ok"));
  if (!strcmp (name, "exec"))
    return exec_message (c, m);
  if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "progress"))
    {
      const cJSON *msg = cJSON_GetObjectItemCaseSensitive (m, "message");
      return notify_progress (c, c->progress + 1, cJSON_IsString (msg) ? msg->valuestring : NULL);
    }
  if (!ok)
    return finish_daemon_error (c, m);
  const char *session = arg_string (c, "session");
  cJSON *o = NULL;
  char *text = NULL;
  if (!strcmp (name, "open_session"))
    {
      remember (&srv.opened, &srv.nopened, session);
      o = cJSON_CreateObject ();
      static const char *const keys[] = { "session", "backend", "cwd", "approval" };
      for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        copy_field (o, m, keys[i], NULL);
      cJSON_AddBoolToObject (o, "shared", srv.share);
      copy_field (o, m, "posture", NULL);
      copy_field (o, m, "warnings", NULL);
      const cJSON *be = cJSON_GetObjectItemCaseSensitive (m, "backend");
      const cJSON *dir = cJSON_GetObjectItemCaseSensitive (m, "cwd");
      text = xprintf ("session %s open: %s backend, in %s; dangerous commands: %s", session,
                      cJSON_IsString (be) ? be->valuestring : "?",
                      cJSON_IsString (dir) ? dir->valuestring : "?",
                      !strcmp (srv.mode, "approve")  ? "allowed (approve mode)"
                      : !strcmp (srv.mode, "deny") ? "refused (nobody can approve them here)"
                                                   : "a person is asked");
    }
  else if (!strcmp (name, "close_session"))
    {
      forget (srv.opened, &srv.nopened, session);
      o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "session", session);
      cJSON_AddBoolToObject (o, "closed", true);
      text = xprintf ("session %s closed", session);
    }
  else if (!strcmp (name, "list_sessions"))
    {
      o = cJSON_CreateObject ();
      cJSON *arr = cJSON_AddArrayToObject (o, "sessions");
      const cJSON *s;
      size_t len = 0;
      FILE *f = open_memstream (&text, &len);
      cJSON_ArrayForEach (s, cJSON_GetObjectItemCaseSensitive (m, "sessions"))
        {
          cJSON *i = cJSON_CreateObject ();
          static const char *const keys[] = { "session", "state", "backend", "cwd", "jobs",
                                              "access" };
          for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            copy_field (i, s, keys[k], NULL);
          if (f)
            {
              char *line = cJSON_PrintUnformatted (i);
              fprintf (f, "%s\n", line ? line : "");
              free (line);
            }
          cJSON_AddItemToArray (arr, i);
        }
      if (f)
        fclose (f);
      if (!cJSON_GetArraySize (arr))
        {
          free (text);
          text = strdup ("no sessions");
        }
    }
  else if (!strcmp (name, "job_output") && c->step == 0)
    return read_job_output (c);
  else if (!strcmp (name, "job_kill") && c->step == 0)
    {
      c->step = 1;
      cJSON *req = op_request ("job_wait", session);
      copy_field (req, c->args, "job", NULL);
      cJSON_AddNumberToObject (req, "timeout", 5);
      return daemon_request (c, req);
    }
  else if (!strcmp (name, "job_output") || !strcmp (name, "job_kill"))
    {
      o = job_state (m, c);
      text = job_text (o);
    }
  else if (!strcmp (name, "job_stdin"))
    {
      o = cJSON_CreateObject ();
      copy_field (o, c->args, "job", NULL);
      const char *data = arg_string (c, "data");
      cJSON_AddNumberToObject (o, "bytes", data ? (double) strlen (data) : 0);
      cJSON_AddBoolToObject (o, "eof", cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (c->args, "eof")));
      text = xprintf ("%zu bytes written%s", data ? strlen (data) : 0,
                    cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (c->args, "eof"))
                        ? ", stdin closed" : "");
    }
  else if (!strcmp (name, "job_resize"))
    {
      o = cJSON_CreateObject ();
      static const char *const keys[] = { "job", "rows", "cols" };
      for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        copy_field (o, c->args, keys[k], NULL);
      text = xprintf ("job %.0f's terminal is now %.0f rows by %.0f columns",
                      cJSON_GetObjectItemCaseSensitive (c->args, "job")->valuedouble,
                      cJSON_GetObjectItemCaseSensitive (c->args, "rows")->valuedouble,
                      cJSON_GetObjectItemCaseSensitive (c->args, "cols")->valuedouble);
    }
  else /* upload, download */
    {
      o = cJSON_Duplicate (m, true);
      cJSON_DeleteItemFromObject (o, "id");
      cJSON_DeleteItemFromObject (o, "ok");
      cJSON *copy = cJSON_Duplicate (o, true);
      cJSON_DeleteItemFromObject (copy, "data");
      text = cJSON_PrintUnformatted (copy);
      cJSON_Delete (copy);
    }
  finish (c, o, text, NULL);
}

static void
daemon_message (const cJSON *m)
{
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (m, "id");
  if (!cJSON_IsNumber (id))
    return;
  for (struct call *c = srv.calls; c; c = c->next)
    if (c->daemon_id == (long) id->valuedouble)
      return c->tool ? tool_message (c, m) : resource_message (c, m);
}

/* The daemon went away: every call waiting on it fails; the next call
 * starts a new one. */
static void
daemon_lost (void)
{
  close (srv.dc.fd);
  srv.daemon_up = false;
  while (srv.calls)
    finish_error (srv.calls, "daemon_gone",
                  "the airlock daemon went away (see its daemon.log); its sessions are lost");
}

/* ---- the client's messages ---- */

static struct call *
new_call (const cJSON *id, const cJSON *params)
{
  struct call *c = calloc (1, sizeof *c);
  if (!c)
    return NULL;
  c->rpc_id = cJSON_Duplicate (id, true);
  const cJSON *tok = cJSON_GetObjectItemCaseSensitive (
      cJSON_GetObjectItemCaseSensitive (params, "_meta"), "progressToken");
  if (cJSON_IsString (tok) || cJSON_IsNumber (tok))
    c->token = cJSON_Duplicate (tok, true);
  c->next = srv.calls;
  srv.calls = c;
  return c;
}

static void
initialize (const cJSON *id, const cJSON *params)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (params, "protocolVersion");
  srv.protocol = LATEST_PROTOCOL;
  for (size_t i = 0; cJSON_IsString (v) && i < sizeof protocols / sizeof *protocols; i++)
    if (!strcmp (v->valuestring, protocols[i]))
      srv.protocol = protocols[i];
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive (params, "capabilities");
  const cJSON *el = cJSON_GetObjectItemCaseSensitive (caps, "elicitation");
  /* form elicitation: an empty object (before URL mode existed) or "form" */
  srv.elicitation = cJSON_IsObject (el) && (!el->child || cJSON_GetObjectItemCaseSensitive (el, "form"));
  /* ask and interactive: a person answers through elicitation, else nobody can */
  const char *mode = srv.approval_flag ? srv.approval_flag
                     : srv.cfg         ? approval_default_mode_name (srv.cfg, srv.elicitation)
                                       : "deny";
  if (!strcmp (mode, "ask") || !strcmp (mode, "interactive"))
    mode = srv.elicitation ? "interactive" : "deny";
  srv.mode = mode;
  cJSON *r = cJSON_CreateObject ();
  cJSON_AddStringToObject (r, "protocolVersion", srv.protocol);
  cJSON *c = cJSON_AddObjectToObject (r, "capabilities");
  cJSON_AddBoolToObject (cJSON_AddObjectToObject (c, "tools"), "listChanged", false);
  cJSON *res = cJSON_AddObjectToObject (c, "resources");
  cJSON_AddBoolToObject (res, "subscribe", false);
  cJSON_AddBoolToObject (res, "listChanged", false);
  cJSON *info = cJSON_AddObjectToObject (r, "serverInfo");
  cJSON_AddStringToObject (info, "name", "airlock");
  cJSON_AddStringToObject (info, "title", "airlock sandboxed command execution");
  cJSON_AddStringToObject (info, "version", AIRLOCK_VERSION);
  cJSON_AddStringToObject (
      r, "instructions",
      "Run shell commands in sandboxes: open_session once, then exec as often as needed (cd and "
      "exports carry over), close_session when done. Dangerous commands pass an approval gate; "
      "a refused command must not be retried or rephrased: ask the person you work for.");
  reply (id, r);
}

static void
tools_call (const cJSON *id, const cJSON *params)
{
  const cJSON *name = cJSON_GetObjectItemCaseSensitive (params, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive (params, "arguments");
  if (!cJSON_IsString (name))
    return reply_error (id, -32602, "tools/call needs a tool name (params.name)");
  const struct mcp_tool *tool = mcp_tool_find (name->valuestring);
  if (!tool)
    return reply_error (id, -32602, "unknown tool \"%.64s\" (see tools/list)", name->valuestring);
  if (args && !cJSON_IsObject (args))
    return reply_error (id, -32602, "params.arguments must be an object");
  if (!srv.mode)
    return reply_error (id, -32600, "initialize first");
  struct call *c = new_call (id, params);
  if (!c)
    return reply_error (id, -32603, "out of memory");
  c->tool = tool;
  c->args = args ? cJSON_Duplicate (args, true) : cJSON_CreateObject ();
  char *err = mcp_tool_check_args (tool, c->args);
  if (err)
    {
      finish_error (c, "bad_arguments", "%s", err);
      return free (err);
    }
  if (!daemon_connect ())
    return finish_error (c, "daemon_gone", "the airlock daemon cannot be started (see stderr)");
  start_tool (c);
}

static void
resources_read (const cJSON *id, const cJSON *params)
{
  const cJSON *uri = cJSON_GetObjectItemCaseSensitive (params, "uri");
  unsigned long job = 0;
  char session[65], tail[8] = "";
  if (!cJSON_IsString (uri)
      || sscanf (uri->valuestring, "airlock://sessions/%64[A-Za-z0-9._-]/jobs/%lu/outpu%7s",
                 session, &job, tail) != 3
      || strcmp (tail, "t") || !job)
    return reply_error (id, -32602, "not a resource of airlock: expected "
                        "airlock://sessions/SESSION/jobs/JOB/output");
  if (!daemon_connect ())
    return reply_error (id, -32603, "the airlock daemon cannot be started");
  struct call *c = new_call (id, params);
  if (!c)
    return reply_error (id, -32603, "out of memory");
  c->uri = strdup (uri->valuestring);
  read_more (c);
}

static void
cancelled (const cJSON *params)
{
  const cJSON *rid = cJSON_GetObjectItemCaseSensitive (params, "requestId");
  for (struct call *c = srv.calls; c; c = c->next)
    if (cJSON_Compare (c->rpc_id, rid, true))
      {
        c->cancelled = true;
        if (c->tool && !strcmp (c->tool->name, "exec") && c->job)
          kill_job (c);
        return;
      }
}

static void
client_message (const char *line, size_t len)
{
  cJSON *m = cJSON_ParseWithLength (line, len);
  if (!m)
    return reply_error (NULL, -32700, "parse error: not JSON");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (m, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive (m, "method");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive (m, "params");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive (m, "jsonrpc");
  bool id_ok = cJSON_IsString (id) || cJSON_IsNumber (id);
  if (cJSON_IsArray (m))
    reply_error (NULL, -32600, "batches are not supported: one message per line");
  else if (!cJSON_IsObject (m) || !cJSON_IsString (ver) || strcmp (ver->valuestring, "2.0"))
    reply_error (id_ok ? id : NULL, -32600, "not a JSON-RPC 2.0 message (\"jsonrpc\":\"2.0\")");
  else if (!method && id_ok
           && (cJSON_GetObjectItemCaseSensitive (m, "result")
               || cJSON_GetObjectItemCaseSensitive (m, "error")))
    elicit_answered (m);
  else if (!cJSON_IsString (method) || (id && !id_ok) || (params && !cJSON_IsObject (params)))
    reply_error (id_ok ? id : NULL, -32600, "invalid request: a string method, a string or "
                 "number id, and an object of params");
  else if (!id) /* a notification: never answered */
    {
      if (!strcmp (method->valuestring, "notifications/cancelled"))
        cancelled (params);
    }
  else if (!strcmp (method->valuestring, "initialize"))
    initialize (id, params);
  else if (!strcmp (method->valuestring, "ping"))
    reply (id, cJSON_CreateObject ());
  else if (!strcmp (method->valuestring, "tools/list"))
    {
      cJSON *r = cJSON_CreateObject ();
      cJSON_AddItemToObject (r, "tools", mcp_tools_list ());
      reply (id, r);
    }
  else if (!strcmp (method->valuestring, "tools/call"))
    tools_call (id, params);
  else if (!strcmp (method->valuestring, "resources/list"))
    {
      cJSON *r = cJSON_CreateObject ();
      cJSON *arr = cJSON_AddArrayToObject (r, "resources");
      for (size_t i = 0; i < srv.noffered; i++)
        {
          cJSON *o = cJSON_CreateObject ();
          cJSON_AddStringToObject (o, "uri", srv.offered[i]);
          cJSON_AddStringToObject (o, "name", strstr (srv.offered[i], "sessions/") + 9);
          cJSON_AddStringToObject (o, "mimeType", "text/plain");
          cJSON_AddItemToArray (arr, o);
        }
      reply (id, r);
    }
  else if (!strcmp (method->valuestring, "resources/templates/list"))
    reply (id, cJSON_Parse ("{\"resourceTemplates\":[{\"uriTemplate\":"
                            "\"airlock://sessions/{session}/jobs/{job}/output\",\"name\":"
                            "\"job-output\",\"title\":\"A job's output\",\"description\":\"stdout "
                            "and stderr of a job, merged, as the session keeps it\","
                            "\"mimeType\":\"text/plain\"}]}"));
  else if (!strcmp (method->valuestring, "resources/read"))
    resources_read (id, params);
  else
    reply_error (id, -32601, "method not found: %.80s", method->valuestring);
  cJSON_Delete (m);
}

/* ---- leaving ---- */

/* The client left: close the sessions this server opened, unless a
 * stable --client-id lets the same client come back to them. */
static void
close_opened (void)
{
  if (srv.stable_owner || !srv.nopened || !daemon_connect ())
    return;
  long first = srv.next_id + 1;
  for (size_t i = 0; i < srv.nopened; i++)
    daemon_request (NULL, op_request ("close", srv.opened[i]));
  long last = srv.next_id;
  while (first <= last)
    {
      struct pollfd p = { .fd = srv.dc.fd, .events = POLLIN };
      if (poll (&p, 1, 10000) <= 0)
        return;
      cJSON *m = daemon_read (&srv.dc);
      if (!m)
        return;
      const cJSON *id = cJSON_GetObjectItemCaseSensitive (m, "id");
      if (cJSON_IsNumber (id) && (long) id->valuedouble == last)
        first = last + 1;
      cJSON_Delete (m);
    }
}

static const char mcp_usage[]
    = "Usage: airlock mcp [--approval MODE] [--client-id NAME] [--share]\n"
      "                   [--session-defaults JSON] [--files-root DIR]...\n"
      "An MCP server on stdin/stdout (JSON-RPC 2.0, one message per line) with the\n"
      "tools open_session, close_session, list_sessions, exec, job_output, job_stdin,\n"
      "job_resize, job_kill, upload and download.  For an MCP client's configuration.\n"
      "  --approval MODE   interactive or ask (a person answers through the client's\n"
      "                    elicitation; deny when it has none), deny, approve\n"
      "                    (default: policy.mode)\n"
      "  --client-id NAME  who this client is: its sessions stay when it leaves and\n"
      "                    are its own when it comes back (default: a new id each run,\n"
      "                    and its sessions are closed when it leaves)\n"
      "  --share           sessions it opens may be used by other clients\n"
      "  --session-defaults JSON  settings for every open_session, as the API's open\n"
      "                    takes them: {\"backend\":\"docker\",\"workdir\":\"/src\",...}\n"
      "  --files-root DIR  a host directory the agent may name as a session's workdir,\n"
      "                    an upload's source or a download's dest (repeatable;\n"
      "                    default: the defaults' workdir, else the working directory)\n"
      "See docs/mcp.md.\n";

static bool
add_root (const char *dir, const char *what)
{
  char *real = realpath (dir, NULL);
  struct stat st;
  if (!real || stat (real, &st) < 0 || !S_ISDIR (st.st_mode))
    {
      fprintf (stderr, "airlock mcp: %s %s: %s\n", what, dir,
               real ? "not a directory" : strerror (errno));
      free (real);
      return false;
    }
  char **p = realloc (srv.roots, (srv.nroots + 1) * sizeof *p);
  if (!p)
    return free (real), false;
  srv.roots = p;
  srv.roots[srv.nroots++] = real;
  return true;
}

static int
parse_options (int argc, char **argv)
{
  static const struct option opts[] = { { "approval", required_argument, NULL, 'a' },
                                        { "client-id", required_argument, NULL, 'c' },
                                        { "share", no_argument, NULL, 's' },
                                        { "session-defaults", required_argument, NULL, 'd' },
                                        { "files-root", required_argument, NULL, 'r' },
                                        { "help", no_argument, NULL, 'h' },
                                        { NULL, 0, NULL, 0 } };
  static const char *const open_keys[] = { "workdir", "backend", "image", "host", "network",
                                           "memory", "idle_timeout", "env", "config" };
  int o;
  while ((o = getopt_long (argc, argv, "", opts, NULL)) != -1)
    switch (o)
      {
      case 'a':
        if (strcmp (optarg, "interactive") && strcmp (optarg, "ask") && strcmp (optarg, "deny")
            && strcmp (optarg, "approve"))
          {
            fprintf (stderr, "airlock mcp: --approval: expected interactive, ask, deny or "
                     "approve, got \"%s\"\n", optarg);
            return 2;
          }
        srv.approval_flag = optarg;
        break;
      case 'c':
        if (!*optarg || strlen (optarg) > 120)
          {
            fprintf (stderr, "airlock mcp: --client-id: 1 to 120 characters\n");
            return 2;
          }
        snprintf (srv.owner, sizeof srv.owner, "mcp:%s", optarg);
        srv.stable_owner = true;
        break;
      case 's':
        srv.share = true;
        break;
      case 'd':
        cJSON_Delete (srv.defaults);
        srv.defaults = cJSON_Parse (optarg);
        if (!cJSON_IsObject (srv.defaults))
          {
            fprintf (stderr, "airlock mcp: --session-defaults: expected a JSON object, like "
                     "'{\"backend\":\"docker\"}'\n");
            return 2;
          }
        const cJSON *d;
        cJSON_ArrayForEach (d, srv.defaults)
          {
            bool known = false;
            for (size_t i = 0; i < sizeof open_keys / sizeof *open_keys; i++)
              known |= !strcmp (d->string, open_keys[i]);
            if (!known)
              {
                fprintf (stderr, "airlock mcp: --session-defaults: unknown field \"%s\" (it "
                         "takes workdir, backend, image, host, network, memory, idle_timeout, "
                         "env, config; the approval mode is --approval)\n", d->string);
                return 2;
              }
          }
        break;
      case 'r':
        if (!add_root (optarg, "--files-root"))
          return 2;
        break;
      case 'h':
        fputs (mcp_usage, stdout);
        return 0;
      default:
        fputs (mcp_usage, stderr);
        return 2;
      }
  if (optind < argc)
    {
      fprintf (stderr, "airlock mcp: unexpected argument \"%s\"\n%s", argv[optind], mcp_usage);
      return 2;
    }
  /* The sessions' default workdir is shared with them anyway; without
   * any root, the server's working directory. */
  const cJSON *w = cJSON_GetObjectItemCaseSensitive (srv.defaults, "workdir");
  if (cJSON_IsString (w) && !add_root (w->valuestring, "--session-defaults' workdir"))
    return 2;
  char cwd[4096];
  if (!srv.nroots && (!getcwd (cwd, sizeof cwd) || !add_root (cwd, "the working directory")))
    return 2;
  return -1;
}

int
mcp_command (int argc, char **argv)
{
  int rc = parse_options (argc, argv);
  if (rc >= 0)
    return rc;
  if (!srv.owner[0])
    {
      char hex[17];
      random_hex (hex, 8);
      snprintf (srv.owner, sizeof srv.owner, "mcp:%s", hex);
    }
  char *err = NULL;
  srv.cfg = config_load (&err);
  if (!srv.cfg)
    {
      /* said at once: a broken configuration is the person's to fix */
      fprintf (stderr, "airlock mcp: %s\n", err ? err : "cannot read the configuration");
      free (err);
      return 1;
    }
  signal (SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset (&sigs);
  sigaddset (&sigs, SIGINT);
  sigaddset (&sigs, SIGTERM);
  sigaddset (&sigs, SIGHUP);
  sigprocmask (SIG_BLOCK, &sigs, NULL);
  int sfd = signalfd (-1, &sigs, SFD_CLOEXEC);
  if (!daemon_connect ())
    return 1;
  char *line = NULL;
  size_t len = 0, cap = 0;
  bool skipping = false; /* the rest of a line longer than MAX_MESSAGE */
  for (;;)
    {
      struct pollfd p[3] = { { .fd = 0, .events = POLLIN },
                             { .fd = srv.daemon_up ? srv.dc.fd : -1, .events = POLLIN },
                             { .fd = sfd, .events = POLLIN } };
      if (!srv.dc.len && poll (p, 3, -1) < 0)
        continue;
      if (p[2].revents)
        break;
      if (srv.daemon_up && (srv.dc.len || p[1].revents))
        {
          cJSON *m = daemon_read (&srv.dc);
          if (!m)
            daemon_lost ();
          else
            daemon_message (m);
          cJSON_Delete (m);
          continue;
        }
      if (!p[0].revents)
        continue;
      if (len + 65536 > cap)
        {
          char *q = realloc (line, cap = len + 65536 * 2);
          if (!q)
            break;
          line = q;
        }
      ssize_t n = read (0, line + len, cap - len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      len += (size_t) n;
      size_t start = 0;
      for (char *nl; (nl = memchr (line + start, '\n', len - start));)
        {
          size_t end = (size_t) (nl - line);
          if (!skipping && end > start)
            client_message (line + start, end - start);
          skipping = false;
          start = end + 1;
        }
      if (len - start > MAX_MESSAGE)
        {
          if (!skipping)
            reply_error (NULL, -32700, "message longer than 16 MiB: ignored up to its newline");
          skipping = true;
          start = len;
        }
      memmove (line, line + start, len - start);
      len -= start;
    }
  free (line);
  close_opened ();
  return 0;
}

/* SPDX-License-Identifier: MIT */
/* The approval gate in the API: every exec, foreground or background,
 * passes api_gate before it reaches a backend.  A command that needs an
 * answer is parked here; the client that sent it gets an "approval"
 * event and answers with op "answer" (docs/api.md).  No answer in time,
 * the client gone, or the session gone: denied. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "redact.h"
#include "xprintf.h"

struct asking
{
  unsigned long number; /* what the client answers to */
  struct client *c;
  cJSON *req; /* the exec request, replayed once approved */
  cJSON *id;
  struct dsession *s;
  enum gate_mode mode;
  char *shown; /* what is logged and shown */
  struct gate_decision d;
  long long deadline_ms;
  struct asking *next;
};

static struct asking *askings;
static unsigned long next_number = 1;

static cJSON *
rules_json (const struct gate_decision *dec)
{
  cJSON *arr = cJSON_CreateArray ();
  for (size_t i = 0; i < dec->n_rules; i++)
    {
      cJSON *o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "id", dec->rules[i]->id);
      cJSON_AddStringToObject (o, "description", dec->rules[i]->description);
      cJSON_AddItemToArray (arr, o);
    }
  return arr;
}

static void
send_denied (struct client *c, const cJSON *id, const struct gate_decision *dec)
{
  char *msg = gate_denial_message (dec);
  cJSON *r = reply (id, false);
  cJSON *e = cJSON_AddObjectToObject (r, "error");
  cJSON_AddStringToObject (e, "code", "denied");
  cJSON_AddStringToObject (e, "message", msg ? msg : "denied");
  cJSON_AddStringToObject (e, "decided_by", dec->decided_by);
  cJSON_AddItemToObject (e, "rules", rules_json (dec));
  free (msg);
  client_send (c, r);
}

/* Record, then act.  An unrecorded decision never runs. */
static bool
settle (struct daemon *d, struct dsession *s, struct client *c,
        const cJSON *id, const char *command, struct gate_decision *dec)
{
  char *err = NULL;
  bool allow = dec->verdict == GATE_ALLOW;
  if (approval_record (d->approval, s->name, s->backend, command, dec,
                       allow ? "allow" : "deny", dec->decided_by, &err) < 0)
    {
      send_error (c, id, "audit_log",
                  "the command was not run: its approval decision could not "
                  "be written to the audit log: %s", err ? err : "error");
      free (err);
      return false;
    }
  if (!allow)
    send_denied (c, id, dec);
  else if (!strcmp (dec->decided_by, "mode-approve"))
    fprintf (stderr, "airlock daemon: WARNING: session %s: approval mode "
             "\"approve\" ran a command that needs approval (%s)\n", s->name,
             dec->rules[0]->id);
  return allow;
}

bool
api_gate (struct daemon *d, struct dsession *s, struct client *c,
          const cJSON *req, const cJSON *id, const char *command,
          const char *input, const char *shown)
{
  enum gate_mode mode = s->mode;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (req, "approval");
  if (m)
    {
      int v = cJSON_IsString (m) ? gate_mode_parse (m->valuestring) : -1;
      if (v < 0)
        {
          send_error (c, id, "bad_request", "field \"approval\" must be one of "
                      "\"interactive\", \"ask\", \"deny\", \"approve\"");
          return false;
        }
      mode = (enum gate_mode) v;
    }
  char *err = NULL;
  if (approval_refresh (d->approval, &err) < 0)
    {
      send_error (c, id, "policy_error",
                  "the command was not run: the approval rules cannot be "
                  "loaded: %s", err ? err : "error");
      free (err);
      return false;
    }
  struct gate_decision dec;
  /* An exec on a terminal (its "pty" checked by op_exec): what is typed
   * there is judged now, by what the command is. */
  bool terminal = cJSON_IsObject (cJSON_GetObjectItemCaseSensitive (req, "pty"));
  approval_decide (d->approval, s->cfg, mode, s->host_access, &s->approvals, command,
                   input, terminal, &dec);
  if (dec.verdict != GATE_ASK)
    return settle (d, s, c, id, shown, &dec);

  struct asking *a = calloc (1, sizeof *a);
  if (!a)
    {
      send_error (c, id, "busy", "out of memory");
      return false;
    }
  a->number = next_number++;
  a->c = c;
  a->req = cJSON_Duplicate (req, true);
  a->id = id ? cJSON_Duplicate (id, true) : cJSON_CreateNull ();
  a->s = s;
  a->mode = mode;
  a->shown = strdup (shown);
  a->d = dec;
  unsigned timeout = ruleset_settings (approval_rules (d->approval))->approval_timeout;
  a->deadline_ms = session_now_ms () + (long long) timeout * 1000;
  a->next = askings;
  askings = a;

  cJSON *ev = cJSON_CreateObject ();
  if (id)
    cJSON_AddItemToObject (ev, "id", cJSON_Duplicate (id, true));
  cJSON_AddStringToObject (ev, "event", "approval");
  cJSON_AddNumberToObject (ev, "approval", (double) a->number);
  char *redacted = redact_secrets (shown);
  cJSON_AddStringToObject (ev, "command", redacted ? redacted : "<redacted>");
  free (redacted);
  cJSON_AddStringToObject (ev, "session", s->name);
  cJSON_AddItemToObject (ev, "rules", rules_json (&dec));
  cJSON_AddNumberToObject (ev, "timeout_ms", (double) timeout * 1000);
  client_send (c, ev);
  return false;
}

static void
unlink_asking (struct asking *a)
{
  for (struct asking **p = &askings; *p; p = &(*p)->next)
    if (*p == a)
      {
        *p = a->next;
        break;
      }
  cJSON_Delete (a->req);
  cJSON_Delete (a->id);
  free (a->shown);
  free (a);
}

/* Deny a parked command (deadline, client or session gone).  The client,
 * if still there, gets the denial as the exec's answer. */
static void
deny_asking (struct daemon *d, struct asking *a, const char *why)
{
  a->d.verdict = GATE_DENY;
  a->d.decided_by = why;
  char *err = NULL;
  if (approval_record (d->approval, a->s ? a->s->name : "?",
                       a->s ? a->s->backend : "?", a->shown, &a->d,
                       "deny", why, &err) < 0)
    free (err); /* denied either way */
  if (a->c)
    send_denied (a->c, a->id, &a->d);
  unlink_asking (a);
}

void
api_op_answer (struct daemon *d, struct client *c, const cJSON *req,
               const cJSON *id)
{
  const cJSON *num = cJSON_GetObjectItemCaseSensitive (req, "approval");
  const cJSON *ans = cJSON_GetObjectItemCaseSensitive (req, "answer");
  if (!cJSON_IsNumber (num))
    return send_error (c, id, "missing_field",
                       "field \"approval\" (the number of the approval event) "
                       "is required");
  static const char *const answers[] = { "once", "session", "always", "deny" };
  int which = -1;
  for (int i = 0; i < 4 && cJSON_IsString (ans); i++)
    if (!strcmp (ans->valuestring, answers[i]))
      which = i;
  if (which < 0)
    return send_error (c, id, "bad_request", "field \"answer\" must be one of "
                       "\"once\", \"session\", \"always\", \"deny\"");
  struct asking *a = askings;
  /* Only the connection that was asked may answer. */
  while (a && !(a->number == (unsigned long) num->valuedouble && a->c == c))
    a = a->next;
  if (!a)
    return send_error (c, id, "no_approval",
                       "no pending approval %g on this connection (answered, "
                       "timed out, or asked elsewhere)", num->valuedouble);
  client_send (c, reply (id, true));
  const char *who = a->mode == GATE_MODE_INTERACTIVE ? "person" : "client";
  if (which == 3)
    return deny_asking (d, a, who);

  char *err = NULL;
  if (which == 1)
    for (size_t i = 0; i < a->d.n_rules; i++)
      id_set_add (&a->s->approvals, a->d.rules[i]->id);
  if (which == 2 && approval_remember (d->approval, &a->d, &err) < 0)
    {
      /* Still approved once: the person said yes; only keeping it failed. */
      send_error (c, NULL, "allowlist", "could not save the approval: %s", err);
      free (err);
      err = NULL;
    }
  a->d.verdict = GATE_ALLOW;
  a->d.decided_by = who;
  if (approval_record (d->approval, a->s->name, a->s->backend, a->shown,
                       &a->d, "allow", who, &err) < 0)
    {
      send_error (c, a->id, "audit_log",
                  "the command was not run: its approval decision could not "
                  "be written to the audit log: %s", err ? err : "error");
      free (err);
      return unlink_asking (a);
    }
  /* Unlink first: the exec may finish (and the session go) at once. */
  for (struct asking **p = &askings; *p; p = &(*p)->next)
    if (*p == a)
      {
        *p = a->next;
        break;
      }
  api_resume_approved (d, c, a->req, a->id);
  cJSON_Delete (a->req);
  cJSON_Delete (a->id);
  free (a->shown);
  free (a);
}

void
api_approval_tick (struct daemon *d)
{
  long long now = session_now_ms ();
  for (struct asking *a = askings, *next; a; a = next)
    {
      next = a->next;
      if (now >= a->deadline_ms)
        deny_asking (d, a, "timeout");
    }
}

void
api_approval_client_gone (struct daemon *d, struct client *c)
{
  for (struct asking *a = askings, *next; a; a = next)
    {
      next = a->next;
      if (a->c == c)
        {
          a->c = NULL;
          deny_asking (d, a, "client-gone");
        }
    }
}

void
api_approval_session_gone (struct daemon *d, struct session *s)
{
  for (struct asking *a = askings, *next; a; a = next)
    {
      next = a->next;
      if (a->s && a->s->s == s)
        deny_asking (d, a, "session-closed");
    }
}

bool
api_approval_waiting (struct client *c)
{
  for (struct asking *a = askings; a; a = a->next)
    if (a->c == c)
      return true;
  return false;
}

/* ---- judge: the gate's verdict for `airlock run` ---- */

/* The configuration a judge resolves (the files and the client's AIRLOCK_*
 * variables, as for an open), kept while neither those nor the files
 * change: a judge costs a stat of each file, not a parse. */
static struct
{
  char *env_text;
  struct airlock_config *cfg;
} judged;

static struct airlock_config *
judge_config (const cJSON *cenv, char **err)
{
  char *text = cenv ? cJSON_PrintUnformatted (cenv) : strdup ("");
  if (!text)
    return NULL;
  if (judged.cfg && !strcmp (judged.env_text, text)
      && !config_files_changed (judged.cfg))
    {
      free (text);
      return judged.cfg;
    }
  char **envp = cenv ? config_env_from_json (cenv, err) : NULL;
  static const char *const no_env[] = { NULL };
  struct airlock_config *cfg = NULL;
  if (!*err)
    cfg = config_load_with (cenv ? (const char *const *) envp : no_env, NULL,
                            NULL, err);
  config_env_free (envp);
  if (!cfg)
    {
      free (text);
      return NULL;
    }
  config_free (judged.cfg);
  free (judged.env_text);
  judged.cfg = cfg;
  judged.env_text = text;
  return cfg;
}

void
api_op_judge (struct daemon *d, struct client *c, const cJSON *req,
              const cJSON *id)
{
  const cJSON *cmd = cJSON_GetObjectItemCaseSensitive (req, "command");
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (req, "approval");
  const cJSON *ans = cJSON_GetObjectItemCaseSensitive (req, "answer");
  const cJSON *cenv = cJSON_GetObjectItemCaseSensitive (req, "client_env");
  if (!cmd)
    return send_error (c, id, "missing_field", "field \"command\" is required");
  if (!cJSON_IsString (cmd))
    return send_error (c, id, "wrong_type", "field \"command\" must be a string");
  if (cenv && !cJSON_IsObject (cenv))
    return send_error (c, id, "wrong_type", "field \"client_env\" must be an object");
  int mode = -1;
  if (m && (!cJSON_IsString (m) || (mode = gate_mode_parse (m->valuestring)) < 0))
    return send_error (c, id, "bad_request", "field \"approval\" must be one of "
                       "\"interactive\", \"ask\", \"deny\", \"approve\"");
  static const char *const answers[] = { "once", "session", "always", "deny",
                                         "timeout" };
  int which = -1;
  for (int i = 0; i < 5 && cJSON_IsString (ans); i++)
    if (!strcmp (ans->valuestring, answers[i]))
      which = i;
  if (ans && which < 0)
    return send_error (c, id, "bad_request", "field \"answer\" must be one of "
                       "\"once\", \"session\", \"always\", \"deny\", \"timeout\"");

  char *err = NULL;
  struct airlock_config *cfg = judge_config (cenv, &err);
  if (!cfg)
    {
      send_error (c, id, "config_error", "%s", err ? err : "out of memory");
      free (err);
      return;
    }
  /* The rules as they are now; a file broken since is an error, as it
   * would be for a daemon starting now. */
  if (approval_refresh (d->approval, &err) < 0)
    {
      send_error (c, id, "policy_error", "%s", err ? err : "error");
      free (err);
      return;
    }
  if (mode < 0)
    mode = (int) approval_default_mode (cfg, false);
  const char *command = cmd->valuestring;
  /* A fresh sandbox of the host's system directories with a read-write
   * workdir reaches the host: the full gate. */
  struct gate_decision dec;
  approval_decide (d->approval, cfg, (enum gate_mode) mode, true, NULL, command,
                   NULL, false, &dec);
  unsigned timeout = ruleset_settings (approval_rules (d->approval))->approval_timeout;
  char *warning = NULL;
  if (dec.verdict == GATE_ASK && which < 0)
    {
      /* Nothing is recorded yet: the caller asks, then judges again with
       * the answer. */
      cJSON *r = reply (id, true);
      cJSON_AddStringToObject (r, "verdict", "ask");
      cJSON_AddStringToObject (r, "decided_by", dec.decided_by);
      cJSON_AddItemToObject (r, "rules", rules_json (&dec));
      cJSON_AddNumberToObject (r, "timeout_ms", (double) timeout * 1000);
      client_send (c, r);
      return;
    }
  if (dec.verdict == GATE_ASK)
    {
      const char *who = mode == GATE_MODE_INTERACTIVE ? "person" : "client";
      if (which == 2 && approval_remember (d->approval, &dec, &err) < 0)
        {
          /* Still approved once: only keeping it failed. */
          warning = xprintf ("could not save the approval: %s", err);
          free (err);
          err = NULL;
        }
      dec.verdict = which >= 3 ? GATE_DENY : GATE_ALLOW;
      dec.decided_by = which == 4 ? "timeout" : who;
    }
  bool allow = dec.verdict == GATE_ALLOW;
  if (approval_record (d->approval, "-", "local", command, &dec,
                       allow ? "allow" : "deny", dec.decided_by, &err) < 0)
    {
      send_error (c, id, "audit_log", "%s", err ? err : "error");
      free (err);
      free (warning);
      return;
    }
  cJSON *r = reply (id, true);
  cJSON_AddStringToObject (r, "verdict", allow ? "allow" : "deny");
  cJSON_AddStringToObject (r, "decided_by", dec.decided_by);
  cJSON_AddItemToObject (r, "rules", rules_json (&dec));
  if (!allow)
    {
      char *msg = gate_denial_message (&dec);
      cJSON_AddStringToObject (r, "message", msg ? msg : "denied");
      free (msg);
    }
  if (warning)
    cJSON_AddStringToObject (r, "warning", warning);
  free (warning);
  client_send (c, r);
}

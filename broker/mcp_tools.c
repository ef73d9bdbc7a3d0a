/* SPDX-License-Identifier: MIT */
/* The tools `airlock mcp` offers: their names, descriptions and JSON
 * Schemas (what tools/list shows), and the check of a call's arguments
 * against the input schema, so that a misspelt field is an error the
 * agent can read and fix, never a default silently used. */
#define _GNU_SOURCE
#include "mcp_tools.h"
#include "supervisor_protocol.h"
#include "xprintf.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_ (x)
/* a side of a job's terminal, as the API takes it */
#define PTY_SIDE "{\"type\":\"integer\",\"minimum\":1,\"maximum\":" STRINGIFY (SUP_MAX_PTY_SIDE) "}"
#define POSTURE "{\"type\":\"object\",\"description\":\"what the session's sandbox is (docs/api.md, Posture)\"}"
#define SESSION "\"session\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9._-]{1,64}$\"," \
                "\"description\":\"the session's name\"}"
#define JOB "\"job\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"a job id, from exec\"}"
#define ENV(what) "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}," \
                  "\"description\":\"" what "\"}"
#define JOB_STATE "\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\",\"killed\"]}," \
                  "\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}," \
                  "\"cause\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}"

static const struct mcp_tool tools[] = {
  { "open_session", "Open a sandbox session",
    "Open a named session: a sandbox (local namespaces, docker, ssh, singularity, daytona or "
    "modal) with a shell state that carries cd and exports from one command to the next. "
    "Sends progress while a slow backend starts.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],"
    "\"properties\":{" SESSION ","
    "\"workdir\":{\"type\":\"string\",\"description\":\"absolute host directory the sandbox shares, "
    "under the server's --files-root (default: the server's --session-defaults, else its working "
    "directory)\"},"
    "\"backend\":{\"type\":\"string\",\"enum\":[\"local\",\"docker\",\"ssh\",\"singularity\","
    "\"daytona\",\"modal\"]},"
    "\"image\":{\"type\":\"string\",\"description\":\"the backend's image (docker, singularity, "
    "daytona, modal)\"},"
    "\"memory\":{\"type\":\"string\",\"description\":\"memory limit, like 512M or 2G\"},"
    "\"idle_timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2592000,"
    "\"description\":\"seconds the session may stay idle\"},"
    ENV ("variables every command of the session starts with") "}}",
    "{\"type\":\"object\",\"required\":[\"session\",\"backend\",\"cwd\",\"approval\",\"shared\","
    "\"posture\"],\"properties\":{\"session\":{\"type\":\"string\"},\"backend\":{\"type\":\"string\"},"
    "\"cwd\":{\"type\":\"string\"},\"approval\":{\"type\":\"string\"},\"shared\":{\"type\":\"boolean\"},"
    "\"posture\":" POSTURE ",\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}" },

  { "close_session", "Close a session",
    "End a session: its commands and jobs are stopped and its sandbox removed.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],"
    "\"properties\":{" SESSION "}}",
    "{\"type\":\"object\",\"required\":[\"session\",\"closed\"],\"properties\":{"
    "\"session\":{\"type\":\"string\"},\"closed\":{\"type\":\"boolean\"}}}" },

  { "list_sessions", "List sessions",
    "The user's sessions: state, backend, working directory, and whether you may use them "
    "(access: yours, shared, open, or other: another client's).",
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
    "{\"type\":\"object\",\"required\":[\"sessions\"],\"properties\":{\"sessions\":{\"type\":\"array\","
    "\"items\":{\"type\":\"object\",\"required\":[\"session\",\"state\"],\"properties\":{"
    "\"session\":{\"type\":\"string\"},\"state\":{\"type\":\"string\",\"enum\":[\"idle\",\"busy\","
    "\"lost\"]},\"backend\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\"},"
    "\"jobs\":{\"type\":\"integer\"},\"access\":{\"type\":\"string\",\"enum\":[\"yours\",\"shared\","
    "\"open\",\"other\"]}}}}}}" },

  { "exec", "Run a command in a session",
    "Run a bash command line in a session's sandbox. Dangerous commands pass an approval gate "
    "(a person may be asked). Foreground: waits and returns exit code, stdout and stderr (long "
    "output is cut; the whole of it is the resource output_uri); output streams as progress. "
    "background: true returns a job id at once (see job_output, job_stdin, job_kill). "
    "pty runs it on a terminal of the sandbox, for programs that need one (python3 -i, "
    "a prompt, top): its output is the screen's raw bytes, stdout only; with background, "
    "type into it with job_stdin and resize it with job_resize.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"command\"],"
    "\"properties\":{" SESSION ",\"command\":{\"type\":\"string\",\"description\":\"a bash command "
    "line\"},\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":86400,"
    "\"description\":\"seconds (default: the session's exec.timeout for foreground, none for "
    "background)\"},\"stdin\":{\"type\":\"string\",\"description\":\"the command's standard input\"},"
    ENV ("variables for this command only") ","
    "\"background\":{\"type\":\"boolean\"},\"cwd\":{\"type\":\"string\",\"description\":\"absolute "
    "directory to run in (it sticks)\"},"
    "\"pty\":{\"type\":\"object\",\"additionalProperties\":false,\"description\":\"run on a "
    "terminal of this size and TERM (each optional: 24, 80, xterm-256color)\",\"properties\":{"
    "\"rows\":" PTY_SIDE ",\"cols\":" PTY_SIDE ","
    "\"term\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9._+-]{1,32}$\"}}}}}",
    "{\"type\":\"object\",\"required\":[\"job\"],\"properties\":{\"job\":{\"type\":\"integer\"},"
    "\"background\":{\"type\":\"boolean\"},\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]},"
    "\"cause\":{\"type\":\"string\",\"enum\":[\"exited\",\"timed_out\",\"interrupted\",\"killed\","
    "\"lost\"]},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"truncated\":{\"type\":\"boolean\"},\"output_uri\":{\"type\":\"string\"},"
    "\"cwd\":{\"type\":\"string\"},\"duration_ms\":{\"type\":\"integer\"},"
    "\"timed_out\":{\"type\":\"boolean\"},\"interrupted\":{\"type\":\"boolean\"},"
    "\"spool_error\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},\"posture\":" POSTURE "}}" },

  { "job_output", "Read a job's output",
    "A job's output (stdout and stderr merged) from a byte offset, at most 1 MiB; pass "
    "next_offset back to read on. wait: seconds to wait for the job to end first.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"job\"],"
    "\"properties\":{" SESSION "," JOB ",\"offset\":{\"type\":\"integer\",\"minimum\":0},"
    "\"wait\":{\"type\":\"number\",\"minimum\":0,\"maximum\":300}}}",
    "{\"type\":\"object\",\"required\":[\"job\",\"data\",\"next_offset\",\"state\"],\"properties\":{"
    "\"job\":{\"type\":\"integer\"},\"data\":{\"type\":\"string\"},\"next_offset\":{\"type\":"
    "\"integer\"}," JOB_STATE "}}" },

  { "job_stdin", "Write to a job's stdin",
    "Write data to a running background job's standard input; eof: true closes it. On a "
    "terminal (exec with pty) data is typed: \"\\r\" is Enter, \"\\u0003\" Ctrl-C, "
    "\"\\u001b\" Escape; eof types Ctrl-D and the terminal stays open.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"job\",\"data\"],"
    "\"properties\":{" SESSION "," JOB ",\"data\":{\"type\":\"string\"},\"eof\":{\"type\":"
    "\"boolean\"}}}",
    "{\"type\":\"object\",\"required\":[\"job\",\"bytes\",\"eof\"],\"properties\":{\"job\":{\"type\":"
    "\"integer\"},\"bytes\":{\"type\":\"integer\"},\"eof\":{\"type\":\"boolean\"}}}" },

  { "job_resize", "Resize a job's terminal",
    "Change the window size of a job that runs on a terminal (exec with pty); its programs "
    "get SIGWINCH, and a full-screen one redraws at the new size.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"job\",\"rows\","
    "\"cols\"],\"properties\":{" SESSION "," JOB ",\"rows\":" PTY_SIDE ","
    "\"cols\":" PTY_SIDE "}}",
    "{\"type\":\"object\",\"required\":[\"job\",\"rows\",\"cols\"],\"properties\":{\"job\":{\"type\":"
    "\"integer\"},\"rows\":{\"type\":\"integer\"},\"cols\":{\"type\":\"integer\"}}}" },

  { "job_kill", "Stop a job",
    "Stop a job (SIGTERM to all of its processes, SIGKILL 2 s later) and report how it ended.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"job\"],"
    "\"properties\":{" SESSION "," JOB "}}",
    "{\"type\":\"object\",\"required\":[\"job\",\"state\"],\"properties\":{\"job\":{\"type\":"
    "\"integer\"}," JOB_STATE "}}" },

  { "upload", "Copy a file into a session",
    "Put a host file or directory (source: absolute host path under the server's --files-root) "
    "or inline bytes (data: base64) at path in the sandbox (relative to the session's "
    "directory; only its workdir and /tmp).",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"path\"],"
    "\"properties\":{" SESSION ",\"path\":{\"type\":\"string\"},\"source\":{\"type\":\"string\"},"
    "\"data\":{\"type\":\"string\",\"contentEncoding\":\"base64\"},\"mode\":{\"type\":\"string\","
    "\"pattern\":\"^0?[0-7]{3,4}$\"}}}",
    "{\"type\":\"object\",\"required\":[\"path\",\"files\",\"bytes\"],\"properties\":{\"path\":"
    "{\"type\":\"string\"},\"files\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"}}}" },

  { "download", "Copy a file out of a session",
    "Get a file or directory of the sandbox: to dest (an absolute host path under the server's "
    "--files-root that does not exist), or without dest one file of at most 1 MiB inline as "
    "base64.",
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"path\"],"
    "\"properties\":{" SESSION ",\"path\":{\"type\":\"string\"},\"dest\":{\"type\":\"string\"}}}",
    "{\"type\":\"object\",\"required\":[\"files\",\"bytes\"],\"properties\":{\"files\":{\"type\":"
    "\"integer\"},\"bytes\":{\"type\":\"integer\"},\"dest\":{\"type\":\"string\"},\"data\":{\"type\":"
    "\"string\"},\"mode\":{\"type\":\"string\"},\"skipped\":{\"type\":\"array\"}}}" },
};

const struct mcp_tool *
mcp_tool_find (const char *name)
{
  for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
    if (!strcmp (tools[i].name, name))
      return &tools[i];
  return NULL;
}

cJSON *
mcp_tools_list (void)
{
  cJSON *arr = cJSON_CreateArray ();
  for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
    {
      cJSON *t = cJSON_CreateObject ();
      cJSON_AddStringToObject (t, "name", tools[i].name);
      cJSON_AddStringToObject (t, "title", tools[i].title);
      cJSON_AddStringToObject (t, "description", tools[i].description);
      cJSON_AddItemToObject (t, "inputSchema", cJSON_Parse (tools[i].input_schema));
      cJSON_AddItemToObject (t, "outputSchema", cJSON_Parse (tools[i].output_schema));
      cJSON_AddItemToArray (arr, t);
    }
  return arr;
}

/* Whether v has the JSON Schema type name. */
static bool
has_type (const cJSON *v, const char *type)
{
  if (!strcmp (type, "string"))
    return cJSON_IsString (v);
  if (!strcmp (type, "boolean"))
    return cJSON_IsBool (v);
  if (!strcmp (type, "object"))
    return cJSON_IsObject (v);
  if (!strcmp (type, "null"))
    return cJSON_IsNull (v);
  if (!strcmp (type, "number"))
    return cJSON_IsNumber (v);
  if (!strcmp (type, "integer"))
    return cJSON_IsNumber (v) && v->valuedouble == floor (v->valuedouble);
  return false;
}

/* The subset of JSON Schema the tools' input schemas use: type, enum,
 * minimum, exclusiveMinimum, maximum, properties, required and
 * additionalProperties (false, or a schema). */
static char *
check (const cJSON *schema, const cJSON *v, const char *where)
{
  char *err = NULL;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive (schema, "type");
  if (cJSON_IsString (type) && !has_type (v, type->valuestring))
    return xprintf ("%s must be %s %s", where,
                     strchr ("aeiou", type->valuestring[0]) ? "an" : "a", type->valuestring);
  const cJSON *e, *en = cJSON_GetObjectItemCaseSensitive (schema, "enum");
  if (en && cJSON_IsString (v))
    {
      bool found = false;
      cJSON_ArrayForEach (e, en) found |= cJSON_IsString (e) && !strcmp (e->valuestring, v->valuestring);
      if (!found)
        {
          char list[256] = "";
          cJSON_ArrayForEach (e, en)
            snprintf (list + strlen (list), sizeof list - strlen (list), "%s%s",
                      *list ? ", " : "", e->valuestring);
          return xprintf ("%s must be one of %s", where, list);
        }
    }
  const cJSON *min = cJSON_GetObjectItemCaseSensitive (schema, "minimum");
  const cJSON *xmin = cJSON_GetObjectItemCaseSensitive (schema, "exclusiveMinimum");
  const cJSON *max = cJSON_GetObjectItemCaseSensitive (schema, "maximum");
  if (cJSON_IsNumber (v)
      && ((min && v->valuedouble < min->valuedouble) || (xmin && v->valuedouble <= xmin->valuedouble)
          || (max && v->valuedouble > max->valuedouble)))
    return xprintf ("%s is out of range (%s%g to %g)", where, xmin ? "more than " : "",
                     min ? min->valuedouble : xmin ? xmin->valuedouble : -INFINITY,
                     max ? max->valuedouble : INFINITY);
  if (!cJSON_IsObject (v))
    return NULL;
  const cJSON *props = cJSON_GetObjectItemCaseSensitive (schema, "properties");
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive (schema, "additionalProperties");
  cJSON_ArrayForEach (e, v)
    {
      char *sub = xprintf ("%s.%s", where, e->string);
      if (!sub)
        return NULL;
      const cJSON *ps = cJSON_GetObjectItemCaseSensitive (props, e->string);
      if (!ps && cJSON_IsFalse (extra))
        {
          char list[512] = "";
          const cJSON *p;
          cJSON_ArrayForEach (p, props)
            snprintf (list + strlen (list), sizeof list - strlen (list), "%s%s",
                      *list ? ", " : "", p->string);
          err = xprintf ("unknown field %s (%s takes: %s)", sub, where, *list ? list : "none");
        }
      else if (ps || cJSON_IsObject (extra))
        err = check (ps ? ps : extra, e, sub);
      free (sub);
      if (err)
        return err;
    }
  const cJSON *r;
  cJSON_ArrayForEach (r, cJSON_GetObjectItemCaseSensitive (schema, "required"))
    if (cJSON_IsString (r) && !cJSON_GetObjectItemCaseSensitive (v, r->valuestring))
      return xprintf ("%s.%s is required", where, r->valuestring);
  return NULL;
}

char *
mcp_tool_check_args (const struct mcp_tool *tool, const cJSON *args)
{
  cJSON *schema = cJSON_Parse (tool->input_schema);
  char *err = check (schema, args, "arguments");
  cJSON_Delete (schema);
  return err;
}

/* SPDX-License-Identifier: MIT */
/* The API's ops upload and download (docs/api.md): files in and out of a
 * session's sandbox (session_files.h), answered once the transfer is
 * over.  Not gated: an upload writes only into the sandbox, a download
 * only at the host path its client named. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "files_host.h"
#include "session_files.h"

struct ftrans {
  struct client *c;
  cJSON *id;
  struct files_transfer *t;
  struct ftrans *next;
};
static struct ftrans *ftranses;

static void
drop (struct ftrans *f)
{
  for (struct ftrans **p = &ftranses; *p; p = &(*p)->next)
    if (*p == f)
      {
        *p = f->next;
        break;
      }
  cJSON_Delete (f->id);
  free (f);
}

static void
on_done (void *ctx, const struct files_result *r)
{
  struct ftrans *f = ctx;
  if (r->code)
    {
      send_error (f->c, f->id, r->code, "%s", r->message ? r->message : "failed");
      return drop (f);
    }
  cJSON *o = reply (f->id, true);
  if (r->path)
    cJSON_AddStringToObject (o, "path", r->path);
  if (r->dest)
    cJSON_AddStringToObject (o, "dest", r->dest);
  if (r->data)
    {
      char *b = files_base64_encode (r->data, r->data_len);
      char mode[16];
      snprintf (mode, sizeof mode, "%04o", r->mode);
      cJSON_AddStringToObject (o, "data", b ? b : "");
      cJSON_AddStringToObject (o, "mode", mode);
      free (b);
    }
  cJSON_AddNumberToObject (o, "files", (double) r->files);
  cJSON_AddNumberToObject (o, "bytes", (double) r->bytes);
  if (r->nskipped)
    {
      cJSON *a = cJSON_AddArrayToObject (o, "skipped");
      for (size_t i = 0; i < r->nskipped; i++)
        cJSON_AddItemToArray (a, cJSON_CreateString (r->skipped[i]));
    }
  client_send (f->c, o);
  drop (f);
}

/* "0644": octal permission bits. */
static bool
parse_mode (const char *s, unsigned *mode)
{
  size_t n = strlen (s);
  if (n < 3 || n > 4 || strspn (s, "01234567") != n)
    return false;
  *mode = (unsigned) strtoul (s, NULL, 8);
  return true;
}

void
api_op_files (struct daemon *d, struct client *c, const char *op,
              const cJSON *req, const cJSON *id)
{
  bool bad = false, upload = !strcmp (op, "upload");
  struct dsession *s = want_session (d, c, req, id, &bad);
  struct files_request rq = { 0 };
  rq.path = bad ? NULL : want_string (c, req, id, "path", true, &bad);
  const char *data = NULL, *mode = NULL;
  if (upload)
    {
      rq.source = bad ? NULL : want_string (c, req, id, "source", false, &bad);
      data = bad ? NULL : want_string (c, req, id, "data", false, &bad);
      mode = bad ? NULL : want_string (c, req, id, "mode", false, &bad);
    }
  else
    rq.dest = bad ? NULL : want_string (c, req, id, "dest", false, &bad);
  double timeout = bad ? 0 : want_number (c, req, id, "timeout", 0, 1, 7 * 86400.0, &bad);
  if (bad)
    return;
  rq.timeout_ms = (uint64_t) (timeout * 1000);
  rq.mode = 0644;
  if (upload && !rq.source == !data)
    return send_error (c, id, "bad_request", "upload takes one of \"source\" (a host "
                       "path) and \"data\" (base64 of one file's bytes)");
  if (mode && !data)
    return send_error (c, id, "bad_request", "\"mode\" goes with \"data\" (a source "
                       "keeps its own modes)");
  if (mode && !parse_mode (mode, &rq.mode))
    return send_error (c, id, "bad_request", "mode \"%.16s\" is not octal permission "
                       "bits such as \"0644\"", mode);
  if (rq.source && rq.source[0] != '/')
    return send_error (c, id, "bad_request", "source %s: must be an absolute host path",
                       rq.source);
  if (rq.dest && rq.dest[0] != '/')
    return send_error (c, id, "bad_request", "dest %s: must be an absolute host path",
                       rq.dest);
  unsigned char *bytes = NULL;
  if (data)
    {
      ssize_t n = files_base64_decode (data, &bytes);
      if (n < 0)
        return send_error (c, id, "bad_request", "data is not base64 (RFC 4648, "
                           "with padding, no line breaks)");
      rq.data = bytes;
      rq.data_len = (size_t) n;
    }
  struct ftrans *f = calloc (1, sizeof *f);
  if (!f)
    {
      free (bytes);
      return send_error (c, id, "busy", "out of memory");
    }
  f->c = c;
  f->id = id ? cJSON_Duplicate (id, true) : NULL;
  const char *code = NULL;
  char *err = NULL;
  int rc = upload ? files_upload (s->s, &rq, on_done, f, &f->t, &code, &err)
                  : files_download (s->s, &rq, on_done, f, &f->t, &code, &err);
  free (bytes);
  if (rc < 0)
    {
      send_error (c, id, code ? code : "failed", "%s", err ? err : "cannot start");
      free (err);
      cJSON_Delete (f->id);
      free (f);
      return;
    }
  f->next = ftranses;
  ftranses = f;
}

void
api_files_client_gone (struct client *c)
{
  for (struct ftrans *f = ftranses, *next; f; f = next)
    {
      next = f->next;
      if (f->c == c)
        {
          files_cancel (f->t);
          drop (f);
        }
    }
}

bool
api_files_waiting (struct client *c)
{
  for (struct ftrans *f = ftranses; f; f = f->next)
    if (f->c == c)
      return true;
  return false;
}

/* SPDX-License-Identifier: MIT */
/* The Docker Engine API client (see docker_engine.h). */
#define _GNU_SOURCE
#include "docker_engine.h"
#include "http_body.h"
#include "xprintf.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_TIMEOUT_S 120   /* create, start, remove: slow on a busy host */
#define BODY_MAX (8 << 20)

struct docker_engine {
  char *socket;
  CURL *curl; /* kept: its connection to the socket is reused */
};

char *
docker_socket_choose (const char *configured, bool explicit,
                      const char *docker_host, char **err)
{
  if (explicit && configured)
    return strdup (configured);
  if (docker_host && *docker_host)
    {
      if (strncmp (docker_host, "unix://", 7) || docker_host[7] != '/')
        {
          *err = xprintf ("DOCKER_HOST=%s: only a local unix socket "
                          "(unix:///path) is supported; unset DOCKER_HOST or "
                          "set docker.socket", docker_host);
          return NULL;
        }
      return strdup (docker_host + 7);
    }
  return strdup (configured ? configured : DOCKER_DEFAULT_SOCKET);
}

struct docker_engine *
docker_engine_new (const char *socket_path)
{
  struct docker_engine *e = calloc (1, sizeof *e);
  if (!e || !(e->socket = strdup (socket_path)))
    {
      free (e);
      return NULL;
    }
  return e;
}

void
docker_engine_free (struct docker_engine *e)
{
  if (!e)
    return;
  if (e->curl)
    curl_easy_cleanup (e->curl);
  free (e->socket);
  free (e);
}

const char *
docker_engine_socket (const struct docker_engine *e)
{
  return e->socket;
}

/* Why the socket cannot be used, with the fix. */
static char *
connect_error (const char *socket, int err)
{
  if (err == EACCES || err == EPERM)
    return xprintf ("permission denied on the Docker socket %s: this user may "
                    "not use the Docker Engine.  Access to the Docker socket "
                    "is root-equivalent (whoever can use it can become root "
                    "on this host), so it is an administrator's decision: "
                    "membership in group docker grants it (usermod -aG docker "
                    "USER, then log in again); otherwise use the local backend",
                    socket);
  if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR)
    return xprintf ("the Docker daemon is not running at %s (%s): start it "
                    "(systemctl start docker, or dockerd as root), or point "
                    "docker.socket or DOCKER_HOST=unix://PATH at its socket",
                    socket, strerror (err));
  return xprintf ("cannot connect to the Docker daemon at %s: %s", socket,
                  err ? strerror (err) : "unknown error");
}

static int
perform (struct docker_engine *e, const char *method, const char *path,
         const void *body, size_t len, const char *content_type,
         struct http_body *sink, long timeout_s, struct docker_response *r,
         char **err)
{
  *r = (struct docker_response){ 0 };
  if (!e->curl && !(e->curl = curl_easy_init ()))
    {
      *err = xprintf ("cannot initialise libcurl");
      return -1;
    }
  CURL *c = e->curl;
  curl_easy_reset (c);
  char *url = xprintf ("http://localhost/v" DOCKER_API_VERSION "%s", path);
  char *ctype = content_type ? xprintf ("Content-Type: %s", content_type) : NULL;
  struct curl_slist *headers = NULL;
  if (ctype)
    headers = curl_slist_append (headers, ctype);
  headers = curl_slist_append (headers, "Expect:"); /* no 100-continue round trip */
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt (c, CURLOPT_UNIX_SOCKET_PATH, e->socket);
  curl_easy_setopt (c, CURLOPT_URL, url);
  curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt (c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt (c, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, http_body_write);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, sink);
  if (body)
    {
      curl_easy_setopt (c, CURLOPT_POSTFIELDS, body);
      curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
    }
  else if (!strcmp (method, "POST"))
    curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) 0);
  if (!strcmp (method, "HEAD"))
    curl_easy_setopt (c, CURLOPT_NOBODY, 1L);
  CURLcode rc = url ? curl_easy_perform (c) : CURLE_OUT_OF_MEMORY;
  curl_slist_free_all (headers);
  free (ctype);
  free (url);
  if (rc != CURLE_OK)
    {
      long os_errno = 0;
      curl_easy_getinfo (c, CURLINFO_OS_ERRNO, &os_errno);
      if (rc == CURLE_COULDNT_CONNECT)
        *err = connect_error (e->socket, (int) os_errno);
      else if (sink->too_big)
        *err = xprintf ("the Docker daemon's answer to %s %s is over %d MiB",
                        method, path, BODY_MAX >> 20);
      else
        *err = xprintf ("Docker Engine API %s %s: %s", method, path,
                        *errbuf ? errbuf : curl_easy_strerror (rc));
      free (sink->buf);
      return -1;
    }
  curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &r->status);
  r->body = sink->buf ? sink->buf : strdup ("");
  r->len = sink->len;
  if (r->body && !sink->on_line)
    r->json = cJSON_ParseWithLength (r->body, r->len);
  return 0;
}

int
docker_call_raw (struct docker_engine *e, const char *method, const char *path,
                 const void *body, size_t len, const char *content_type,
                 struct docker_response *r, char **err)
{
  struct http_body sink = { .max = BODY_MAX };
  return perform (e, method, path, body, len, content_type, &sink,
                  CALL_TIMEOUT_S, r, err);
}

int
docker_call (struct docker_engine *e, const char *method, const char *path,
             const cJSON *body, struct docker_response *r, char **err)
{
  char *text = body ? cJSON_PrintUnformatted (body) : NULL;
  if (body && !text)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  int rc = docker_call_raw (e, method, path, text, text ? strlen (text) : 0,
                            text ? "application/json" : NULL, r, err);
  free (text);
  return rc;
}

int
docker_call_lines (struct docker_engine *e, const char *method,
                   const char *path,
                   void (*on_line) (void *ctx, const char *line), void *ctx,
                   struct docker_response *r, char **err)
{
  struct http_body sink = { .max = BODY_MAX, .on_line = on_line, .ctx = ctx };
  return perform (e, method, path, NULL, 0, NULL, &sink, 0, r, err);
}

void
docker_response_free (struct docker_response *r)
{
  cJSON_Delete (r->json);
  free (r->body);
  *r = (struct docker_response){ 0 };
}

const char *
docker_response_message (struct docker_response *r)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (r->json, "message");
  if (cJSON_IsString (m) && *m->valuestring)
    return m->valuestring;
  if (r->body && *r->body)
    {
      size_t n = strlen (r->body);
      while (n && (r->body[n - 1] == '\n' || r->body[n - 1] == '\r'))
        r->body[--n] = '\0';
      return r->body;
    }
  return r->status ? "the Docker daemon answered with an error status"
                   : "no answer from the Docker daemon";
}

int
docker_engine_ping (struct docker_engine *e, char **err)
{
  struct docker_response r;
  if (docker_call (e, "GET", "/_ping", NULL, &r, err) < 0)
    return -1;
  int rc = 0;
  if (r.status != 200 || strncmp (r.body, "OK", 2))
    {
      *err = xprintf ("%s does not answer as a Docker Engine (GET /_ping: "
                      "HTTP %ld %s)", e->socket, r.status,
                      docker_response_message (&r));
      rc = -1;
    }
  docker_response_free (&r);
  return rc;
}

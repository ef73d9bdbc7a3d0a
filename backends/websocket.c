/* SPDX-License-Identifier: MIT */
/* A WebSocket client over a libcurl connection (see websocket.h). */
#define _GNU_SOURCE
#include "websocket.h"

#include <curl/curl.h>
#include <errno.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <wslay/wslay.h>

#include "files_host.h"
#include "monotonic_ms.h"
#include "xprintf.h"

#define ANSWER_MAX 16384       /* the upgrade's answer head */
#define MESSAGE_MAX (16u << 20) /* a message from the peer */
#define REASON_MAX 512

struct websocket {
  CURL *curl;
  curl_socket_t fd;
  wslay_event_context_ptr ctx;
  websocket_message_fn on_message;
  void *user;
  /* Bytes that came with the upgrade's answer: the first frames. */
  unsigned char *early;
  size_t early_len, early_off;
  char *io_error;         /* why a read or write failed */
  uint16_t close_code;
  char close_reason[REASON_MAX];
};

/* ---- wslay's callbacks ---- */

static ssize_t
on_recv (wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
  (void) flags;
  struct websocket *ws = user;
  if (ws->early_off < ws->early_len)
    {
      size_t n = ws->early_len - ws->early_off;
      if (n > len)
        n = len;
      memcpy (buf, ws->early + ws->early_off, n);
      ws->early_off += n;
      return (ssize_t) n;
    }
  size_t got = 0;
  CURLcode rc = curl_easy_recv (ws->curl, buf, len, &got);
  if (rc == CURLE_AGAIN)
    {
      wslay_event_set_error (ctx, WSLAY_ERR_WOULDBLOCK);
      return -1;
    }
  if (rc != CURLE_OK || got == 0)
    {
      if (!ws->io_error)
        ws->io_error = xprintf ("%s", rc == CURLE_OK ? "the connection was closed without a close frame"
                                                     : curl_easy_strerror (rc));
      wslay_event_set_error (ctx, WSLAY_ERR_CALLBACK_FAILURE);
      return -1;
    }
  return (ssize_t) got;
}

static ssize_t
on_send (wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user)
{
  (void) flags;
  struct websocket *ws = user;
  size_t sent = 0;
  CURLcode rc = curl_easy_send (ws->curl, data, len, &sent);
  if (rc == CURLE_AGAIN)
    {
      wslay_event_set_error (ctx, WSLAY_ERR_WOULDBLOCK);
      return -1;
    }
  if (rc != CURLE_OK)
    {
      if (!ws->io_error)
        ws->io_error = xprintf ("%s", curl_easy_strerror (rc));
      wslay_event_set_error (ctx, WSLAY_ERR_CALLBACK_FAILURE);
      return -1;
    }
  return (ssize_t) sent;
}

/* A client masks what it sends with unpredictable bytes (RFC 6455 5.3). */
static int
on_genmask (wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
  (void) user;
  if (getrandom (buf, len, 0) != (ssize_t) len)
    {
      wslay_event_set_error (ctx, WSLAY_ERR_CALLBACK_FAILURE);
      return -1;
    }
  return 0;
}

static void
on_msg (wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
  (void) ctx;
  struct websocket *ws = user;
  if (arg->opcode == WSLAY_CONNECTION_CLOSE)
    {
      /* The frame's payload is the code (2 bytes), then the reason;
       * taken apart here whether or not wslay left the code in. */
      ws->close_code = arg->status_code;
      const uint8_t *r = arg->msg;
      size_t n = arg->msg_length;
      if (n >= 2 && ((r[0] << 8) | r[1]) == arg->status_code)
        {
          r += 2;
          n -= 2;
        }
      if (n >= sizeof ws->close_reason)
        n = sizeof ws->close_reason - 1;
      if (n)
        memcpy (ws->close_reason, r, n);
      ws->close_reason[n] = 0;
    }
  else if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME)
    ws->on_message (ws->user, arg->opcode == WSLAY_BINARY_FRAME, arg->msg, arg->msg_length);
}

/* ---- the upgrade ---- */

/* Wait for the socket (POLLIN or POLLOUT) until the deadline: 0 ready,
 * -1 timed out. */
static int
wait_fd (curl_socket_t fd, short events, uint64_t deadline_ms)
{
  for (;;)
    {
      uint64_t now = monotonic_ms ();
      if (now >= deadline_ms)
        return -1;
      struct pollfd p = { .fd = fd, .events = events };
      int n = poll (&p, 1, (int) (deadline_ms - now));
      if (n > 0)
        return 0;
      if (n < 0 && errno != EINTR)
        return -1;
    }
}

static int
send_all (struct websocket *ws, const char *data, size_t len, uint64_t deadline_ms)
{
  while (len)
    {
      size_t sent = 0;
      CURLcode rc = curl_easy_send (ws->curl, data, len, &sent);
      if (rc == CURLE_AGAIN)
        {
          if (wait_fd (ws->fd, POLLOUT, deadline_ms) < 0)
            return -1;
          continue;
        }
      if (rc != CURLE_OK)
        return -1;
      data += sent;
      len -= sent;
    }
  return 0;
}

/* The answer's head (up to the blank line) into *head (malloc'd,
 * NUL-terminated); what came after it is kept as the first frames. */
static int
read_head (struct websocket *ws, char **head, uint64_t deadline_ms)
{
  char *b = malloc (ANSWER_MAX + 1);
  size_t n = 0;
  if (!b)
    return -1;
  for (;;)
    {
      b[n] = 0;
      char *end = strstr (b, "\r\n\r\n");
      if (end)
        {
          end += 4;
          size_t rest = n - (size_t) (end - b);
          if (rest && !(ws->early = malloc (rest)))
            break;
          memcpy (ws->early, end, rest);
          ws->early_len = rest;
          *end = 0;
          *head = b;
          return 0;
        }
      if (n == ANSWER_MAX)
        break;
      size_t got = 0;
      CURLcode rc = curl_easy_recv (ws->curl, b + n, ANSWER_MAX - n, &got);
      if (rc == CURLE_AGAIN)
        {
          if (wait_fd (ws->fd, POLLIN, deadline_ms) < 0)
            break;
          continue;
        }
      if (rc != CURLE_OK || got == 0)
        break;
      /* A NUL would end the search early: not in an HTTP head. */
      if (memchr (b + n, 0, got))
        break;
      n += got;
    }
  free (b);
  return -1;
}

/* The value of header name in head (case-insensitive name), trimmed,
 * malloc'd; NULL when absent. */
static char *
header_value (const char *head, const char *name)
{
  size_t nl = strlen (name);
  for (const char *l = strstr (head, "\r\n"); l && l[2]; l = strstr (l + 2, "\r\n"))
    {
      const char *p = l + 2;
      if (!strncasecmp (p, name, nl) && p[nl] == ':')
        {
          p += nl + 1;
          while (*p == ' ' || *p == '\t')
            p++;
          const char *e = strstr (p, "\r\n");
          size_t len = e ? (size_t) (e - p) : strlen (p);
          while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
          return strndup (p, len);
        }
    }
  return NULL;
}

/* What the server must answer for our key (RFC 6455 4.2.2). */
static char *
expected_accept (const char *key)
{
  static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  struct sha1_ctx c;
  uint8_t digest[SHA1_DIGEST_SIZE];
  sha1_init (&c);
  sha1_update (&c, strlen (key), (const uint8_t *) key);
  sha1_update (&c, sizeof guid - 1, (const uint8_t *) guid);
  sha1_digest (&c, sizeof digest, digest);
  return files_base64_encode (digest, sizeof digest);
}

/* "GET path HTTP/1.1" and the upgrade's headers, for url. */
static char *
upgrade_request (const char *url, const char *key, const char *const *headers)
{
  CURLU *u = curl_url ();
  char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *req = NULL;
  if (!u || curl_url_set (u, CURLUPART_URL, url, 0) != CURLUE_OK
      || curl_url_get (u, CURLUPART_HOST, &host, 0) != CURLUE_OK
      || curl_url_get (u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
    goto out;
  curl_url_get (u, CURLUPART_PORT, &port, 0);
  curl_url_get (u, CURLUPART_QUERY, &query, 0);
  size_t extra = 0;
  for (const char *const *h = headers; h && *h; h++)
    extra += strlen (*h) + 2;
  char *lines = calloc (1, extra + 1);
  if (!lines)
    goto out;
  for (const char *const *h = headers; h && *h; h++)
    {
      strcat (lines, *h);
      strcat (lines, "\r\n");
    }
  req = xprintf ("GET %s%s%s HTTP/1.1\r\nHost: %s%s%s\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                 "%s\r\n",
                 path, query ? "?" : "", query ? query : "", host, port ? ":" : "",
                 port ? port : "", key, lines);
  explicit_bzero (lines, extra);
  free (lines);
out:
  curl_free (host);
  curl_free (port);
  curl_free (path);
  curl_free (query);
  curl_url_cleanup (u);
  return req;
}

/* The URL for error text: no query (it may carry a token). */
static char *
url_for_text (const char *url)
{
  return strndup (url, strcspn (url, "?#"));
}

struct websocket *
websocket_open (const char *url, const char *const *headers, uint64_t deadline_ms,
                websocket_message_fn on_message, void *user, char **err)
{
  struct websocket *ws = calloc (1, sizeof *ws);
  char *shown = url_for_text (url);
  char *req = NULL, *head = NULL, *accept = NULL, *want = NULL, *upgrade = NULL;
  const char *why = NULL;
  char errbuf[CURL_ERROR_SIZE] = "";
  if (!ws || !shown)
    {
      why = "out of memory";
      goto fail;
    }
  ws->on_message = on_message;
  ws->user = user;
  ws->fd = CURL_SOCKET_BAD;
  uint64_t now = monotonic_ms ();
  long ms = deadline_ms > now ? (long) (deadline_ms - now) : 1;
  if (!(ws->curl = curl_easy_init ()))
    {
      why = "out of memory";
      goto fail;
    }
  curl_easy_setopt (ws->curl, CURLOPT_URL, url);
  curl_easy_setopt (ws->curl, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt (ws->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (ws->curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt (ws->curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt (ws->curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (ws->curl, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl_easy_perform (ws->curl);
  if (rc != CURLE_OK)
    {
      why = *errbuf ? errbuf : curl_easy_strerror (rc);
      goto fail;
    }
  if (curl_easy_getinfo (ws->curl, CURLINFO_ACTIVESOCKET, &ws->fd) != CURLE_OK
      || ws->fd == CURL_SOCKET_BAD)
    {
      why = "no socket after the connection";
      goto fail;
    }
  unsigned char raw[16];
  char *key = getrandom (raw, sizeof raw, 0) == sizeof raw ? files_base64_encode (raw, sizeof raw)
                                                             : NULL;
  req = key ? upgrade_request (url, key, headers) : NULL;
  want = key ? expected_accept (key) : NULL;
  free (key);
  if (!req || !want)
    {
      why = "out of memory (or a URL that does not parse)";
      goto fail;
    }
  int sent = send_all (ws, req, strlen (req), deadline_ms);
  explicit_bzero (req, strlen (req));
  if (sent < 0)
    {
      why = "the upgrade request could not be sent";
      goto fail;
    }
  if (read_head (ws, &head, deadline_ms) < 0)
    {
      why = "no answer to the upgrade request";
      goto fail;
    }
  if (strncmp (head, "HTTP/1.1 101", 12))
    {
      size_t l = strcspn (head, "\r\n");
      *err = xprintf ("the WebSocket at %s was refused: \"%.*s\"", shown, (int) (l > 200 ? 200 : l),
                      head);
      goto fail_quiet;
    }
  accept = header_value (head, "Sec-WebSocket-Accept");
  upgrade = header_value (head, "Upgrade");
  if (!upgrade || strcasecmp (upgrade, "websocket") || !accept || strcmp (accept, want))
    {
      why = "the server's answer is not a WebSocket upgrade (Upgrade or Sec-WebSocket-Accept "
            "is wrong)";
      goto fail;
    }
  struct wslay_event_callbacks cb = {
    .recv_callback = on_recv, .send_callback = on_send, .genmask_callback = on_genmask,
    .on_msg_recv_callback = on_msg,
  };
  if (wslay_event_context_client_init (&ws->ctx, &cb, ws) != 0)
    {
      why = "out of memory";
      goto fail;
    }
  wslay_event_config_set_max_recv_msg_length (ws->ctx, MESSAGE_MAX);
  goto out;
fail:
  *err = xprintf ("cannot open the WebSocket at %s: %s", shown ? shown : "?", why);
fail_quiet:
  websocket_free (ws);
  ws = NULL;
out:
  free (req);
  free (head);
  free (accept);
  free (want);
  free (upgrade);
  free (shown);
  return ws;
}

int
websocket_fd (const struct websocket *ws)
{
  return (int) ws->fd;
}

bool
websocket_wants_write (const struct websocket *ws)
{
  return wslay_event_want_write (ws->ctx) != 0;
}

int
websocket_pump (struct websocket *ws, char **err)
{
  if (wslay_event_want_read (ws->ctx) && wslay_event_recv (ws->ctx) != 0)
    goto broken;
  if (wslay_event_want_write (ws->ctx) && wslay_event_send (ws->ctx) != 0)
    goto broken;
  /* Closed both ways, or the peer's close frame came and ours is sent. */
  if (wslay_event_get_close_received (ws->ctx) && !wslay_event_want_write (ws->ctx))
    return 0;
  return 1;
broken:
  if (wslay_event_get_close_received (ws->ctx))
    return 0;
  *err = xprintf ("the WebSocket connection broke: %s",
                  ws->io_error ? ws->io_error : "a protocol error");
  return -1;
}

int
websocket_send (struct websocket *ws, bool binary, const void *data, size_t len)
{
  struct wslay_event_msg m = {
    .opcode = binary ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME, .msg = data, .msg_length = len,
  };
  return wslay_event_queue_msg (ws->ctx, &m) == 0 ? 0 : -1;
}

uint16_t
websocket_close_code (const struct websocket *ws)
{
  return ws->close_code;
}

const char *
websocket_close_reason (const struct websocket *ws)
{
  return ws->close_reason;
}

void
websocket_free (struct websocket *ws)
{
  if (!ws)
    return;
  if (ws->ctx)
    {
      /* A close frame, if the connection takes it now; no waiting. */
      if (!wslay_event_get_close_sent (ws->ctx) && !ws->io_error)
        {
          wslay_event_queue_close (ws->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
          wslay_event_send (ws->ctx);
        }
      wslay_event_context_free (ws->ctx);
    }
  if (ws->curl)
    curl_easy_cleanup (ws->curl);
  free (ws->early);
  free (ws->io_error);
  free (ws);
}

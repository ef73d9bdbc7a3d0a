/* SPDX-License-Identifier: MIT */
/* A WebSocket client (RFC 6455) for a thread of its own: libcurl makes
 * the connection (TCP, TLS, proxies: CURLOPT_CONNECT_ONLY), we send the
 * upgrade request and check its answer, and wslay does the framing
 * (masking, fragments, ping/pong, the close handshake).  Debian 12's
 * libcurl has no WebSocket support of its own.  Used for Daytona's
 * terminals (daytona_terminal.c). */
#ifndef AIRLOCK_BACKENDS_WEBSOCKET_H
#define AIRLOCK_BACKENDS_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct websocket;

/* A whole message from the peer (text or binary). */
typedef void (*websocket_message_fn) (void *user, bool binary, const uint8_t *data,
                                      size_t len);

/* Connect to url (http:// or https://, the WebSocket's HTTP form) and
 * upgrade, sending the extra header lines (NULL-ended "Name: value");
 * by deadline_ms (monotonic_ms.h).  NULL with *err (malloc'd; it names
 * the URL without its query, never a header's value) when that fails,
 * including an answer other than 101 (its status line is quoted). */
struct websocket *websocket_open (const char *url, const char *const *headers,
                                  uint64_t deadline_ms, websocket_message_fn on_message,
                                  void *user, char **err);

/* The socket, to poll for input (and for output while
 * websocket_wants_write). */
int websocket_fd (const struct websocket *ws);
bool websocket_wants_write (const struct websocket *ws);

/* Read and send whatever can be without blocking; whole messages go to
 * on_message.  1: open; 0: the peer closed (websocket_close_code and
 * _reason say how); -1: the connection broke (*err). */
int websocket_pump (struct websocket *ws, char **err);

/* Queue a message (sent by websocket_pump).  -1 when the connection is
 * closing or out of memory. */
int websocket_send (struct websocket *ws, bool binary, const void *data, size_t len);

/* The peer's close frame: its code (0 none) and reason (NUL-terminated,
 * "" none). */
uint16_t websocket_close_code (const struct websocket *ws);
const char *websocket_close_reason (const struct websocket *ws);

/* Close (a normal close frame, sent if it can be at once) and free. */
void websocket_free (struct websocket *ws);

#endif

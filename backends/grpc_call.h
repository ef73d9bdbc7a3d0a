/* SPDX-License-Identifier: MIT */
/* gRPC over libcurl: unary and server-streaming calls, the only kinds the
 * Modal client needs (no client streaming, no bidi).  Requests and
 * responses are serialized protobuf (protobuf_wire.h); this layer frames
 * them ([flag:1][length:4 big-endian][message]), sends the gRPC headers,
 * reassembles response messages from body chunks that do not line up
 * with them, and reads grpc-status / grpc-message from the header
 * callback, keeping the last value seen: with Debian's curl 7.88.1 the
 * trailers arrive there, and a trailers-only error comes as headers.
 *
 * Transport: http:// is h2c with prior knowledge (a local double), https://
 * HTTP/2 over TLS (ALPN; an answer in HTTP/1.x is an error).  h2c
 * connections are not reused with libcurl before 8.0.0 (Debian 12's
 * 7.88.1 breaks them: curl issue 10634).  The caller
 * owns the CURL easy handle and passes the same one for each call so that
 * its connection is reused; a call resets it (curl_easy_reset keeps the
 * connections).  grpc_transfer_* sets a handle up without running it, for
 * a caller that runs several calls at once in a curl multi handle.
 *
 * Limits: no compression (none is asked for; a compressed message is an
 * error), a response message over max_message is an error before it is
 * buffered; grpc-status-details-bin is ignored.  Metadata values may be
 * secrets: they are never put in error text, nor is any header. */
#ifndef AIRLOCK_BACKENDS_GRPC_CALL_H
#define AIRLOCK_BACKENDS_GRPC_CALL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_DEFAULT_MAX_MESSAGE ((size_t) 16 << 20)

enum grpc_code {
  GRPC_OK = 0,
  GRPC_CANCELLED = 1,
  GRPC_UNKNOWN = 2,
  GRPC_INVALID_ARGUMENT = 3,
  GRPC_DEADLINE_EXCEEDED = 4,
  GRPC_NOT_FOUND = 5,
  GRPC_ALREADY_EXISTS = 6,
  GRPC_PERMISSION_DENIED = 7,
  GRPC_RESOURCE_EXHAUSTED = 8,
  GRPC_FAILED_PRECONDITION = 9,
  GRPC_ABORTED = 10,
  GRPC_OUT_OF_RANGE = 11,
  GRPC_UNIMPLEMENTED = 12,
  GRPC_INTERNAL = 13,
  GRPC_UNAVAILABLE = 14,
  GRPC_DATA_LOSS = 15,
  GRPC_UNAUTHENTICATED = 16,
};

/* "UNAVAILABLE"; "CODE_<n>" style text is not made: unknown codes give
 * "UNKNOWN_CODE". */
const char *grpc_code_name (int code);

/* Where a failure's code came from. */
enum grpc_origin {
  GRPC_FROM_SERVER,    /* grpc-status sent by the server (OK included) */
  GRPC_FROM_TRANSPORT, /* no status: connection refused or reset, timeout,
                          an HTTP status other than 200 (mapped to a code
                          as gRPC's spec does), HTTP/1.x */
  GRPC_FROM_CLIENT,    /* found wrong here: bad framing, a compressed or
                          oversize message, no grpc-status, the caller
                          stopped or cancelled, out of memory */
};

struct grpc_result {
  int code;              /* enum grpc_code */
  enum grpc_origin origin;
  char *message;         /* malloc'd, always set after a call (may be ""):
                            grpc-message percent-decoded (control
                            characters replaced, cut at 1 KiB), or what
                            failed here; never a header's value */
  long http_status;      /* 0 when no answer came */
  unsigned messages;     /* response messages handed over */
  bool stopped;          /* on_message returned non-zero */
};

void grpc_result_free (struct grpc_result *r);

/* "UNAVAILABLE: going away" (malloc'd; NULL when out of memory). */
char *grpc_result_text (const struct grpc_result *r);

struct grpc_retry; /* below */

struct grpc_call {
  const char *base_url;  /* "https://api.modal.com:443", "http://127.0.0.1:PORT" */
  const char *path;      /* "/modal.client.ModalClient/AuthTokenGet" */
  /* "name: value" lines (lowercase names), NULL-ended, or NULL; a line
   * holding CR or LF is refused. */
  const char *const *metadata;
  const struct grpc_retry *retry; /* adds its headers when not NULL */
  const void *request;   /* one serialized message (framed here) */
  size_t request_len;
  /* The call's deadline: sent as grpc-timeout and enforced here too (a
   * little later, so that the server's DEADLINE_EXCEEDED usually comes
   * first).  0: none (a stream that may run long; then see cancel). */
  unsigned timeout_ms;
  unsigned connect_timeout_ms; /* 0: 10 s */
  size_t max_message;    /* 0: GRPC_DEFAULT_MAX_MESSAGE */
  const char *ca_file;   /* CURLOPT_CAINFO for https, or NULL: the system's */
  const volatile int *cancel; /* non-zero ends the call (CANCELLED) */
  /* Server streaming: each complete message, in order; a non-zero return
   * stops the call (result CANCELLED from the client, stopped set).  The
   * bytes are valid during the call only. */
  int (*on_message) (void *ctx, const uint8_t *msg, size_t len);
  void *ctx;
};

/* A unary call: 0 with the response message in *reply (malloc'd, *len
 * bytes; an empty message gives a non-NULL pointer), or -1 with res->code
 * not OK (also when an OK status came with no message or with several).
 * res is always filled: free it with grpc_result_free. */
int grpc_unary (CURL *c, const struct grpc_call *call, uint8_t **reply, size_t *len,
                struct grpc_result *res);

/* A server-streaming call: call->on_message for each message; 0 when the
 * stream ended with OK, else -1 (res says why, res->messages how many
 * came before).  A caller resuming a stream (TaskExecStdioRead at an
 * offset) calls again with a new request. */
int grpc_server_stream (CURL *c, const struct grpc_call *call, struct grpc_result *res);

/* ---- retries ---- */

/* Which results to try again: UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL,
 * UNKNOWN, CANCELLED from the server or the transport; never one the
 * client found (a bad frame, an oversize message, the caller's stop). */
bool grpc_retryable (const struct grpc_result *r);

/* One logical call's attempts: the same idempotency key on each
 * (x-idempotency-key, a random UUID), x-retry-attempt and x-retry-delay
 * (seconds) from the first retry on.  Waits: 100 ms doubling to 1 s,
 * +-25 % jitter. */
struct grpc_retry {
  char key[37];
  unsigned attempt;      /* 0: the first try */
  unsigned max_retries;  /* after the first try */
  unsigned last_delay_ms;
  unsigned seed;
  char lines[3][64];     /* the headers, built by grpc_retry_next */
};

void grpc_retry_init (struct grpc_retry *rt, unsigned max_retries);
/* After a failed attempt: true, with *wait_ms to sleep before the next,
 * when res is retryable, retries are left and the wait ends before
 * deadline_ms (monotonic_ms.h; 0: no deadline). */
bool grpc_retry_next (struct grpc_retry *rt, const struct grpc_result *res,
                      uint64_t deadline_ms, unsigned *wait_ms);

/* A unary call with retries (rt's headers added, call->retry ignored):
 * what grpc_unary returns for the last attempt.  deadline_ms as above. */
int grpc_unary_retry (CURL *c, const struct grpc_call *call, unsigned max_retries,
                      uint64_t deadline_ms, uint8_t **reply, size_t *len,
                      struct grpc_result *res);

/* ---- pieces: a call run by the caller, the frame reassembler ---- */

struct grpc_transfer;

/* Set c up for call (nothing is sent yet): NULL with res filled when the
 * call is refused (bad metadata, out of memory).  Then curl_easy_perform
 * (c), or add c to a multi handle and wait for its CURLMSG_DONE, and hand
 * the CURLcode to grpc_transfer_finish, which fills res: 0 if OK, else
 * -1.  call and what it points to must live until then; after
 * grpc_transfer_free, c still points at freed options until it is reset
 * (the next grpc_transfer_new does), so it must not be performed as is. */
struct grpc_transfer *grpc_transfer_new (CURL *c, const struct grpc_call *call,
                                         struct grpc_result *res);
int grpc_transfer_finish (struct grpc_transfer *t, CURLcode rc, struct grpc_result *res);
void grpc_transfer_free (struct grpc_transfer *t);

/* The response body's messages out of chunks cut anywhere: exposed for
 * the fuzzer and unit tests. */
struct grpc_frames {
  uint8_t *buf;          /* at most one unfinished frame */
  size_t len, cap;
  size_t max_message;    /* 0: GRPC_DEFAULT_MAX_MESSAGE */
  unsigned count;        /* messages handed over */
  int (*on_message) (void *ctx, const uint8_t *msg, size_t len);
  void *ctx;
  const char *error;     /* static text, set when feeding failed */
  int code;              /* its gRPC code (INTERNAL, RESOURCE_EXHAUSTED) */
  bool stopped;          /* on_message returned non-zero */
};

/* 0, or -1 when the bytes are wrong (error and code set) or on_message
 * asked to stop (stopped set); nothing more is taken after -1. */
int grpc_frames_feed (struct grpc_frames *f, const void *data, size_t n);
/* At the end of the body: -1 when a frame is unfinished. */
int grpc_frames_end (struct grpc_frames *f);
void grpc_frames_free (struct grpc_frames *f);

/* grpc-message's percent-encoding undone in place (a bad escape is kept
 * as it is), control characters replaced by spaces. */
void grpc_percent_decode (char *s);

#endif

/* SPDX-License-Identifier: MIT */
/* Unit tests for the pieces of backends/modal_api.c that need no server:
 * modal_jwt_exp (a JWT's exp claim read, never trusted: malformed tokens,
 * missing or odd claims, base64url with and without padding) and
 * modal_error_text (the hint for each code, the credential source, the
 * server URL without user info, no secret in the text).  The calls
 * themselves run against the Modal double in tests/modal.bats. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_call.h"
#include "modal_api.h"

/* base64url of s, no padding, into out. */
static void
b64url (const char *s, char *out)
{
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t n = strlen (s), o = 0;
  for (size_t i = 0; i < n; i += 3)
    {
      unsigned v = (unsigned char) s[i] << 16;
      if (i + 1 < n)
        v |= (unsigned char) s[i + 1] << 8;
      if (i + 2 < n)
        v |= (unsigned char) s[i + 2];
      out[o++] = abc[(v >> 18) & 63];
      out[o++] = abc[(v >> 12) & 63];
      if (i + 1 < n)
        out[o++] = abc[(v >> 6) & 63];
      if (i + 2 < n)
        out[o++] = abc[v & 63];
    }
  out[o] = '\0';
}

/* "header.payload.sig" with the claims given as JSON. */
static char *
make_jwt (const char *claims)
{
  char head[64], body[1024];
  b64url ("{\"alg\":\"none\",\"typ\":\"JWT\"}", head);
  b64url (claims, body);
  char *t = NULL;
  assert_true (asprintf (&t, "%s.%s.c2ln", head, body) > 0);
  return t;
}

static long long
exp_of (const char *claims)
{
  char *t = make_jwt (claims);
  long long e = modal_jwt_exp (t);
  free (t);
  return e;
}

static void
test_jwt_exp_read (void **state)
{
  (void) state;
  assert_int_equal (exp_of ("{\"exp\":1790000000}"), 1790000000LL);
  assert_int_equal (exp_of ("{\"sub\":\"ak-1\",\"exp\":1790000000,\"iat\":1789996400}"),
                    1790000000LL);
  /* a fraction is cut, as seconds */
  assert_int_equal (exp_of ("{\"exp\":1790000000.75}"), 1790000000LL);
  /* the lengths of every padding case of base64url (1, 2, 3 bytes left) */
  assert_int_equal (exp_of ("{\"exp\":1}"), 1);
  assert_int_equal (exp_of ("{\"exp\":12}"), 12);
  assert_int_equal (exp_of ("{\"exp\":123}"), 123);
}

static void
test_jwt_exp_padding_accepted (void **state)
{
  (void) state;
  /* {"exp":12} is 10 bytes: base64 with "==" */
  char body[64];
  b64url ("{\"exp\":12}", body);
  char *t = NULL;
  assert_true (asprintf (&t, "e30.%s==.x", body) > 0);
  assert_int_equal (modal_jwt_exp (t), 12);
  free (t);
}

static void
test_jwt_exp_absent_or_odd (void **state)
{
  (void) state;
  assert_int_equal (exp_of ("{}"), 0);
  assert_int_equal (exp_of ("{\"iat\":1790000000}"), 0);
  assert_int_equal (exp_of ("{\"exp\":\"1790000000\"}"), 0); /* a string */
  assert_int_equal (exp_of ("{\"exp\":null}"), 0);
  assert_int_equal (exp_of ("{\"exp\":-5}"), 0);
  assert_int_equal (exp_of ("{\"exp\":0}"), 0);
  assert_int_equal (exp_of ("{\"exp\":1e300}"), 0); /* past the year 9999 */
  assert_int_equal (exp_of ("{\"EXP\":1790000000}"), 0);
  assert_int_equal (exp_of ("[1790000000]"), 0);
  assert_int_equal (exp_of ("not json"), 0);
  assert_int_equal (exp_of ("{\"exp\":1790000000"), 0); /* cut short */
}

static void
test_jwt_exp_not_a_jwt (void **state)
{
  (void) state;
  assert_int_equal (modal_jwt_exp (NULL), 0);
  assert_int_equal (modal_jwt_exp (""), 0);
  assert_int_equal (modal_jwt_exp ("opaque-token"), 0);
  assert_int_equal (modal_jwt_exp ("a.b"), 0);
  assert_int_equal (modal_jwt_exp ("a..c"), 0);
  assert_int_equal (modal_jwt_exp ("a.b.c.d.e"), 0); /* JWE-shaped */
  assert_int_equal (modal_jwt_exp ("a.!!!!.c"), 0);  /* not base64url */
  assert_int_equal (modal_jwt_exp ("a.eyJleHAiOjF9x.c"), 0); /* one char left over */
  /* a valid payload in the wrong place is not read */
  char body[64];
  b64url ("{\"exp\":1790000000}", body);
  char *t = NULL;
  assert_true (asprintf (&t, "%s.e30.sig", body) > 0);
  assert_int_equal (modal_jwt_exp (t), 0);
  free (t);
}

/* ---- error text ---- */

static struct modal_api *
api (const char *url)
{
  struct modal_api_options o = { .server_url = url,
                                 .token_id = "ak-unit",
                                 .token_secret = "as-very-secret-value",
                                 .source = "~/.modal.toml (profile work)" };
  struct modal_api *a = modal_api_new (&o);
  assert_non_null (a);
  return a;
}

static char *
text_of (struct modal_api *a, int code, enum grpc_origin origin, const char *message)
{
  struct grpc_result r = { .code = code, .origin = origin, .message = strdup (message) };
  char *t = modal_error_text (a, &r, "modal: doing it (Rpc)");
  grpc_result_free (&r);
  assert_non_null (t);
  return t;
}

static void
test_error_text_hints (void **state)
{
  (void) state;
  struct modal_api *a = api ("http://127.0.0.1:9");
  char *t = text_of (a, GRPC_UNAUTHENTICATED, GRPC_FROM_SERVER, "Invalid token");
  assert_string_equal (t, "modal: doing it (Rpc): UNAUTHENTICATED: Invalid token (Modal did "
                          "not accept the token from ~/.modal.toml (profile work): make a new "
                          "one with `modal token new`, or set MODAL_TOKEN_ID and "
                          "MODAL_TOKEN_SECRET)");
  free (t);
  t = text_of (a, GRPC_RESOURCE_EXHAUSTED, GRPC_FROM_SERVER, "too many");
  assert_non_null (strstr (t, "RESOURCE_EXHAUSTED: too many (a Modal quota"));
  free (t);
  t = text_of (a, GRPC_PERMISSION_DENIED, GRPC_FROM_SERVER, "no");
  assert_non_null (strstr (t, "PERMISSION_DENIED: no (the token is not allowed"));
  free (t);
  t = text_of (a, GRPC_NOT_FOUND, GRPC_FROM_SERVER, "Sandbox sb-1 not found");
  assert_non_null (strstr (t, "NOT_FOUND: Sandbox sb-1 not found (Modal does not know it"));
  free (t);
  t = text_of (a, GRPC_INVALID_ARGUMENT, GRPC_FROM_SERVER, "bad");
  assert_string_equal (t, "modal: doing it (Rpc): INVALID_ARGUMENT: bad");
  free (t);
  modal_api_free (a);
}

static void
test_error_text_no_secret_no_userinfo (void **state)
{
  (void) state;
  struct modal_api *a = api ("https://user:pw-in-url@modal.example:443/");
  char *t = text_of (a, GRPC_UNAVAILABLE, GRPC_FROM_TRANSPORT,
                     "https://user:pw-in-url@modal.example:443/modal.client.ModalClient/X: "
                     "echo as-very-secret-value \x1b[31m");
  assert_null (strstr (t, "pw-in-url"));
  assert_null (strstr (t, "as-very-secret-value"));
  assert_null (strchr (t, '\x1b'));
  assert_non_null (strstr (t, "Modal's API at https://modal.example:443 did not answer"));
  assert_non_null (strstr (t, "https://modal.example:443/modal.client.ModalClient/X"));
  free (t);
  modal_api_free (a);
  /* no api (out of memory before it): still a text */
  struct grpc_result r = { .code = GRPC_UNAUTHENTICATED, .message = strdup ("x") };
  t = modal_error_text (NULL, &r, "modal");
  assert_non_null (strstr (t, "the configured Modal credentials"));
  free (t);
  grpc_result_free (&r);
}

static void
test_api_defaults (void **state)
{
  (void) state;
  struct modal_api_options o = { 0 };
  struct modal_api *a = modal_api_new (&o);
  assert_non_null (a);
  struct grpc_result r = { .code = GRPC_DEADLINE_EXCEEDED, .origin = GRPC_FROM_TRANSPORT,
                           .message = strdup ("timeout") };
  char *t = modal_error_text (a, &r, "modal");
  assert_non_null (strstr (t, "https://api.modal.com:443"));
  free (t);
  grpc_result_free (&r);
  modal_api_free (a);
  struct modal_sandbox sb = { .app_id = strdup ("ap-1"), .task_id = strdup ("ta-1") };
  modal_sandbox_clear (&sb);
  assert_null (sb.app_id);
  assert_null (sb.task_id);
  modal_sandbox_clear (NULL);
}

int
main (void)
{
  curl_global_init (CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_jwt_exp_read),
    cmocka_unit_test (test_jwt_exp_padding_accepted),
    cmocka_unit_test (test_jwt_exp_absent_or_odd),
    cmocka_unit_test (test_jwt_exp_not_a_jwt),
    cmocka_unit_test (test_error_text_hints),
    cmocka_unit_test (test_error_text_no_secret_no_userinfo),
    cmocka_unit_test (test_api_defaults),
  };
  int rc = cmocka_run_group_tests (tests, NULL, NULL);
  curl_global_cleanup ();
  return rc;
}

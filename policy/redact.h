/* SPDX-License-Identifier: MIT */
/* Secrets out of command lines, before they are written anywhere (the
 * audit log, messages shown to a person).
 *
 * A command is kept readable: only the secret part is replaced with
 * REDACTED, so "curl -H 'Authorization: Bearer abc' https://x" becomes
 * "curl -H 'Authorization: Bearer <redacted>' https://x".  What is
 * recognised:
 *   - the password of a URL (scheme://user:PASSWORD@host), and secret
 *     query parameters (?token=, &password=, X-Amz-Signature=, ...);
 *   - Authorization / Proxy-Authorization header values (after the
 *     scheme word: Bearer, Basic, token, ...) and API-key / token
 *     headers (X-Api-Key:, X-Auth-Token:, Private-Token:, ...);
 *   - option values: --password, --passwd, --pass, --token, --api-key,
 *     --access-token, --client-secret, --secret-key, ... as "--opt=V" or
 *     "--opt V" (also with one dash, and keytool's -storepass/-keypass);
 *     curl's -u/--user user:PASSWORD; mysql/mariadb's -pPASSWORD;
 *     sshpass -p; docker/podman/helm login -p;
 *   - assignments NAME=VALUE whose upper-case NAME ends in TOKEN,
 *     PASSWORD, PASSWD, PASS, KEY, APIKEY, CREDENTIAL(S), or _PWD, or
 *     contains SECRET (GITHUB_TOKEN=, AWS_SECRET_ACCESS_KEY=,
 *     DB_PASSWORD=); and lower-case password=, token=, secret=, api_key=;
 *   - JSON fields ("password": "...", "token": ..., "api_key": ...) and
 *     YAML lines (password: ...) of the same names;
 *   - well-known token shapes: GitHub (ghp_, gho_, ghu_, ghs_, ghr_,
 *     github_pat_), OpenAI/Anthropic-style sk-... (20+ characters),
 *     Stripe sk_live_/rk_live_, Slack xox[bpasr]-, AWS access key ids
 *     (AKIA/ASIA + 16), JWTs (eyJ... with two dots), GitLab glpat-,
 *     Hugging Face hf_, Modal ak-/as-, Google AIza..., npm_, pypi-, and
 *     the body of PEM private keys.
 * A value that is a shell variable ($X, "$X") is left alone: it is a
 * reference, not the secret.  Redaction is best effort on text: a secret
 * of no known shape in no known place stays visible.
 *
 * The text is treated as bytes (invalid UTF-8 is fine).  If matching
 * ever fails (a pattern's resource limit on pathological input), the
 * whole text is replaced: failing closed costs readability, not secrets.
 * Thread-safe. */
#ifndef AIRLOCK_POLICY_REDACT_H
#define AIRLOCK_POLICY_REDACT_H

#define REDACTED "<redacted>"

/* A malloc'd copy of text with secrets replaced by REDACTED.  NULL only
   for NULL text (allocation failure aborts). */
char *redact_secrets (const char *text);

#endif

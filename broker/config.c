/* SPDX-License-Identifier: MIT */
/* Configuration: the schema table, the sources (defaults, system file,
 * user file, environment) and the getters.  See config.h and
 * docs/config.md. */
#define _GNU_SOURCE
#include "config.h"
#include "egress_policy.h"
#include "size_text.h"
#include "file_stamp.h"
#include "fnv1a.h"
#include "xalloc.h"

#include <cJSON.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A config file is a few hundred bytes; anything this large is a
 * mistake, and the bound keeps a hostile file from costing much. */
#define MAX_FILE_BYTES (1024 * 1024)
/* Characters of an offending value quoted in a message. */
#define GOT_MAX 60
/* Items of a list or map: far above any real use, and it keeps the
 * duplicate check of a map cheap. */
#define MAX_ITEMS 1024

/* ---- allocation: the broker cannot do anything useful without memory ---- */

/* ---- value checks: a string value, a list item or a map key ---- */

/* ok() may normalize the string in place; `what` completes "expected ..."
 * in messages; `type` names it in docs/config.md. */
struct check
{
  bool (*ok) (char *s);
  const char *what;
  const char *type;
};

/* A size value that ok_size accepted, in bytes. */
static uint64_t
size_bytes (const char *s)
{
  uint64_t v = 0;
  return size_parse (s, &v) ? v : 0;
}

/* A size (size_text.h); the suffix is upper-cased because the helper's
 * parser only takes that. */
static bool
ok_size (char *s)
{
  uint64_t v;
  if (!size_parse (s, &v))
    return false;
  char *end = s + strlen (s) - 1;
  *end = (char) toupper ((unsigned char) *end);
  return true;
}

/* A memory limit: a size of at least MEMORY_MIN; less cannot run the
 * session's shell, so it is a mistake, never a limit. */
static bool
ok_memory (char *s)
{
  return ok_size (s) && size_bytes (s) >= MEMORY_MIN;
}

/* Digits with an optional fraction, above zero: docker's --cpus. */
static bool
ok_cpus (char *s)
{
  char *p = s;
  bool nonzero = false;
  if (!isdigit ((unsigned char) *p))
    return false;
  for (; isdigit ((unsigned char) *p); p++)
    nonzero |= *p != '0';
  if (*p == '.')
    {
      if (!isdigit ((unsigned char) *++p))
        return false;
      for (; isdigit ((unsigned char) *p); p++)
        nonzero |= *p != '0';
    }
  return !*p && nonzero && strlen (s) <= 16;
}

static bool
ok_abs_path (char *s)
{
  return s[0] == '/';
}

/* SOURCE[:DEST]; DEST may have no further colon (it is a path). */
static bool
ok_bind (char *s)
{
  char *colon = strchr (s, ':');
  if (s[0] != '/')
    return false;
  return !colon || (colon[1] == '/' && !strchr (colon + 1, ':'));
}

/* SOURCE[:DEST[:OPTIONS]], apptainer's --bind. */
static bool
ok_apptainer_bind (char *s)
{
  char *colon = strchr (s, ':');
  return s[0] == '/' && (!colon || colon[1] == '/');
}

/* SOURCE:TARGET[:OPTIONS]; SOURCE a host path or a named volume. */
static bool
ok_volume (char *s)
{
  char *colon = strchr (s, ':');
  return colon && colon != s && colon[1] == '/';
}

static bool
ok_var_name (char *s)
{
  if (!isalpha ((unsigned char) *s) && *s != '_')
    return false;
  for (s++; *s; s++)
    if (!isalnum ((unsigned char) *s) && *s != '_')
      return false;
  return true;
}

static bool
ok_capability (char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    {
      if (!isalnum ((unsigned char) *s) && *s != '_')
        return false;
      *s = (char) toupper ((unsigned char) *s);
    }
  return true;
}

static bool
ok_url (char *s)
{
  return (!strncmp (s, "https://", 8) && s[8])
         || (!strncmp (s, "http://", 7) && s[7]);
}

/* Values that end up in an argv (ssh, apptainer): a leading '-' would be
 * read as an option. */
static bool
ok_argv_word (char *s)
{
  if (!*s || *s == '-')
    return false;
  for (; *s; s++)
    if (isspace ((unsigned char) *s) || iscntrl ((unsigned char) *s))
      return false;
  return true;
}

/* An ssh option for -o: Key=Value (the value may have spaces: it is one
 * argv item). */
static bool
ok_ssh_option (char *s)
{
  char *eq = strchr (s, '=');
  if (!eq || eq == s)
    return false;
  for (char *p = s; p < eq; p++)
    if (!isalnum ((unsigned char) *p))
      return false;
  for (char *p = eq + 1; *p; p++)
    if (iscntrl ((unsigned char) *p))
      return false;
  return eq[1] != 0;
}

/* A remote path: any text on one line. */
static bool
ok_line (char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    if (iscntrl ((unsigned char) *s))
      return false;
  return true;
}

/* KEY=VALUE of a Daytona label; airlock.* is airlock's own. */
static bool
ok_label (char *s)
{
  char *eq = strchr (s, '=');
  if (!eq || eq == s || !strncmp (s, "airlock.", 8))
    return false;
  for (char *p = s; *p; p++)
    if (iscntrl ((unsigned char) *p) || (p < eq && isspace ((unsigned char) *p)))
      return false;
  return true;
}

/* The allowlist's entries, parsed by the parser airlock-egress uses. */
static bool
ok_egress_rule (char *s)
{
  struct egress_rule *r = xcalloc (1, sizeof *r);
  char *err = NULL;
  bool ok = egress_rule_parse (s, r, &err) == 0;
  free (err);
  egress_rules_free (r, ok);
  return ok;
}

/* A name of network.resolve: an allow entry without wildcard or ports. */
static bool
ok_egress_name (char *s)
{
  return !strchr (s, ':') && strncmp (s, "*.", 2) && ok_egress_rule (s);
}

static bool
ok_egress_cidr (char *s)
{
  struct egress_cidr *c = xcalloc (1, sizeof *c);
  char *err = NULL;
  bool ok = egress_cidr_parse (s, c, &err) == 0;
  free (err);
  egress_cidrs_free (c, ok);
  return ok;
}

/* An IPv4 or IPv6 address, nothing else. */
static bool
ok_ip_address (char *s)
{
  unsigned char buf[16];
  return inet_pton (AF_INET, s, buf) == 1 || inet_pton (AF_INET6, s, buf) == 1;
}

static const struct check SIZE
    = { ok_size, "a size like 512M or 2G", "size" };
static const struct check MEMORY
    = { ok_memory, "a size of at least 16M, like 512M or 2G", "size, 16M or more" };
static const struct check CPUS
    = { ok_cpus, "a number of CPUs like 0.5 or 2", "decimal number" };
static const struct check ABS_PATH
    = { ok_abs_path, "an absolute path", "path" };
static const struct check BIND
    = { ok_bind, "SOURCE[:DEST] with absolute paths", "SOURCE[:DEST]" };
static const struct check APPTAINER_BIND
    = { ok_apptainer_bind, "SOURCE[:DEST[:OPTIONS]] with absolute paths",
        "SOURCE[:DEST[:OPTIONS]]" };
static const struct check VOLUME
    = { ok_volume, "SOURCE:TARGET[:OPTIONS] with an absolute TARGET",
        "SOURCE:TARGET[:OPTIONS]" };
static const struct check VAR_NAME
    = { ok_var_name, "a variable name like FOO_BAR", "variable name" };
static const struct check CAPABILITY
    = { ok_capability, "a capability name like NET_ADMIN",
        "capability name" };
static const struct check URL
    = { ok_url, "an http:// or https:// URL", "URL" };
static const struct check SSH_OPTION
    = { ok_ssh_option, "an ssh option like ServerAliveInterval=5", "Key=Value" };
static const struct check LINE
    = { ok_line, "a non-empty path on one line", "path" };
static const struct check LABEL
    = { ok_label, "KEY=VALUE (a key not starting with airlock.)", "KEY=VALUE" };
static const struct check EGRESS_RULE
    = { ok_egress_rule, "a name like example.com or *.example.com, optionally "
        "with ports (example.com:443 or example.com:80,443)", "NAME[:PORTS]" };
static const struct check EGRESS_NAME
    = { ok_egress_name, "a name like mirror.example.com", "name" };
static const struct check EGRESS_CIDR
    = { ok_egress_cidr, "a CIDR like 192.168.1.0/24 or fd00::/8, or an address",
        "CIDR" };
static const struct check IP_ADDRESS
    = { ok_ip_address, "an IPv4 or IPv6 address", "address" };
static const struct check ARGV_WORD
    = { ok_argv_word, "a non-empty name without spaces, not starting with -",
        "no spaces, no leading -" };

/* ---- the schema ---- */

enum cfg_type
{
  T_STRING,
  T_INT,
  T_BOOL,
  T_ENUM,
  T_LIST,
  T_MAP,
};

enum
{
  F_TILDE = 1, /* a leading ~ or ~/ (of the value or of each item) is $HOME */
  F_HIDE = 2,  /* values may be secrets: config_to_json hides them */
};

struct cfg_key
{
  const char *key;
  enum cfg_type type;
  const char *sdef;            /* T_STRING, T_ENUM; NULL: unset */
  long long idef, min, max;    /* T_INT */
  bool bdef;                   /* T_BOOL */
  const char *const *choices;  /* T_ENUM, NULL-terminated */
  const char *const *aliases;  /* T_ENUM: pairs ALIAS, CHOICE; NULL-ended */
  const struct check *check;   /* T_STRING, T_LIST items */
  const struct check *check_key; /* T_MAP keys */
  unsigned flags;
  const char *doc;
};

static const char *const backends[]
    = { "local", "docker", "ssh", "singularity", "modal", "daytona", NULL };
/* Apptainer is Singularity's new name: either names the backend. */
static const char *const backend_aliases[] = { "apptainer", "singularity", NULL };
static const char *const local_networks[]
    = { "loopback", "none", "host", "allowlist", NULL };
static const char *const modal_modes[] = { "auto", "direct", "managed", NULL };
static const char *const modal_networks[] = { "blocked", "open", NULL };
static const char *const ssh_strict[] = { "accept-new", "yes", NULL };
static const char *const spool_full_actions[] = { "continue", "stop", NULL };
static const char *const client_gone_actions[] = { "interrupt", "background", NULL };
static const char *const approval_modes[]
    = { "auto", "interactive", "ask", "deny", "approve", NULL };

#define DAY 86400LL

/* Lists and maps default to empty.  Environment variable names are derived
 * from the keys (env_name), never spelled out, so they cannot drift. */
static const struct cfg_key keys[] = {
  { .key = "backend", .type = T_ENUM, .sdef = "local", .choices = backends,
    .aliases = backend_aliases,
    .doc = "Where commands run: the execution backend (`apptainer` is taken "
           "as `singularity`)." },

  { .key = "session.idle_timeout", .type = T_INT,
    .idef = 300, .min = 1, .max = 30 * DAY,
    .doc = "Seconds a session may stay idle before it is stopped and its "
           "sandbox removed." },
  { .key = "exec.timeout", .type = T_INT, .idef = 180, .min = 1, .max = DAY,
    .doc = "Seconds a command may run unless the caller says otherwise; "
           "then its whole process tree is killed and it exits 124." },
  { .key = "exec.max_output_chars", .type = T_INT,
    .idef = 50000, .min = 1000, .max = 100000000,
    .doc = "Characters of a command's output returned inline, as a head "
           "and a tail; the full output is kept in a spill file." },
  { .key = "jobs.finished_ttl", .type = T_INT,
    .idef = 1800, .min = 0, .max = 30 * DAY,
    .doc = "Seconds the status and output spool of a finished job are kept "
           "(for reading by offset, job_output and attach)." },
  { .key = "jobs.spool_max", .type = T_STRING, .sdef = "1G", .check = &SIZE,
    .doc = "Bytes of a job's output kept in its spool on disk; later output "
           "is counted, not kept, and the result's spool_error says so." },
  { .key = "jobs.on_spool_full", .type = T_ENUM, .sdef = "continue",
    .choices = spool_full_actions,
    .doc = "When a job's spool is full (jobs.spool_max, or the disk): "
           "continue runs the command on, stop ends it (cause killed)." },
  { .key = "jobs.on_client_gone", .type = T_ENUM, .sdef = "interrupt",
    .choices = client_gone_actions,
    .doc = "When the client of a running foreground command goes away: "
           "interrupt stops it (its whole tree); background keeps it running "
           "as a background job, its output in the spool." },

  { .key = "policy.mode", .type = T_ENUM, .sdef = "auto",
    .choices = approval_modes,
    .doc = "What happens to a command that needs approval when the caller "
           "does not say: interactive asks you on the terminal; ask has the "
           "API client answer; deny refuses it (for delegated and unattended "
           "work); approve runs it, logged (explicit opt-in; the "
           "administrator may forbid it); auto is interactive at a terminal, "
           "else deny.  See docs/policy.md." },
  { .key = "policy.deny", .type = T_LIST,
    .doc = "Your own deny list: shell globs (case-insensitive) matched against "
           "the whole command and each simple command in it; a match is "
           "refused on every backend, in every mode." },
  { .key = "policy.bypass", .type = T_BOOL, .bdef = false,
    .doc = "Skip the dangerous-command rules (hard blocks and deny rules "
           "still apply).  Honoured only where the administrator's policy "
           "file says `set allow_bypass yes`." },

  { .key = "local.network", .type = T_ENUM, .sdef = "loopback",
    .choices = local_networks,
    .doc = "loopback: the sandbox's own network namespace with only `lo`; "
           "none: no network at all; host: the host's network, only where "
           "helper.conf allows it; allowlist: only the names of network.allow "
           "(docs/network.md)." },
  { .key = "local.memory", .type = T_STRING, .check = &MEMORY,
    .doc = "Memory limit (K, M, G, T: powers of 1024); unset: helper.conf's "
           "default." },
  { .key = "local.pids", .type = T_INT, .idef = 0, .min = 0, .max = 1000000,
    .doc = "Limit on the number of processes; 0: helper.conf's default." },
  { .key = "local.rootfs", .type = T_STRING, .check = &ABS_PATH,
    .flags = F_TILDE,
    .doc = "A directory you own holding an unpacked image, used as `/`; "
           "unset: the host's system directories, read-only." },
  { .key = "local.binds", .type = T_LIST, .check = &BIND, .flags = F_TILDE,
    .doc = "Host paths visible read-write in the sandbox, at DEST (default: "
           "the same path)." },
  { .key = "local.ro_binds", .type = T_LIST, .check = &BIND,
    .flags = F_TILDE,
    .doc = "Host paths visible read-only in the sandbox, at DEST (default: "
           "the same path)." },

  { .key = "network.allow", .type = T_LIST, .check = &EGRESS_RULE,
    .doc = "With the allowlist network: the names a sandbox may reach, "
           "`example.com`, `*.example.com` (names below it), each with "
           "optional ports (`example.com:443`, `example.com:80,443`; none: "
           "80 and 443).  Any other name does not resolve." },
  { .key = "network.resolve", .type = T_MAP, .check_key = &EGRESS_NAME, .check = &IP_ADDRESS,
    .doc = "Addresses for allowed names, used instead of DNS "
           "(`{\"mirror.test\": \"192.168.1.5\"}`)." },
  { .key = "network.allow_ranges", .type = T_LIST, .check = &EGRESS_CIDR,
    .doc = "CIDRs of loopback, private, link-local or metadata addresses an "
           "allowed name may still resolve to (e.g. a local package mirror); "
           "without one, such a name is refused." },
  { .key = "network.upstream_ranges", .type = T_LIST, .check = &EGRESS_CIDR,
    .doc = "CIDRs airlock may connect to on a sandbox's behalf at all; "
           "empty: any.  A guard (the tests set 127.0.0.0/8)." },
  { .key = "docker.image", .type = T_STRING, .sdef = "debian:bookworm-slim",
    .doc = "Image of the session container; it must contain `bash`." },
  { .key = "docker.network", .type = T_BOOL, .bdef = false,
    .doc = "Whether the container has a network (docker's default bridge); "
           "false: network mode `none`, only `lo`." },
  { .key = "docker.memory", .type = T_STRING, .check = &MEMORY,
    .doc = "Memory limit (K, M, G, T: powers of 1024); unset: none." },
  { .key = "docker.cpus", .type = T_STRING, .check = &CPUS,
    .doc = "CPU limit, as a string (\"1.5\"); unset: none." },
  { .key = "docker.pids_limit", .type = T_INT,
    .idef = 256, .min = 1, .max = 1000000,
    .doc = "Limit on the number of processes in the container." },
  { .key = "docker.user", .type = T_STRING,
    .doc = "User the container runs as (NAME, UID or UID:GID); unset: your "
           "own uid:gid.  Root (`root`, `0`, `0:0`) works but the open "
           "reply warns: root in a container is root of the host's "
           "kernel." },
  { .key = "docker.cap_add", .type = T_LIST, .check = &CAPABILITY,
    .doc = "Capabilities added back after all are dropped (upper-cased)." },
  { .key = "docker.volumes", .type = T_LIST, .check = &VOLUME,
    .flags = F_TILDE,
    .doc = "Volumes: SOURCE is a host path or a named volume.  A host path "
           "lets the container reach the host, which the approval gate "
           "takes into account." },
  { .key = "docker.env", .type = T_MAP, .check_key = &VAR_NAME,
    .flags = F_HIDE,
    .doc = "Environment variables set in the container; `airlock config "
           "show` hides the values." },
  { .key = "docker.forward_env", .type = T_LIST, .check = &VAR_NAME,
    .doc = "Names of environment variables passed from the caller into the "
           "container." },
  { .key = "docker.socket", .type = T_STRING, .sdef = "/var/run/docker.sock",
    .check = &ABS_PATH, .flags = F_TILDE,
    .doc = "The Docker Engine API's unix socket.  Set in a file or "
           "AIRLOCK_DOCKER_SOCKET, it wins; else DOCKER_HOST "
           "(`unix://PATH` only), else the default." },
  { .key = "docker.mount_workdir", .type = T_BOOL, .bdef = false,
    .doc = "Bind the session's working directory read-write at the same "
           "path in the container and start there (host access, which the "
           "approval gate takes into account); false: start in `/`." },
  { .key = "docker.tmpfs_size", .type = T_STRING, .sdef = "512M",
    .check = &SIZE,
    .doc = "Size of the container's `/tmp` (a tmpfs, like `/var/tmp` and "
           "`/run`)." },
  { .key = "docker.pull", .type = T_BOOL, .bdef = true,
    .doc = "Pull the image when it is not present." },
  { .key = "docker.read_only_rootfs", .type = T_BOOL, .bdef = false,
    .doc = "Make the image's files read-only (docker's ReadonlyRootfs); "
           "`/tmp`, `/var/tmp`, `/run` and volumes stay writable." },
  { .key = "docker.allow_docker_socket", .type = T_BOOL, .bdef = false,
    .doc = "Allow a volume that exposes the Docker socket in the container "
           "(that is root on the host)." },

  { .key = "ssh.host", .type = T_STRING, .check = &ARGV_WORD,
    .doc = "Remote host name or address; the ssh backend needs it." },
  { .key = "ssh.user", .type = T_STRING, .check = &ARGV_WORD,
    .doc = "Remote user; unset: ssh's choice (`~/.ssh/config`, else your "
           "user name)." },
  { .key = "ssh.port", .type = T_INT, .idef = 22, .min = 1, .max = 65535,
    .doc = "Remote port." },
  { .key = "ssh.key", .type = T_STRING, .check = &ABS_PATH, .flags = F_TILDE,
    .doc = "Private key file; unset: ssh's default keys and agent." },
  { .key = "ssh.control_persist", .type = T_INT,
    .idef = 300, .min = 1, .max = DAY,
    .doc = "Seconds the shared connection stays open after its last use." },
  { .key = "ssh.remote_dir", .type = T_STRING, .sdef = ".airlock",
    .check = &ARGV_WORD,
    .doc = "Remote directory of airlock's job directories; relative to the "
           "remote login directory unless absolute." },
  { .key = "ssh.workdir", .type = T_STRING, .check = &LINE,
    .doc = "Remote working directory of the session; unset: the remote login "
           "directory." },
  { .key = "ssh.strict_host_key_checking", .type = T_ENUM, .sdef = "accept-new",
    .choices = ssh_strict,
    .doc = "`accept-new`: a host seen for the first time is recorded, a changed "
           "key refused; `yes`: only hosts already in known_hosts (hardened "
           "setups).  A changed host key is never replaced." },
  { .key = "ssh.known_hosts", .type = T_STRING, .check = &ABS_PATH, .flags = F_TILDE,
    .doc = "Known hosts file (UserKnownHostsFile); unset: ssh's default." },
  { .key = "ssh.config", .type = T_STRING, .check = &ABS_PATH, .flags = F_TILDE,
    .doc = "ssh client configuration file (-F); unset: ssh's default "
           "(`~/.ssh/config`)." },
  { .key = "ssh.options", .type = T_LIST, .check = &SSH_OPTION,
    .doc = "Extra ssh options, `Key=Value` each (e.g. `ProxyJump=bastion`); "
           "airlock's own (BatchMode, Control*, the timeouts above) win." },
  { .key = "ssh.connect_timeout", .type = T_INT, .idef = 10, .min = 1, .max = 300,
    .doc = "Seconds to wait for the connection (ConnectTimeout)." },
  { .key = "ssh.server_alive_interval", .type = T_INT, .idef = 15, .min = 1,
    .max = 3600,
    .doc = "Seconds between keepalives on a quiet connection "
           "(ServerAliveInterval)." },
  { .key = "ssh.server_alive_count", .type = T_INT, .idef = 3, .min = 1, .max = 100,
    .doc = "Keepalives unanswered before the connection counts as lost "
           "(ServerAliveCountMax); commands resume when it is back." },
  { .key = "ssh.disposable", .type = T_BOOL, .bdef = false,
    .doc = "The host is a disposable sandbox: the approval gate treats it as "
           "isolated.  Otherwise it is a real machine and gets the full gate." },
  { .key = "ssh.job_ttl", .type = T_INT, .idef = DAY, .min = 60, .max = 30 * DAY,
    .doc = "Seconds after which job directories left by a daemon that died "
           "are removed, at the next connection." },
  { .key = "ssh.program", .type = T_STRING, .sdef = "ssh", .check = &ARGV_WORD,
    .doc = "The OpenSSH client to run (a name in PATH, or a path)." },

  { .key = "singularity.executable", .type = T_STRING, .check = &ARGV_WORD,
    .flags = F_TILDE,
    .doc = "The Apptainer or Singularity program (a name in PATH, or a path); "
           "unset: `apptainer`, else `singularity`, from PATH.  Its version "
           "decides which hardening flags are passed (docs/singularity.md)." },
  { .key = "singularity.image", .type = T_STRING,
    .sdef = "docker://debian:bookworm-slim", .check = &ARGV_WORD,
    .flags = F_TILDE,
    .doc = "Image: a `.sif` file or an unpacked sandbox directory, used as "
           "they are, or a `docker://`, `oras://` or `library://` reference, "
           "built once into a cached SIF.  It must contain `bash`." },
  { .key = "singularity.network", .type = T_BOOL, .bdef = false,
    .doc = "Whether the instance has the host's network; false: a network "
           "namespace of its own with only `lo` (`--net --network none`)." },
  { .key = "singularity.memory", .type = T_STRING, .check = &MEMORY,
    .doc = "Memory limit (`--memory`; K, M, G, T: powers of 1024); unset: "
           "none.  Passed only where the version has it (Apptainer 1.1, "
           "SingularityCE 3.10), else the open reply warns." },
  { .key = "singularity.cpus", .type = T_STRING, .check = &CPUS,
    .doc = "CPU limit (`--cpus`), as a string (\"1.5\"); unset: none.  As "
           "singularity.memory." },
  { .key = "singularity.pids_limit", .type = T_INT,
    .idef = 0, .min = 0, .max = 1000000,
    .doc = "Limit on the number of processes (`--pids-limit`); 0: none.  As "
           "singularity.memory." },
  { .key = "singularity.binds", .type = T_LIST, .check = &APPTAINER_BIND,
    .flags = F_TILDE,
    .doc = "Host paths bound into the instance, `SRC[:DST[:ro|rw]]`.  One "
           "writable inside lets the instance reach the host, which the "
           "approval gate takes into account." },
  { .key = "singularity.env", .type = T_MAP, .check_key = &VAR_NAME,
    .flags = F_HIDE,
    .doc = "Environment variables set in the instance (as `APPTAINERENV_*` "
           "of the exec, never a command line); `airlock config show` hides "
           "the values." },
  { .key = "singularity.forward_env", .type = T_LIST, .check = &VAR_NAME,
    .doc = "Names of environment variables passed from the caller into the "
           "instance." },
  { .key = "singularity.mount_workdir", .type = T_BOOL, .bdef = false,
    .doc = "Bind the session's working directory read-write at the same "
           "path in the instance and start there (host access, which the "
           "approval gate takes into account); false: start in `/`." },
  { .key = "singularity.persistent", .type = T_BOOL, .bdef = false,
    .doc = "false: the image's files are writable in a tmpfs "
           "(`--writable-tmpfs`); true: in an overlay directory of the "
           "session's (`--overlay`), under your state directory.  Either is "
           "removed when the session closes." },
  { .key = "singularity.start_timeout", .type = T_INT, .idef = 120, .min = 1,
    .max = 3600,
    .doc = "Seconds `instance start` may take; then it is killed and the open "
           "fails saying so (the daemon waits for it)." },
  { .key = "singularity.cache_dir", .type = T_STRING, .check = &ABS_PATH,
    .flags = F_TILDE,
    .doc = "Where SIFs built from `docker://`, `oras://` and `library://` "
           "images are kept (see docs/cache.md); unset: "
           "`/scratch/$USER/airlock/sif` when `/scratch/$USER` is a writable "
           "directory of yours, else `sif` in airlock's state directory "
           "(`$XDG_STATE_HOME/airlock`, else `~/.local/state/airlock`)." },
  { .key = "singularity.cache_max", .type = T_STRING, .sdef = "20G",
    .check = &SIZE,
    .doc = "Size cap of the SIF cache: above it, the least recently used "
           "SIFs not in use are evicted after a build." },
  { .key = "singularity.disk_floor", .type = T_STRING, .sdef = "2G",
    .check = &SIZE,
    .doc = "Free space a build must leave on the cache's filesystem; a build "
           "that would leave less is refused, with the numbers." },
  { .key = "singularity.build_timeout", .type = T_INT, .idef = 1800,
    .min = 10, .max = DAY,
    .doc = "Seconds a SIF build may take; then it is killed with its "
           "process group." },

  { .key = "modal.mode", .type = T_ENUM, .sdef = "auto",
    .choices = modal_modes,
    .doc = "direct: your own Modal credentials; managed: through the "
           "managed tool gateway; auto: managed when available, else "
           "direct.  With neither, creating a session fails." },
  { .key = "modal.image", .type = T_STRING, .sdef = "debian:bookworm-slim",
    .doc = "Registry image of the sandbox, or a saved image id (`im-...`)." },
  { .key = "modal.app", .type = T_STRING, .sdef = "airlock",
    .doc = "Modal app the sandboxes belong to." },
  { .key = "modal.timeout", .type = T_INT, .idef = 3600, .min = 60,
    .max = DAY,
    .doc = "Seconds a Modal sandbox may live at most (Modal ends it then, and "
           "the session is lost): sent as it is, never capped silently." },
  { .key = "modal.idle_timeout", .type = T_INT, .idef = 0, .min = 0, .max = DAY,
    .doc = "Seconds without a running command after which Modal ends the "
           "sandbox; 0: never (the session's own session.idle_timeout closes "
           "idle sessions too)." },
  { .key = "modal.network", .type = T_ENUM, .sdef = "blocked",
    .choices = modal_networks,
    .doc = "blocked: the sandbox reaches no network (Modal's network_access "
           "BLOCKED), except modal.allow_cidrs; open: any." },
  { .key = "modal.allow_cidrs", .type = T_LIST, .check = &ARGV_WORD,
    .doc = "With modal.network blocked: the CIDRs the sandbox may still reach "
           "(Modal's ALLOWLIST), e.g. `10.0.0.0/8`." },
  { .key = "modal.cpus", .type = T_INT, .idef = 0, .min = 0, .max = 64,
    .doc = "CPU cores of the sandbox; 0: Modal's default." },
  { .key = "modal.memory", .type = T_STRING, .check = &SIZE,
    .doc = "Memory of the sandbox (rounded up to whole MiB); unset: Modal's "
           "default." },
  { .key = "modal.workdir", .type = T_STRING, .check = &LINE,
    .doc = "Working directory of the session in the sandbox; unset: `/root`." },
  { .key = "modal.lease", .type = T_INT, .idef = 120, .min = 0, .max = DAY,
    .doc = "Seconds a direct sandbox outlives a daemon that stopped renewing "
           "its lease (killed, its host crashed or cut off): then it ends "
           "itself, with everything running in it, instead of costing until "
           "modal.timeout; renewed four times per lease.  0: no lease." },
  { .key = "modal.start_timeout", .type = T_INT, .idef = 600, .min = 10,
    .max = 3600,
    .doc = "Seconds building the image and scheduling the sandbox may take; "
           "then the open fails and a sandbox it created is terminated." },

  { .key = "daytona.api_url", .type = T_STRING,
    .sdef = "https://app.daytona.io/api", .check = &URL,
    .doc = "Daytona API endpoint.  Not set in a file or `AIRLOCK_DAYTONA_API_URL`: "
           "`DAYTONA_API_URL` from the environment of the client that opens the "
           "session (or the deprecated `DAYTONA_SERVER_URL`), else this default." },
  { .key = "daytona.api_key_env", .type = T_STRING,
    .sdef = "DAYTONA_API_KEY", .check = &VAR_NAME,
    .doc = "Name of the environment variable holding the API key (sent as a "
           "bearer token, only in a request header); the key itself is never "
           "in the config.  Without it: `DAYTONA_JWT_TOKEN` with "
           "`DAYTONA_ORGANIZATION_ID`." },
  { .key = "daytona.target", .type = T_STRING, .check = &ARGV_WORD,
    .doc = "Region, e.g. `us`; unset: `DAYTONA_TARGET` from the environment, "
           "else the organization's default." },
  { .key = "daytona.image", .type = T_STRING, .sdef = "debian:bookworm-slim",
    .check = &ARGV_WORD,
    .doc = "Image of the sandbox (built by Daytona as `FROM image`); it must "
           "contain `bash`.  Ignored when daytona.snapshot is set." },
  { .key = "daytona.snapshot", .type = T_STRING, .check = &ARGV_WORD,
    .doc = "A Daytona snapshot (name or id) to create the sandbox from, instead "
           "of daytona.image; faster to start.  Daytona refuses resources with a "
           "snapshot: daytona.cpus, memory and disk must then be unset." },
  { .key = "daytona.cpus", .type = T_INT, .idef = 0, .min = 0, .max = 256,
    .doc = "CPU cores of the sandbox; 0: Daytona's default.  Image only." },
  { .key = "daytona.memory", .type = T_STRING, .check = &SIZE,
    .doc = "Memory of the sandbox, rounded up to whole GiB; unset: Daytona's "
           "default.  Image only." },
  { .key = "daytona.disk", .type = T_STRING, .check = &SIZE,
    .doc = "Disk of the sandbox, rounded up to whole GiB; unset: Daytona's "
           "default.  Image only." },
  { .key = "daytona.env", .type = T_MAP, .check_key = &VAR_NAME,
    .flags = F_HIDE,
    .doc = "Environment variables of the sandbox (sent in the create request's "
           "body); `airlock config show` hides the values." },
  { .key = "daytona.forward_env", .type = T_LIST, .check = &VAR_NAME,
    .doc = "Names of environment variables passed from the caller into the "
           "sandbox's environment." },
  { .key = "daytona.labels", .type = T_LIST, .check = &LABEL,
    .doc = "Extra labels of the sandbox, `KEY=VALUE` each (airlock's own, "
           "`airlock.owner` and `airlock.session`, are always set)." },
  { .key = "daytona.auto_stop", .type = T_INT, .idef = 0, .min = 0, .max = 30 * 1440,
    .doc = "Minutes of inactivity after which Daytona stops the sandbox; 0: "
           "never.  A stop kills the commands running in it (the session is then "
           "lost), so set it only to bound the cost of forgotten sessions." },
  { .key = "daytona.auto_archive", .type = T_INT, .idef = 0, .min = 0,
    .max = 30 * 1440,
    .doc = "Minutes a stopped sandbox stays before Daytona archives it (cheaper "
           "storage, slower to start); 0: Daytona's default (7 days)." },
  { .key = "daytona.keep", .type = T_BOOL, .bdef = false,
    .doc = "false: the sandbox is deleted when the session closes; true: only "
           "stopped, and the next open of a session of the same name reuses it "
           "(started again, or restored when archived).  A stopped sandbox still "
           "costs its disk." },
  { .key = "daytona.start_timeout", .type = T_INT, .idef = 300, .min = 10,
    .max = 3600,
    .doc = "Seconds creating (building the image) and starting the sandbox may "
           "take; then the open fails and a sandbox it created is deleted." },
  { .key = "daytona.workdir", .type = T_STRING, .check = &LINE,
    .doc = "Working directory of the session in the sandbox; unset: the "
           "toolbox's work directory (the image's WORKDIR, else the home "
           "directory)." },
};

#define N_KEYS (sizeof keys / sizeof keys[0])

/* Titles of the sections of docs/config.md, in table order. */
static const struct
{
  const char *name, *title;
} sections[] = {
  { "", "Backend choice" },
  { "session", "Sessions" },
  { "exec", "Commands" },
  { "jobs", "Background jobs" },
  { "policy", "The approval gate" },
  { "local", "local: a namespace sandbox on this host" },
  { "network", "network: the allowlist of local sandboxes" },
  { "docker", "docker: a container of the local Docker Engine" },
  { "ssh", "ssh: a remote host through OpenSSH" },
  { "singularity", "singularity: an Apptainer or Singularity instance" },
  { "modal", "modal: a Modal cloud sandbox" },
  { "daytona", "daytona: a Daytona cloud sandbox" },
};

/* AIRLOCK_ and the key upper-cased, dots and dashes as underscores. */
static void
env_name (const char *key, char *buf, size_t size)
{
  size_t n = (size_t) snprintf (buf, size, "AIRLOCK_%s", key);
  for (char *p = buf + 8; p < buf + n && p < buf + size; p++)
    *p = (*p == '.' || *p == '-') ? '_' : (char) toupper ((unsigned char) *p);
}

static ssize_t
find_key (const char *key)
{
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strcmp (keys[i].key, key))
      return (ssize_t) i;
  return -1;
}

/* True when some key lies under `prefix.`: an object there is a section. */
static bool
is_section (const char *prefix)
{
  size_t n = strlen (prefix);
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strncmp (keys[i].key, prefix, n) && keys[i].key[n] == '.')
      return true;
  return false;
}

/* ---- values ---- */

struct cfg_value
{
  char *s;      /* T_STRING, T_ENUM */
  long long i;  /* T_INT */
  bool b;       /* T_BOOL */
  char **list;  /* T_LIST, T_MAP ("K=V"): NULL-terminated */
  char *origin; /* NULL: the default */
};

struct airlock_config
{
  struct cfg_value v[N_KEYS];
  char **client_env; /* the environment it was read from; NULL: ours */
  /* The system and the user file, as they were when read. */
  char *paths[2];
  struct file_stamp stamps[2];
};

static void
value_free (struct cfg_value *v)
{
  free (v->s);
  if (v->list)
    for (char **p = v->list; *p; p++)
      free (*p);
  free (v->list);
  free (v->origin);
  memset (v, 0, sizeof *v);
}

static void
value_default (const struct cfg_key *k, struct cfg_value *v)
{
  memset (v, 0, sizeof *v);
  v->s = k->sdef ? xstrdup (k->sdef) : NULL;
  v->i = k->idef;
  v->b = k->bdef;
  if (k->type == T_LIST || k->type == T_MAP)
    v->list = xcalloc (1, sizeof *v->list);
}

/* Takes nv; the origin is copied. */
static void
value_set (struct airlock_config *c, size_t i, struct cfg_value *nv,
           const char *origin)
{
  value_free (&c->v[i]);
  c->v[i] = *nv;
  c->v[i].origin = origin ? xstrdup (origin) : NULL;
}

/* ---- messages ---- */

/* Cut a quoted value short so one bad entry cannot flood the terminal;
 * takes s. */
static char *
shorten (char *s)
{
  size_t cut = GOT_MAX - 3;
  if (strlen (s) <= GOT_MAX)
    return s;
  while (cut > 0 && ((unsigned char) s[cut] & 0xC0) == 0x80)
    cut--; /* not inside a UTF-8 sequence */
  memcpy (s + cut, "...", 4);
  return s;
}

static char *
got_json (const cJSON *j)
{
  return shorten (nonnull (cJSON_PrintUnformatted (j)));
}

/* A string quoted and escaped as JSON: control characters stay visible. */
static char *
got_string (const char *s)
{
  cJSON *j = nonnull (cJSON_CreateString (s));
  char *out = got_json (j);
  cJSON_Delete (j);
  return out;
}

static char *
expected (const char *what, char *got)
{
  char *msg = xasprintf ("expected %s, got %s", what, got);
  free (got);
  return msg;
}

/* "one of a, b, c" for an enum. */
static char *
choices_text (const char *const *choices)
{
  char *buf = NULL;
  size_t size = 0;
  FILE *f = nonnull (open_memstream (&buf, &size));
  fputs ("one of ", f);
  for (const char *const *p = choices; *p; p++)
    fprintf (f, "%s%s", p == choices ? "" : ", ", *p);
  if (fclose (f))
    oom ();
  return buf;
}

/* ---- parsing one value ---- */

/* $HOME, else the password database's idea of it. */
const char *
config_home_dir (void)
{
  const char *home = getenv ("HOME");
  if (home && home[0] == '/')
    return home;
  struct passwd *pw = getpwuid (getuid ());
  return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/* Tilde expansion and the key's check on one string (the value or a list
 * item); takes s.  NULL with *problem when it does not pass. */
static char *
finish_string (const struct cfg_key *k, char *s, char **problem)
{
  char *v = s;
  if ((k->flags & F_TILDE) && s[0] == '~'
      && (s[1] == '\0' || s[1] == '/' || s[1] == ':'))
    {
      const char *home = config_home_dir ();
      if (!home)
        {
          *problem = xasprintf ("cannot expand ~ in %s: no home directory", s);
          free (s);
          return NULL;
        }
      v = xasprintf ("%s%s", home, s + 1);
    }
  if (k->check && !k->check->ok (v))
    {
      /* quote what the user wrote, not the expansion */
      *problem = expected (k->check->what, got_string (s));
      if (v != s)
        free (v);
      free (s);
      return NULL;
    }
  if (v != s)
    free (s);
  return v;
}

static bool
in_choices (const char *const *choices, const char *s)
{
  for (const char *const *p = choices; *p; p++)
    if (!strcmp (*p, s))
      return true;
  return false;
}

/* The choice s names, itself or through an alias; NULL: none. */
static const char *
enum_choice (const struct cfg_key *k, const char *s)
{
  for (const char *const *a = k->aliases; a && a[0]; a += 2)
    if (!strcmp (a[0], s))
      return a[1];
  return in_choices (k->choices, s) ? s : NULL;
}

static char *
int_problem (const struct cfg_key *k, char *got)
{
  char *what = xasprintf ("an integer between %lld and %lld", k->min, k->max);
  char *msg = expected (what, got);
  free (what);
  return msg;
}

static char *
list_from_json (const struct cfg_key *k, const cJSON *j, struct cfg_value *out)
{
  const cJSON *item;
  if (!cJSON_IsArray (j))
    return expected ("a list of strings", got_json (j));
  cJSON_ArrayForEach (item, j)
    if (!cJSON_IsString (item))
      return expected ("a list of strings", got_json (j));
  size_t n = (size_t) cJSON_GetArraySize (j), idx = 0;
  if (n > MAX_ITEMS)
    return xasprintf ("more than %d items", MAX_ITEMS);

  out->list = xcalloc (n + 1, sizeof *out->list);
  cJSON_ArrayForEach (item, j)
    {
      char *problem = NULL;
      char *s = finish_string (k, xstrdup (item->valuestring), &problem);
      if (!s)
        {
          char *msg = xasprintf ("item %zu: %s", idx + 1, problem);
          free (problem);
          return msg;
        }
      out->list[idx++] = s;
    }
  return NULL;
}

static char *
map_from_json (const struct cfg_key *k, const cJSON *j, struct cfg_value *out)
{
  const cJSON *item;
  if (!cJSON_IsObject (j))
    return expected ("an object with string values", got_json (j));
  cJSON_ArrayForEach (item, j)
    if (!cJSON_IsString (item))
      return expected ("an object with string values", got_json (j));
  size_t n = (size_t) cJSON_GetArraySize (j), idx = 0;
  if (n > MAX_ITEMS)
    return xasprintf ("more than %d items", MAX_ITEMS);

  out->list = xcalloc (n + 1, sizeof *out->list);
  cJSON_ArrayForEach (item, j)
    {
      char *name = xstrdup (item->string);
      bool ok = *name && !strchr (name, '=')
                && (!k->check_key || k->check_key->ok (name));
      if (!ok)
        {
          char *got = got_string (item->string);
          char *msg = xasprintf ("key %s: expected %s", got,
                                 k->check_key ? k->check_key->what
                                              : "a non-empty name without =");
          free (got);
          free (name);
          return msg;
        }
      if (k->check && !k->check->ok (item->valuestring))
        {
          char *got = got_string (item->valuestring);
          char *msg = xasprintf ("key %s: expected %s, got %s", item->string,
                                 k->check->what, got);
          free (got);
          free (name);
          return msg;
        }
      size_t len = strlen (name);
      for (size_t e = 0; e < idx; e++)
        if (!strncmp (out->list[e], name, len) && out->list[e][len] == '=')
          {
            char *got = got_string (item->string);
            char *msg = xasprintf ("key %s: set more than once", got);
            free (got);
            free (name);
            return msg;
          }
      out->list[idx++] = xasprintf ("%s=%s", name, item->valuestring);
      free (name);
    }
  return NULL;
}

/* A value from a file (or an environment variable's JSON) into *out;
 * NULL, or the problem (malloc'd).  *out needs value_free either way. */
static char *
value_from_json (const struct cfg_key *k, const cJSON *j, struct cfg_value *out)
{
  char *problem = NULL;
  memset (out, 0, sizeof *out);
  switch (k->type)
    {
    case T_STRING:
      if (!cJSON_IsString (j))
        return expected ("a string", got_json (j));
      out->s = finish_string (k, xstrdup (j->valuestring), &problem);
      return problem;
    case T_ENUM:
      if (!cJSON_IsString (j) || !enum_choice (k, j->valuestring))
        {
          char *what = choices_text (k->choices);
          problem = expected (what, got_json (j));
          free (what);
          return problem;
        }
      out->s = xstrdup (enum_choice (k, j->valuestring));
      return NULL;
    case T_INT:
      {
        /* every range is far inside a double's exact integers */
        double d = cJSON_IsNumber (j) ? j->valuedouble : 0;
        if (!cJSON_IsNumber (j) || d < (double) k->min || d > (double) k->max
            || (double) (long long) d != d)
          return int_problem (k, got_json (j));
        out->i = (long long) d;
        return NULL;
      }
    case T_BOOL:
      if (!cJSON_IsBool (j))
        return expected ("true or false", got_json (j));
      out->b = cJSON_IsTrue (j);
      return NULL;
    case T_LIST:
      return list_from_json (k, j, out);
    case T_MAP:
      return map_from_json (k, j, out);
    }
  abort ();
}

/* A value from an environment variable: strings as they are, numbers in
 * decimal, lists and maps as JSON. */
static char *
value_from_env (const struct cfg_key *k, const char *s, struct cfg_value *out)
{
  char *problem = NULL;
  memset (out, 0, sizeof *out);
  switch (k->type)
    {
    case T_STRING:
      out->s = finish_string (k, xstrdup (s), &problem);
      return problem;
    case T_ENUM:
      if (!enum_choice (k, s))
        {
          char *what = choices_text (k->choices);
          problem = expected (what, got_string (s));
          free (what);
          return problem;
        }
      out->s = xstrdup (enum_choice (k, s));
      return NULL;
    case T_INT:
      {
        const char *p = s + (*s == '-');
        char *end;
        errno = 0;
        long long v = strtoll (s, &end, 10);
        if (!isdigit ((unsigned char) *p) || *end || errno || v < k->min
            || v > k->max)
          return int_problem (k, got_string (s));
        out->i = v;
        return NULL;
      }
    case T_BOOL:
      if (!strcasecmp (s, "true") || !strcasecmp (s, "yes")
          || !strcmp (s, "1"))
        out->b = true;
      else if (!strcasecmp (s, "false") || !strcasecmp (s, "no")
               || !strcmp (s, "0"))
        out->b = false;
      else
        return expected ("true or false (or yes, no, 1, 0)", got_string (s));
      return NULL;
    case T_LIST:
    case T_MAP:
      {
        cJSON *j = cJSON_Parse (s);
        if (!j)
          return expected (k->type == T_LIST
                               ? "a JSON list of strings"
                               : "a JSON object with string values",
                           got_string (s));
        problem = value_from_json (k, j, out);
        cJSON_Delete (j);
        return problem;
      }
    }
  abort ();
}

/* ---- files ---- */

/* Edit distance, for "did you mean"; keys are short. */
static size_t
distance (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  size_t row[65];
  if (la > 64 || lb > 64)
    return SIZE_MAX;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++)
    {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= lb; j++)
        {
          size_t up = row[j];
          size_t best = diag + (a[i - 1] != b[j - 1]);
          if (up + 1 < best)
            best = up + 1;
          if (row[j - 1] + 1 < best)
            best = row[j - 1] + 1;
          row[j] = best;
          diag = up;
        }
    }
  return row[lb];
}

static char *
unknown_key (const char *path, const char *key)
{
  size_t best = 3, at = N_KEYS;
  for (size_t i = 0; i < N_KEYS; i++)
    {
      size_t d = distance (key, keys[i].key);
      if (d < best)
        best = d, at = i;
    }
  if (at < N_KEYS)
    return xasprintf ("%s: %s: unknown key (did you mean %s?)", path, key,
                      keys[at].key);
  return xasprintf ("%s: %s: unknown key", path, key);
}

/* One object of a file, keys under `prefix` ("" at the top).  `seen`
 * catches a key given twice (nested and flat, or duplicated). */
static char *
apply_object (struct airlock_config *c, const char *path, const cJSON *obj,
              const char *prefix, bool *seen)
{
  const cJSON *item;
  cJSON_ArrayForEach (item, obj)
    {
      char *key = *prefix ? xasprintf ("%s.%s", prefix, item->string)
                          : xstrdup (item->string);
      ssize_t i = find_key (key);
      char *err = NULL;
      if (i >= 0)
        {
          struct cfg_value nv = { 0 };
          char *problem = NULL;
          if (seen[i])
            problem = xstrdup ("set more than once");
          else if (cJSON_IsNull (item))
            value_default (&keys[i], &nv); /* back to the built-in default */
          else
            problem = value_from_json (&keys[i], item, &nv);
          if (problem)
            {
              err = xasprintf ("%s: %s: %s", path, key, problem);
              free (problem);
              if (!seen[i])
                value_free (&nv);
            }
          else
            {
              value_set (c, (size_t) i, &nv, path);
              seen[i] = true;
            }
        }
      else if (is_section (key))
        {
          if (cJSON_IsObject (item))
            err = apply_object (c, path, item, key, seen);
          else
            {
              char *got = got_json (item);
              err = xasprintf ("%s: %s: expected an object (a section), "
                               "got %s",
                               path, key, got);
              free (got);
            }
        }
      else
        err = unknown_key (path, key);
      free (key);
      if (err)
        return err;
    }
  return NULL;
}

static void
line_col (const char *buf, const char *at, int *line, int *col)
{
  *line = 1;
  *col = 1;
  for (const char *p = buf; at && p < at && *p; p++)
    if (*p == '\n')
      ++*line, *col = 1;
    else
      ++*col;
}

/* Reads path into *buf (NUL-terminated).  false: missing (not an error,
 * *err NULL) or an error (*err set). */
static bool
read_file (const char *path, char **buf, size_t *len, char **err)
{
  /* O_NONBLOCK: opening a FIFO must not hang; it is refused below */
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st;
  *err = NULL;
  if (fd < 0)
    {
      if (errno != ENOENT)
        *err = xasprintf ("%s: cannot open: %s", path, strerror (errno));
      return false;
    }
  if (fstat (fd, &st) < 0)
    *err = xasprintf ("%s: cannot read: %s", path, strerror (errno));
  else if (S_ISDIR (st.st_mode))
    *err = xasprintf ("%s: is a directory, not a file", path);
  else if (!S_ISREG (st.st_mode))
    *err = xasprintf ("%s: not a regular file", path);
  else if (st.st_size > MAX_FILE_BYTES)
    *err = xasprintf ("%s: larger than %d bytes", path, MAX_FILE_BYTES);
  if (*err)
    {
      close (fd);
      return false;
    }

  /* read to the end rather than trust st_size: the file may change */
  size_t n = 0;
  char *b = xcalloc (1, MAX_FILE_BYTES + 2);
  for (;;)
    {
      ssize_t r = read (fd, b + n, MAX_FILE_BYTES + 1 - n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          *err = xasprintf ("%s: cannot read: %s", path, strerror (errno));
          break;
        }
      if (r == 0)
        break;
      n += (size_t) r;
      if (n > MAX_FILE_BYTES)
        {
          *err = xasprintf ("%s: larger than %d bytes", path, MAX_FILE_BYTES);
          break;
        }
    }
  close (fd);
  if (*err)
    {
      free (b);
      return false;
    }
  *buf = b;
  *len = n;
  return true;
}

static char *
load_file (struct airlock_config *c, const char *path)
{
  char *buf, *err;
  size_t len;
  int line, col;
  if (!read_file (path, &buf, &len, &err))
    return err;

  const char *nul = memchr (buf, '\0', len);
  if (nul)
    {
      line_col (buf, nul, &line, &col);
      err = xasprintf ("%s:%d:%d: the file contains a NUL byte", path, line,
                       col);
      free (buf);
      return err;
    }
  /* an empty file, as a package might ship, means no settings */
  if (buf[strspn (buf, " \t\r\n")] == '\0')
    {
      free (buf);
      return NULL;
    }

  /* return_parse_end gives this parse's error position; cJSON_GetErrorPtr
   * would be a global shared by every thread */
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts (buf, &end, true);
  if (!root)
    {
      line_col (buf, end, &line, &col);
      err = xasprintf ("%s:%d:%d: malformed JSON", path, line, col);
    }
  else if (!cJSON_IsObject (root))
    {
      char *got = got_json (root);
      err = xasprintf ("%s: expected a JSON object at the top level, got %s",
                       path, got);
      free (got);
    }
  else
    {
      bool seen[N_KEYS] = { false };
      err = apply_object (c, path, root, "", seen);
    }
  cJSON_Delete (root);
  free (buf);
  return err;
}

/* A variable of envp ("NAME=value" strings), or of our own environment
 * when envp is NULL. */
static const char *
env_get (const char *const *envp, const char *name)
{
  if (!envp)
    return getenv (name);
  size_t n = strlen (name);
  for (; *envp; envp++)
    if (!strncmp (*envp, name, n) && (*envp)[n] == '=')
      return *envp + n + 1;
  return NULL;
}

static char *
load_env (struct airlock_config *c, const char *const *envp)
{
  for (size_t i = 0; i < N_KEYS; i++)
    {
      char name[128];
      env_name (keys[i].key, name, sizeof name);
      const char *s = env_get (envp, name);
      if (!s || !*s) /* empty is unset: `AIRLOCK_X= cmd` must not break */
        continue;
      struct cfg_value nv;
      char *problem = value_from_env (&keys[i], s, &nv);
      if (problem)
        {
          char *err = xasprintf ("environment variable %s: %s", name, problem);
          free (problem);
          value_free (&nv);
          return err;
        }
      char *origin = xasprintf ("environment variable %s", name);
      value_set (c, i, &nv, origin);
      free (origin);
    }
  return NULL;
}

static char *
user_path (const char *const *envp)
{
  const char *p = env_get (envp, "AIRLOCK_CONFIG");
  if (p && *p)
    return xstrdup (p);
  p = getenv ("XDG_CONFIG_HOME");
  if (p && p[0] == '/') /* the XDG spec says to ignore a relative one */
    return xasprintf ("%s/airlock/config.json", p);
  p = config_home_dir ();
  return p ? xasprintf ("%s/.config/airlock/config.json", p) : NULL;
}

char *
config_user_path (void)
{
  return user_path (NULL);
}

struct airlock_config *
config_load (char **err)
{
  return config_load_with (NULL, NULL, NULL, err);
}

struct airlock_config *
config_load_with (const char *const *envp, const cJSON *settings,
                  const char *settings_origin, char **err)
{
  struct airlock_config *c = xcalloc (1, sizeof *c);
  for (size_t i = 0; i < N_KEYS; i++)
    value_default (&keys[i], &c->v[i]);

  const char *system = env_get (envp, "AIRLOCK_SYSTEM_CONFIG");
  if (!system || !*system)
    system = AIRLOCK_SYSTEM_CONFIG;
  char *user = user_path (envp);

  if (envp)
    {
      size_t n = 0;
      while (envp[n])
        n++;
      c->client_env = xcalloc (n + 1, sizeof *c->client_env);
      for (size_t i = 0; i < n; i++)
        c->client_env[i] = xstrdup (envp[i]);
    }
  /* Stamped before they are read: a change meanwhile is seen later. */
  c->paths[0] = xstrdup (system);
  c->paths[1] = user ? xstrdup (user) : NULL;
  for (size_t i = 0; i < 2; i++)
    file_stamp (c->paths[i], &c->stamps[i]);
  *err = load_file (c, system);
  if (!*err && user)
    *err = load_file (c, user);
  if (!*err)
    *err = load_env (c, envp);
  if (!*err && settings && !cJSON_IsObject (settings))
    *err = xasprintf ("%s: expected an object of settings", settings_origin);
  else if (!*err && settings)
    {
      bool seen[N_KEYS] = { false };
      *err = apply_object (c, settings_origin, settings, "", seen);
    }
  free (user);
  if (*err)
    {
      config_free (c);
      return NULL;
    }
  return c;
}

void
config_free (struct airlock_config *c)
{
  if (!c)
    return;
  for (size_t i = 0; i < N_KEYS; i++)
    value_free (&c->v[i]);
  config_env_free (c->client_env);
  free (c->paths[0]);
  free (c->paths[1]);
  free (c);
}

bool
config_files_changed (const struct airlock_config *c)
{
  for (size_t i = 0; i < 2; i++)
    if (c->paths[i] && file_stamp_changed (c->paths[i], &c->stamps[i]))
      return true;
  return false;
}

/* ---- getters ---- */

static const char *const type_names[] = {
  [T_STRING] = "string", [T_INT] = "integer", [T_BOOL] = "boolean",
  [T_ENUM] = "enum",     [T_LIST] = "list",   [T_MAP] = "map",
};

/* The key's index; a wrong key or type is a bug in the caller, so abort. */
static size_t
lookup (const char *fn, const char *key, int t1, int t2)
{
  ssize_t i = key ? find_key (key) : -1;
  if (i < 0)
    {
      fprintf (stderr, "airlock: %s: no configuration key \"%s\"\n", fn,
               key ? key : "(null)");
      abort ();
    }
  if (t1 >= 0 && (int) keys[i].type != t1 && (int) keys[i].type != t2)
    {
      fprintf (stderr, "airlock: %s: configuration key \"%s\" is of type %s\n",
               fn, key, type_names[keys[i].type]);
      abort ();
    }
  return (size_t) i;
}

const char *
config_string (const struct airlock_config *c, const char *key)
{
  return c->v[lookup (__func__, key, T_STRING, T_ENUM)].s;
}

uint64_t
config_size (const struct airlock_config *c, const char *key)
{
  const char *v = config_string (c, key);
  return v ? size_bytes (v) : 0;
}

long long
config_int (const struct airlock_config *c, const char *key)
{
  return c->v[lookup (__func__, key, T_INT, T_INT)].i;
}

bool
config_bool (const struct airlock_config *c, const char *key)
{
  return c->v[lookup (__func__, key, T_BOOL, T_BOOL)].b;
}

const char *const *
config_list (const struct airlock_config *c, const char *key)
{
  return (const char *const *) c->v[lookup (__func__, key, T_LIST, T_MAP)].list;
}

const char *
config_origin (const struct airlock_config *c, const char *key)
{
  const char *o = c->v[lookup (__func__, key, -1, -1)].origin;
  return o ? o : "default";
}

bool
config_bool_admin (const struct airlock_config *c, const char *key)
{
  size_t i = lookup (__func__, key, T_BOOL, T_BOOL);
  const char *o = c->v[i].origin;
  if (!o || !strcmp (o, AIRLOCK_SYSTEM_CONFIG))
    return c->v[i].b;
  for (size_t k = 0; k < N_KEYS; k++)
    if (!strcmp (keys[k].key, key))
      return keys[k].bdef;
  return false;
}

/* ---- a client's part ---- */

static bool
is_config_variable (const char *name)
{
  if (!strcmp (name, "AIRLOCK_CONFIG") || !strcmp (name, "AIRLOCK_SYSTEM_CONFIG"))
    return true;
  for (size_t i = 0; i < N_KEYS; i++)
    {
      char v[128];
      env_name (keys[i].key, v, sizeof v);
      if (!strcmp (v, name))
        return true;
    }
  return false;
}

static void
add_client_var (cJSON *o, const char *name)
{
  const char *v = getenv (name);
  if (v && *v && !cJSON_GetObjectItemCaseSensitive (o, name))
    nonnull (cJSON_AddStringToObject (o, name, v));
}

cJSON *
config_client_env (const struct airlock_config *loaded)
{
  extern char **environ;
  cJSON *o = nonnull (cJSON_CreateObject ());
  for (char **e = environ; *e; e++)
    {
      const char *eq = strchr (*e, '=');
      if (strncmp (*e, "AIRLOCK_", 8) || !eq || !eq[1])
        continue;
      char *name = nonnull (strndup (*e, (size_t) (eq - *e)));
      if (is_config_variable (name))
        add_client_var (o, name);
      free (name);
    }
  /* What backends read of the caller's environment: DOCKER_HOST, and the
   * variables docker.forward_env, singularity.forward_env and daytona.forward_env name (from the caller's own settings;
   * a broken config is said by the daemon, not here). */
  add_client_var (o, "DOCKER_HOST");
  char *err = NULL;
  struct airlock_config *own = loaded ? NULL : config_load (&err);
  free (err);
  const struct airlock_config *c = loaded ? loaded : own;
  for (const char *const *f = c ? config_list (c, "docker.forward_env") : NULL; f && *f; f++)
    add_client_var (o, *f);
  for (const char *const *f = c ? config_list (c, "singularity.forward_env") : NULL; f && *f; f++)
    add_client_var (o, *f);
  /* Daytona's: where, and with what credential (to the user's own daemon,
   * over its 0700 socket; never on a command line) */
  static const char *const daytona_vars[]
      = { "DAYTONA_API_KEY", "DAYTONA_JWT_TOKEN", "DAYTONA_ORGANIZATION_ID",
          "DAYTONA_API_URL", "DAYTONA_SERVER_URL", "DAYTONA_TARGET", NULL };
  for (const char *const *v = daytona_vars; *v; v++)
    add_client_var (o, *v);
  /* Modal's likewise: the direct way's credentials and profile, the
   * managed gateway's URL and token */
  static const char *const modal_vars[]
      = { "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_PROFILE", "MODAL_CONFIG_PATH",
          "MODAL_SERVER_URL", "MODAL_ENVIRONMENT", "MODAL_GATEWAY_URL",
          "TOOL_GATEWAY_USER_TOKEN", NULL };
  for (const char *const *v = modal_vars; *v; v++)
    add_client_var (o, *v);
  if (c && config_string (c, "daytona.api_key_env"))
    add_client_var (o, config_string (c, "daytona.api_key_env"));
  for (const char *const *f = c ? config_list (c, "daytona.forward_env") : NULL; f && *f; f++)
    add_client_var (o, *f);
  config_free (own);
  return o;
}

const char *
config_getenv (const struct airlock_config *c, const char *name)
{
  return env_get ((const char *const *) c->client_env, name);
}

char **
config_env_from_json (const cJSON *obj, char **err)
{
  *err = NULL;
  size_t n = 0;
  const cJSON *item;
  cJSON_ArrayForEach (item, obj)
    n++;
  char **envp = xcalloc (n + 1, sizeof *envp);
  n = 0;
  cJSON_ArrayForEach (item, obj)
    {
      char *name = xstrdup (item->string);
      if (!cJSON_IsString (item))
        *err = xasprintf ("client_env: %s: expected a string", item->string);
      else if (!ok_var_name (name))
        *err = xasprintf ("client_env: \"%.64s\" is not a variable name", item->string);
      else if (!strncmp (name, "AIRLOCK_", 8) && !is_config_variable (name))
        *err = xasprintf ("client_env: %s: not an airlock configuration "
                          "variable (see docs/config.md)", item->string);
      free (name);
      if (*err)
        {
          config_env_free (envp);
          return NULL;
        }
      envp[n++] = xasprintf ("%s=%s", item->string, item->valuestring);
    }
  return envp;
}

void
config_env_free (char **envp)
{
  for (char **e = envp; e && *e; e++)
    free (*e);
  free (envp);
}

char *
config_hash (const struct airlock_config *c)
{
  char *text = config_to_json (c);
  uint64_t h = fnv1a64 (FNV1A64_INIT, text, strlen (text));
  free (text);
  return xasprintf ("%016llx", (unsigned long long) h);
}

/* ---- output ---- */

/* The object for `key`'s section inside root, created as needed. */
static cJSON *
section_object (cJSON *root, const char *key, const char **leaf)
{
  cJSON *obj = root;
  const char *p = key, *dot;
  while ((dot = strchr (p, '.')))
    {
      char *name = strndup (p, (size_t) (dot - p));
      cJSON *sub = cJSON_GetObjectItemCaseSensitive (obj, nonnull (name));
      if (!sub)
        sub = nonnull (cJSON_AddObjectToObject (obj, name));
      free (name);
      obj = sub;
      p = dot + 1;
    }
  *leaf = p;
  return obj;
}

static cJSON *
value_json (const struct cfg_key *k, const struct cfg_value *v)
{
  cJSON *j = NULL;
  switch (k->type)
    {
    case T_STRING:
    case T_ENUM:
      j = v->s ? cJSON_CreateString (v->s) : cJSON_CreateNull ();
      break;
    case T_INT:
      j = cJSON_CreateNumber ((double) v->i);
      break;
    case T_BOOL:
      j = cJSON_CreateBool (v->b);
      break;
    case T_LIST:
      j = nonnull (cJSON_CreateArray ());
      for (char **p = v->list; *p; p++)
        cJSON_AddItemToArray (j, nonnull (cJSON_CreateString (*p)));
      break;
    case T_MAP:
      j = nonnull (cJSON_CreateObject ());
      for (char **p = v->list; *p; p++)
        {
          char *eq = strchr (*p, '=');
          char *name = nonnull (strndup (*p, (size_t) (eq - *p)));
          const char *value = (k->flags & F_HIDE) ? "<hidden>" : eq + 1;
          nonnull (cJSON_AddStringToObject (j, name, value));
          free (name);
        }
      break;
    }
  return nonnull (j);
}

char *
config_to_json (const struct airlock_config *c)
{
  cJSON *root = nonnull (cJSON_CreateObject ());
  for (size_t i = 0; i < N_KEYS; i++)
    {
      const char *leaf;
      cJSON *obj = section_object (root, keys[i].key, &leaf);
      cJSON_AddItemToObject (obj, leaf, value_json (&keys[i], &c->v[i]));
    }
  char *out = nonnull (cJSON_Print (root));
  cJSON_Delete (root);
  return out;
}

char *
config_describe (const struct airlock_config *c)
{
  size_t width = 0;
  for (size_t i = 0; i < N_KEYS; i++)
    if (strlen (keys[i].key) > width)
      width = strlen (keys[i].key);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = nonnull (open_memstream (&buf, &size));
  for (size_t i = 0; i < N_KEYS; i++)
    {
      cJSON *j = value_json (&keys[i], &c->v[i]);
      char *v = nonnull (cJSON_PrintUnformatted (j));
      cJSON_Delete (j);
      fprintf (f, "%-*s %s  (%s)\n", (int) width, keys[i].key, v,
               c->v[i].origin ? c->v[i].origin : "default");
      free (v);
    }
  if (fclose (f))
    oom ();
  return buf;
}

static void
doc_type (FILE *f, const struct cfg_key *k)
{
  switch (k->type)
    {
    case T_STRING:
      fprintf (f, "string%s%s", k->check ? ": " : "",
               k->check ? k->check->type : "");
      break;
    case T_INT:
      fprintf (f, "integer, %lld to %lld", k->min, k->max);
      break;
    case T_BOOL:
      fputs ("boolean", f);
      break;
    case T_ENUM:
      for (const char *const *p = k->choices; *p; p++)
        fprintf (f, "%s`%s`", p == k->choices ? "" : ", ", *p);
      break;
    case T_LIST:
      fprintf (f, "list of strings%s%s", k->check ? ": " : "",
               k->check ? k->check->type : "");
      break;
    case T_MAP:
      fprintf (f, "map of strings, keys: %s",
               k->check_key ? k->check_key->type : "no =");
      break;
    }
}

static void
doc_default (FILE *f, const struct cfg_key *k)
{
  switch (k->type)
    {
    case T_STRING:
    case T_ENUM:
      if (k->sdef)
        fprintf (f, "`\"%s\"`", k->sdef);
      else
        fputs ("unset", f);
      break;
    case T_INT:
      fprintf (f, "`%lld`", k->idef);
      break;
    case T_BOOL:
      fputs (k->bdef ? "`true`" : "`false`", f);
      break;
    case T_LIST:
      fputs ("`[]`", f);
      break;
    case T_MAP:
      fputs ("`{}`", f);
      break;
    }
}

static const char *
section_title (const char *key)
{
  const char *dot = strchr (key, '.');
  size_t n = dot ? (size_t) (dot - key) : 0;
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
    if (strlen (sections[i].name) == n && !strncmp (sections[i].name, key, n))
      return sections[i].title;
  return NULL;
}

char *
config_doc_markdown (void)
{
  char *buf = NULL;
  size_t size = 0;
  const char *title = NULL;
  FILE *f = nonnull (open_memstream (&buf, &size));
  for (size_t i = 0; i < N_KEYS; i++)
    {
      const struct cfg_key *k = &keys[i];
      const char *t = section_title (k->key);
      char env[128];
      if (t != title)
        {
          fprintf (f, "%s### %s\n\n", title ? "\n" : "", t ? t : "Other");
          fputs ("| key | type | default | environment variable "
                 "| description |\n|---|---|---|---|---|\n",
                 f);
          title = t;
        }
      env_name (k->key, env, sizeof env);
      fprintf (f, "| `%s` | ", k->key);
      doc_type (f, k);
      fputs (" | ", f);
      doc_default (f, k);
      fprintf (f, " | `%s` | ", env);
      for (const char *p = k->doc; *p; p++)
        if (*p == '|') /* it would end the cell */
          fputs ("\\|", f);
        else
          fputc (*p, f);
      fputs (" |\n", f);
    }
  if (fclose (f))
    oom ();
  return buf;
}

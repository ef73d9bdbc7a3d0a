/* SPDX-License-Identifier: MIT */
/* The airlock wire protocol: one definition of the format, used by the
 * broker, the helper and (later) the in-sandbox supervisor.
 *
 * A message is a 16-byte header followed by typed fields, all little-endian:
 *
 *   header: u32 magic "ALK1" | u16 version | u16 message type
 *           | u32 total length (header included) | u32 reserved (0)
 *   field:  u16 field type | u16 reserved (0) | u32 value length | value
 *
 * Value kinds are fixed per field type: u32, u64, string (bytes, no NUL,
 * length-checked) or pair (u32 first length, first bytes, second bytes).
 * Message and field types are closed sets; every field is allowed in one
 * message type only; scalar fields may appear once; every count and size has
 * a hard limit.  Anything else rejects the whole message.
 *
 * al_decode() is a pure function from bytes to a struct: no I/O, and no
 * allocation beyond the arena inside struct al_message, so it can be unit
 * tested and fuzzed directly. */
#ifndef AIRLOCK_PROTOCOL_H
#define AIRLOCK_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_MAGIC 0x314b4c41u /* "ALK1" as little-endian bytes */
#define AL_VERSION 1
#define AL_HEADER_SIZE 16
#define AL_FIELD_HEADER_SIZE 8

/* Hard limits.  A message larger than AL_MAX_MESSAGE is never read whole. */
#define AL_MAX_MESSAGE (256 * 1024)
#define AL_MAX_FIELDS 2048
#define AL_MAX_ARGV 1024
#define AL_MAX_ENV 512
#define AL_MAX_BINDS 64
#define AL_MAX_MASKS 64
#define AL_MAX_PATH 4095   /* bytes of a path, without the NUL */
#define AL_MAX_STRING 131072 /* any other string (an argument, an env entry) */

enum al_msg_type {
  AL_MSG_RUN = 1,    /* broker -> helper: run one command in a fresh sandbox */
  AL_MSG_REPORT = 2, /* helper -> broker: progress, failure, exit */
  /* Broker <-> in-sandbox supervisor (backends/supervisor_protocol.h);
   * the helper accepts none of these. */
  AL_MSG_SUP_FIRST = 16,
  AL_MSG_SUP_LAST = 31,
};

enum al_field_type {
  /* AL_MSG_RUN */
  AL_F_ARGV = 1,        /* string, repeated, 1..AL_MAX_ARGV, in order */
  AL_F_ENV = 2,         /* string "NAME=value", repeated, <= AL_MAX_ENV */
  AL_F_WORKDIR = 3,     /* path: the read-write workspace, also the cwd */
  AL_F_ROOTFS = 4,      /* path: a caller-owned unpacked image used as / */
  AL_F_BIND_RO = 5,     /* pair of paths (source, destination), repeated */
  AL_F_BIND_RW = 6,     /* pair of paths (source, destination), repeated */
  AL_F_NETWORK = 7,     /* u32 enum al_network */
  AL_F_TIMEOUT_SEC = 8, /* u32, 0 = no timeout (helper.conf may cap it) */
  AL_F_MEMORY_MAX = 9,  /* u64 bytes, 0 = the helper.conf default */
  AL_F_PIDS_MAX = 10,   /* u32, 0 = the helper.conf default */
  AL_F_AS_INIT = 11,    /* u32 0/1: the command itself is pid 1 (it reaps;
                           a session's supervisor) */
  AL_F_MASK = 12,       /* path in the sandbox, repeated, <= AL_MAX_MASKS: a
                           directory hidden under an empty read-only tmpfs
                           after every bind (airlock's own directories) */
  /* AL_MSG_REPORT */
  AL_F_EVENT = 32,      /* u32 enum al_event: always present, once */
  AL_F_PID = 33,        /* u32: the sandbox's pid 1, as the host sees it */
  AL_F_LIMITS = 34,     /* u32 enum al_limits: how pids/memory are bounded */
  AL_F_EXIT_CODE = 35,  /* u32 0..255 */
  AL_F_SIGNAL = 36,     /* u32 1..64: the command died of this signal */
  AL_F_TIMED_OUT = 37,  /* u32 0/1 */
  AL_F_STEP = 38,       /* u32 enum al_step: which setup step failed */
  AL_F_ERRNO = 39,      /* u32 errno of the failure, 0 if none */
  AL_F_MESSAGE = 40,    /* string: human-readable detail */
  AL_F_PRIVILEGE = 41,  /* u32 enum al_privilege: the helper's mode */
};

/* ALLOWLIST: `lo` and a tap device (helper/egress_addresses.h) whose fd the
 * helper hands to the broker; the broker's stack decides every flow. */
enum al_network { AL_NET_LOOPBACK = 0, AL_NET_NONE = 1, AL_NET_HOST = 2,
                  AL_NET_ALLOWLIST = 3 };

enum al_event {
  AL_EV_STARTED = 1,      /* PID, LIMITS and PRIVILEGE follow; pid 1 exists,
                             but its setup may still fail (SETUP_FAILED
                             follows) */
  AL_EV_SETUP_FAILED = 2, /* STEP, ERRNO, MESSAGE follow */
  AL_EV_EXITED = 3,       /* EXIT_CODE or SIGNAL, and TIMED_OUT */
  AL_EV_TAP = 4,          /* network ALLOWLIST: the sandbox's tap device
                             rides with this report (SCM_RIGHTS, one fd) */
};

enum al_limits { AL_LIMITS_RLIMIT = 1, AL_LIMITS_CGROUP_V1 = 2, AL_LIMITS_CGROUP_V2 = 3 };

/* How the helper was installed (helper/privilege.c); ROOT: root ran it. */
enum al_privilege { AL_PRIV_UNPRIVILEGED = 1, AL_PRIV_SETUID = 2,
                    AL_PRIV_FILECAPS = 3, AL_PRIV_ROOT = 4 };

enum al_step {
  AL_STEP_PRIVILEGE = 1, AL_STEP_REQUEST, AL_STEP_CONFIG, AL_STEP_VALIDATE,
  AL_STEP_LIMITS, AL_STEP_NAMESPACES, AL_STEP_ID_MAPS, AL_STEP_ROOTFS,
  AL_STEP_BIND, AL_STEP_WORKDIR, AL_STEP_PIVOT, AL_STEP_LOOPBACK,
  AL_STEP_CAPS, AL_STEP_SECCOMP, AL_STEP_EXEC, AL_STEP_MONITOR,
  AL_STEP_MAX_ = AL_STEP_MONITOR,
};

struct al_bind {
  const char *src;
  const char *dst;
};

struct al_run {
  const char *argv[AL_MAX_ARGV + 1]; /* NULL-terminated */
  uint32_t argc;
  const char *envp[AL_MAX_ENV + 1];  /* NULL-terminated */
  uint32_t envc;
  const char *workdir; /* required */
  const char *rootfs;  /* NULL: the host's system directories */
  struct al_bind binds_ro[AL_MAX_BINDS];
  uint32_t n_binds_ro;
  struct al_bind binds_rw[AL_MAX_BINDS];
  uint32_t n_binds_rw;
  uint32_t network;
  uint32_t timeout_sec;
  uint64_t memory_max;
  uint32_t pids_max;
  uint32_t as_init;
  const char *masks[AL_MAX_MASKS];
  uint32_t n_masks;
};

struct al_report {
  uint32_t event;
  uint32_t pid;
  uint32_t limits;
  uint32_t exit_code;
  uint32_t signal;
  uint32_t timed_out;
  uint32_t step;
  uint32_t err;
  uint32_t privilege;
  const char *message; /* "" when absent */
  uint64_t present;    /* bit (field type - AL_F_EVENT) set when present */
};

struct al_message {
  uint16_t type;
  union {
    struct al_run run;
    struct al_report report;
  } u;
  /* Decoded strings live here, each copied and NUL-terminated. */
  char arena[AL_MAX_MESSAGE + AL_MAX_FIELDS];
};

/* Framing shared by every message family (the broker-helper messages
 * below and the broker-supervisor ones of backends/supervisor_protocol.h):
 * al_read_header() checks the header, accepting only the message types
 * whose bit is set in type_mask; al_read_field() then returns 1 per field
 * (bounds-checked against the message), 0 at the end, -1 on error. */
struct al_reader {
  const uint8_t *buf;
  size_t len, off, nfields;
  uint16_t type;
};
struct al_field {
  uint16_t type;
  uint32_t len;
  const uint8_t *value;
};
int al_read_header (struct al_reader *r, const uint8_t *buf, size_t len,
                    uint64_t type_mask, const char **why);
int al_read_field (struct al_reader *r, struct al_field *f, const char **why);
uint32_t al_u32 (const uint8_t *p); /* little-endian */
/* A path as every message carries it: absolute and canonical ("/" or "/a/b",
 * no empty, "." or ".." component, no trailing slash), no NUL, bounded. */
bool al_path_ok (const uint8_t *p, size_t n);

/* Decode one message.  Returns 0 and fills *out, or -1 and sets *why to a
 * static description of the first problem found.  Never reads beyond len. */
int al_decode (const uint8_t *buf, size_t len, struct al_message *out,
               const char **why);

/* Encoder: fields are appended to a fixed buffer; running out of room
 * sticks, and al_finish() then fails.  The encoder does not enforce the
 * decoder's other limits: the receiving side always decodes. */
struct al_writer {
  uint8_t buf[AL_MAX_MESSAGE];
  size_t len;
  bool failed;
};

void al_begin (struct al_writer *w, enum al_msg_type type);
void al_put_u32 (struct al_writer *w, enum al_field_type f, uint32_t v);
void al_put_u64 (struct al_writer *w, enum al_field_type f, uint64_t v);
void al_put_str (struct al_writer *w, enum al_field_type f, const char *s);
void al_put_bytes (struct al_writer *w, enum al_field_type f, const void *data,
                   size_t n);
void al_put_pair (struct al_writer *w, enum al_field_type f, const char *a,
                  const char *b);
/* Returns the message length, or 0 when the message could not be built. */
size_t al_finish (struct al_writer *w);

const char *al_step_name (uint32_t step);

#endif

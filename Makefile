# SPDX-License-Identifier: MIT
# airlock: build, install, test.  See README.md.

# A plain `make` builds the programs (the first rule below is a stamp).
.DEFAULT_GOAL := all

VERSION    := $(strip $(file < VERSION))
ifeq ($(VERSION),)
  $(error VERSION, the one place the version is kept, is missing or empty)
endif
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share
SYSCONFDIR ?= /etc
DESTDIR    ?=
BUILDDIR   ?= build

HELPER_CONF := $(SYSCONFDIR)/airlock/helper.conf
HELPER_PATH := $(LIBEXECDIR)/airlock/airlock-helper
SUPERVISOR_PATH := $(LIBEXECDIR)/airlock/airlock-supervisor
EGRESS_PATH := $(LIBEXECDIR)/airlock/airlock-egress
DAEMON_PATH := $(LIBEXECDIR)/airlock/airlock-daemon
DEFAULT_RULES := $(DATADIR)/airlock/default.rules
ADMIN_RULES := $(SYSCONFDIR)/airlock/policy.rules
SYSTEM_CONFIG := $(SYSCONFDIR)/airlock/config.json

CC       ?= gcc
CLANG    ?= clang
PKG      ?= pkg-config
# CPPFLAGS, CFLAGS and LDFLAGS are the builder's (e.g. dpkg-buildflags);
# hardening is not optional: it is added after them.  -U first, so that a
# packager's -D_FORTIFY_SOURCE=2 is replaced, not redefined.
CFLAGS   ?= -O2 -g
CPPFLAGS ?=
LDFLAGS  ?=
# Warnings fail the build only where someone is there to fix them: make
# check and CI set WERROR=1; a release build from a tarball never breaks
# on a newer compiler's new warning.
WERROR   ?= 0
WARN      = -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
HARDEN   := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fPIE
LDHARDEN := -fPIE -pie -Wl,-z,relro,-z,now
ifeq ($(SANITIZE),1)
  # ASan/UBSan build for the test suite (never installed setuid).
  HARDEN   := -U_FORTIFY_SOURCE -fPIE -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDHARDEN := -pie -fsanitize=address,undefined
  CFLAGS   := -O1 -g
endif
BASE_CFLAGS = -std=gnu11 $(WARN) $(CPPFLAGS) $(CFLAGS) $(HARDEN) -DAIRLOCK_VERSION='"$(VERSION)"' -Ihelper
LINK        = $(CC) $(CFLAGS) $(LDFLAGS) $(LDHARDEN)

# The configured paths and flags are compiled into the binaries and man
# pages.  They are recorded in $(BUILD_OPTIONS), rewritten only when they
# change, and everything built from them depends on it: `make install
# PREFIX=/opt/x` after `make` rebuilds, instead of installing binaries
# that look for their files in the old places.  (WERROR is left out: it
# changes no output.)
BUILD_OPTIONS := $(BUILDDIR)/build-options
BUILD_OPTION_VARS := VERSION PREFIX BINDIR LIBEXECDIR MANDIR DATADIR SYSCONFDIR \
                     HELPER_CONF HELPER_PATH SUPERVISOR_PATH EGRESS_PATH DAEMON_PATH DEFAULT_RULES ADMIN_RULES \
                     SYSTEM_CONFIG CC CPPFLAGS CFLAGS LDFLAGS HARDEN LDHARDEN SESSION_FLAGS
shell_quote = '$(subst ','\'',$(1))'
$(BUILD_OPTIONS): FORCE
	@mkdir -p $(@D)
	@new=$$(printf '%s\n' $(foreach v,$(BUILD_OPTION_VARS),$(call shell_quote,$(v)=$($(v))))); \
	if [ "$$new" != "$$(cat $@ 2>/dev/null)" ]; then \
	  [ ! -f $@ ] || echo "airlock: build options changed since the last build: rebuilding" >&2; \
	  printf '%s\n' "$$new" > $@; fi
FORCE:

HELPER_PKGS := libcap-ng
# The thin `airlock` client: libc and cJSON, nothing else to load at every
# call.  The daemon program (airlock-daemon) has the approval gate (PCRE2,
# libunistring) and the backends (libcurl).
CLIENT_PKGS := libcjson
BROKER_PKGS := libcjson libcurl libpcre2-8 libarchive nettle
# libunistring (NFKC in policy/) and libwslay (WebSocket framing,
# backends/websocket.c) have no pkg-config file.
BROKER_LIBS := -lunistring -lwslay

HELPER_SRCS := $(wildcard helper/*.c)
# A cloud backend's session layer is written apart from its client:
# open serves sessions once it is there, and says "not in this build"
# until then (daytona, modal direct, modal managed).
SESSION_FLAGS := $(if $(wildcard backends/daytona_session.c),-DHAVE_DAYTONA_SESSION) \
                 $(if $(wildcard backends/modal_session.c),-DHAVE_MODAL_SESSION) \
                 $(if $(wildcard backends/modal_managed_session.c),-DHAVE_MODAL_MANAGED)
BACKEND_SRCS := backends/local.c backends/installed_file.c backends/local_session.c backends/supervisor_protocol.c backends/supervisor_client.c \
                backends/xprintf.c backends/posture.c backends/cgroup_oom.c backends/size_text.c \
                backends/sif_cache.c backends/http_body.c backends/sh_words.c backends/event_queue.c backends/terminal_eof.c backends/websocket.c \
                backends/grpc_call.c backends/protobuf_wire.c backends/random_id.c $(sort $(wildcard backends/modal*.c)) \
                $(sort $(wildcard backends/docker*.c)) $(sort $(wildcard backends/daytona*.c)) $(sort $(wildcard backends/ssh*.c)) \
                $(sort $(wildcard backends/singularity*.c))
POLICY_SRCS := $(sort $(wildcard policy/*.c))
# What both programs have: configuration, the runtime directory, the
# local sandbox options and airlock's protected directories.
COMMON_SRCS := broker/config.c broker/runtime_dir.c broker/sandbox_options.c \
               broker/approval_client.c backends/local.c backends/installed_file.c \
               backends/cgroup_oom.c backends/xprintf.c backends/size_text.c policy/protected_paths.c \
               policy/audit_dirs.c policy/xalloc.c helper/protocol.c backends/egress_client.c broker/egress_prepare.c \
               policy/egress_policy.c
CLIENT_SRCS := broker/airlock.c broker/run_command.c broker/client_commands.c broker/pty_relay.c broker/attach_command.c broker/cp_command.c \
               broker/cache_command.c broker/mcp_server.c broker/mcp_tools.c backends/random_id.c backends/supervisor_protocol.c \
               broker/approval_prompt.c broker/config_command.c $(COMMON_SRCS)
DAEMON_SRCS := $(sort broker/airlock_daemon.c broker/daemon.c broker/api.c broker/session.c \
               broker/api_files.c broker/session_files.c broker/files_host.c \
               broker/shell_state.c broker/output_window.c broker/spool.c \
               broker/backend_open.c broker/approval.c broker/api_approval.c \
               broker/policy_command.c broker/api_cache.c broker/sif_options.c \
               $(COMMON_SRCS) $(BACKEND_SRCS) $(POLICY_SRCS))
SUPERVISOR_SRCS := backends/supervisor.c backends/supervisor_protocol.c helper/protocol.c \
                   backends/process_tree.c backends/stdin_feed.c backends/terminal_eof.c

HELPER_OBJS := $(patsubst %.c,$(BUILDDIR)/obj/%.o,$(HELPER_SRCS))
CLIENT_OBJS := $(patsubst %.c,$(BUILDDIR)/obj/broker-%.o,$(CLIENT_SRCS))
DAEMON_OBJS := $(patsubst %.c,$(BUILDDIR)/obj/broker-%.o,$(DAEMON_SRCS))

.PHONY: all bench bench-peers check check-installed test unit fuzz fuzz-smoke deps demo install install-setuid sdk-proofs \
        install-caps uninstall clean helper-lines deb

# The man pages carry the version and the paths this build looks in.
MAN_PAGES := $(BUILDDIR)/airlock.1 $(BUILDDIR)/airlock-helper.8

all: $(BUILDDIR)/airlock $(BUILDDIR)/airlock-daemon $(BUILDDIR)/airlock-helper \
     $(BUILDDIR)/airlock-supervisor $(BUILDDIR)/airlock-egress $(MAN_PAGES)

man_path = $(subst -,\\-,$(subst |,\|,$(subst &,\&,$(1))))
MAN_SUBST := VERSION HELPER_CONF HELPER_PATH SUPERVISOR_PATH EGRESS_PATH DAEMON_PATH DEFAULT_RULES ADMIN_RULES \
             SYSTEM_CONFIG
$(MAN_PAGES): $(BUILDDIR)/%: docs/% $(BUILD_OPTIONS)
	sed $(foreach v,$(MAN_SUBST),-e $(call shell_quote,s|@$(v)@|$(call man_path,$($(v)))|g)) $< > $@.tmp
	@! grep -n '@[A-Z_]*@' $@.tmp || { echo "$<: unknown placeholder" >&2; rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

$(BUILDDIR)/obj/helper/%.o: helper/%.c $(wildcard helper/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(shell $(PKG) --cflags $(HELPER_PKGS)) -I$(BUILDDIR)/gen \
	  -DHELPER_CONF='"$(HELPER_CONF)"' -c $< -o $@

# The seccomp filter is compiled here, once, by libseccomp, not in every
# sandbox (see helper/seccomp_baseline.c); the helper loads the result.
$(BUILDDIR)/obj/helper/seccomp_baseline.o: $(BUILDDIR)/gen/seccomp_bpf.h
$(BUILDDIR)/gen/seccomp_bpf.h: helper/seccomp_baseline.c $(wildcard helper/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -DSECCOMP_EXPORT $(shell $(PKG) --cflags libseccomp) -o $(@D)/seccomp-export \
	  $< $(LDHARDEN) $(shell $(PKG) --libs libseccomp)
	$(@D)/seccomp-export > $@.tmp && mv $@.tmp $@

# The ssh backend's remote wrapper, kept as a readable sh file, becomes a
# C string here: comment lines, indentation and blank lines dropped (it
# travels with every command).
$(BUILDDIR)/obj/broker-backends/ssh_session.o: $(BUILDDIR)/gen/ssh_wrapper.h
# The session agent (backends/ssh_agent.sh) likewise, as SSH_AGENT.
SSH_SH_STRING = sed -e 's/^[[:space:]]*//' -e '/^\#/d' -e '/^$$/d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' \
	      -e 's/^/  "/' -e 's/$$/\\n" \\/'
$(BUILDDIR)/gen/ssh_wrapper.h: backends/ssh_wrapper.sh backends/ssh_agent.sh Makefile
	@mkdir -p $(@D)
	{ echo '/* Generated from backends/ssh_wrapper.sh and ssh_agent.sh by the Makefile. */'; \
	  echo '#define SSH_WRAPPER \'; $(SSH_SH_STRING) backends/ssh_wrapper.sh; echo '  ""'; \
	  echo '#define SSH_AGENT \'; $(SSH_SH_STRING) backends/ssh_agent.sh; echo '  ""'; } > $@.tmp && mv $@.tmp $@

# The modal backend's sandbox-side wrapper likewise, as MODAL_WRAPPER.
$(BUILDDIR)/obj/broker-backends/modal_session.o: $(BUILDDIR)/gen/modal_wrapper.h
$(BUILDDIR)/gen/modal_wrapper.h: backends/modal_wrapper.sh Makefile
	@mkdir -p $(@D)
	{ echo '/* Generated from backends/modal_wrapper.sh by the Makefile. */'; \
	  echo '#define MODAL_WRAPPER \'; $(SSH_SH_STRING) backends/modal_wrapper.sh; echo '  ""'; } > $@.tmp && mv $@.tmp $@

# The daytona backend's sandbox-side wrapper likewise, as DAYTONA_WRAPPER.
$(BUILDDIR)/obj/broker-backends/daytona_session.o: $(BUILDDIR)/gen/daytona_wrapper.h
$(BUILDDIR)/gen/daytona_wrapper.h: backends/daytona_wrapper.sh Makefile
	@mkdir -p $(@D)
	{ echo '/* Generated from backends/daytona_wrapper.sh by the Makefile. */'; \
	  echo '#define DAYTONA_WRAPPER \'; $(SSH_SH_STRING) backends/daytona_wrapper.sh; echo '  ""'; } > $@.tmp && mv $@.tmp $@

# The managed modal backend's wrapper (the fixed command of every exec)
# likewise, as MODAL_MANAGED_WRAPPER.
$(BUILDDIR)/obj/broker-backends/modal_managed_session.o: $(BUILDDIR)/gen/modal_managed_wrapper.h
$(BUILDDIR)/gen/modal_managed_wrapper.h: backends/modal_managed_wrapper.sh Makefile
	@mkdir -p $(@D)
	{ echo '/* Generated from backends/modal_managed_wrapper.sh by the Makefile. */'; \
	  echo '#define MODAL_MANAGED_WRAPPER \'; $(SSH_SH_STRING) backends/modal_managed_wrapper.sh; echo '  ""'; } > $@.tmp && mv $@.tmp $@

$(BUILDDIR)/obj/broker-%.o: %.c $(wildcard helper/protocol.h broker/*.h backends/*.h policy/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -Ibroker -Ibackends -Ipolicy -I$(BUILDDIR)/gen $(shell $(PKG) --cflags $(BROKER_PKGS)) \
	  -DHELPER_PATH='"$(HELPER_PATH)"' -DSUPERVISOR_PATH='"$(SUPERVISOR_PATH)"' -DEGRESS_PATH='"$(EGRESS_PATH)"' \
	  -DDAEMON_PATH='"$(DAEMON_PATH)"' -DAIRLOCK_SYSTEM_CONFIG='"$(SYSTEM_CONFIG)"' \
	  -DAIRLOCK_DEFAULT_RULES='"$(DEFAULT_RULES)"' -DAIRLOCK_ADMIN_RULES='"$(ADMIN_RULES)"' \
	  $(SESSION_FLAGS) -c $< -o $@

$(BUILDDIR)/airlock-helper: $(HELPER_OBJS)
	$(LINK) -o $@ $^ $(shell $(PKG) --libs $(HELPER_PKGS))

$(BUILDDIR)/airlock: $(CLIENT_OBJS)
	$(LINK) -o $@ $^ $(shell $(PKG) --libs $(CLIENT_PKGS))

$(BUILDDIR)/airlock-daemon: $(DAEMON_OBJS)
	$(LINK) -pthread -o $@ $^ $(shell $(PKG) --libs $(BROKER_PKGS)) $(BROKER_LIBS)

# The supervisor runs inside sandboxes, including --rootfs ones that may
# have no libc: static.  (ASan builds link it dynamically: the sanitizer
# runtimes do not support static linking.)
SUPERVISOR_LINK := $(if $(filter 1,$(SANITIZE)),$(LDHARDEN),-static-pie)
$(BUILDDIR)/airlock-supervisor: $(SUPERVISOR_SRCS) $(wildcard helper/protocol.h backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends -o $@ $(SUPERVISOR_SRCS) $(SUPERVISOR_LINK)

# The network of a sandbox with `network: allowlist` (issue 18): a
# user-mode TCP/IP stack (libslirp) on the sandbox's tap, started by the
# broker, unprivileged.  (libslirp's pkg-config file requires glib's,
# though airlock uses no glib: hence libglib2.0-dev in DEB_PACKAGES.)
EGRESS_SRCS := backends/egress_main.c backends/egress_stack.c backends/egress_flow.c \
               backends/egress_audit.c backends/egress_wire.c policy/egress_policy.c \
               policy/audit_log.c policy/audit_dirs.c policy/redact.c policy/xalloc.c \
               policy/rules.c policy/shell_parse.c policy/normalize.c policy/inline_code.c
EGRESS_PKGS := slirp libcjson libpcre2-8
$(BUILDDIR)/airlock-egress: $(EGRESS_SRCS) $(wildcard helper/egress_addresses.h backends/*.h policy/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends -Ipolicy $(shell $(PKG) --cflags $(EGRESS_PKGS)) -pthread \
	  -DAIRLOCK_DEFAULT_RULES='"$(DEFAULT_RULES)"' -DAIRLOCK_ADMIN_RULES='"$(ADMIN_RULES)"' -o $@ \
	  $(EGRESS_SRCS) $(LDHARDEN) $(shell $(PKG) --libs $(EGRESS_PKGS)) $(BROKER_LIBS)

# ---- test tools ----
$(BUILDDIR)/airlock-probe: tests/probe.c Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -o $@ $< $(LDHARDEN)

$(BUILDDIR)/airlock-hostile: tests/hostile.c helper/protocol.c helper/protocol.h Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -o $@ tests/hostile.c helper/protocol.c $(LDHARDEN)

# What the helper and broker will do for airlock-egress (tests/egress.bats).
$(BUILDDIR)/airlock-egress-tap: tests/egress_tap.c helper/egress_addresses.h Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -o $@ $< $(LDHARDEN)

# (the driver drives a local session: the docker sources need libcurl, the
# SIF cache and the singularity backend cJSON and policy/.)
DRIVER_SRCS := $(filter-out backends/docker% backends/daytona% backends/websocket% backends/ssh% backends/sif_cache% backends/singularity% \
                             backends/modal% backends/grpc% backends/protobuf% backends/random_id%,$(BACKEND_SRCS))
$(BUILDDIR)/airlock-session-driver: tests/session_driver.c $(DRIVER_SRCS) backends/egress_client.c helper/protocol.c $(wildcard backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends -DSUPERVISOR_PATH='"$(SUPERVISOR_PATH)"' -DEGRESS_PATH='"$(EGRESS_PATH)"' -o $@ \
	  tests/session_driver.c $(DRIVER_SRCS) backends/egress_client.c helper/protocol.c $(LDHARDEN)

# The ssh backend alone, streaming through a real sshd (tests/ssh-backend.bats).
SSH_STREAM_SRCS := tests/ssh_stream.c backends/ssh_session.c backends/ssh_transport.c backends/terminal_eof.c backends/sh_words.c backends/event_queue.c backends/xprintf.c
$(BUILDDIR)/airlock-ssh-stream: $(SSH_STREAM_SRCS) $(BUILDDIR)/gen/ssh_wrapper.h $(wildcard backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends -I$(BUILDDIR)/gen -o $@ $(SSH_STREAM_SRCS) $(LDHARDEN)

# A Daytona sandbox's life alone (backends/daytona_sandbox.c), against the
# Daytona double (tests/daytona.bats).
DAYTONA_DRIVER_SRCS := tests/daytona_driver.c backends/daytona_sandbox.c backends/daytona_http.c \
                       backends/http_body.c backends/xprintf.c
$(BUILDDIR)/airlock-daytona-driver: $(DAYTONA_DRIVER_SRCS) $(wildcard backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends $(shell $(PKG) --cflags $(BROKER_PKGS)) -o $@ \
	  $(DAYTONA_DRIVER_SRCS) $(LDHARDEN) $(shell $(PKG) --libs libcjson libcurl)

# A Modal sandbox's life through backends/modal_api.c alone (the control
# plane over gRPC), against the Modal double (tests/modal.bats).
MODAL_DRIVER_SRCS := tests/modal_driver.c backends/modal_api.c backends/grpc_call.c backends/random_id.c \
                     backends/protobuf_wire.c backends/xprintf.c
$(BUILDDIR)/airlock-modal-driver: $(MODAL_DRIVER_SRCS) $(wildcard backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends $(shell $(PKG) --cflags $(BROKER_PKGS)) -o $@ \
	  $(MODAL_DRIVER_SRCS) $(LDHARDEN) $(shell $(PKG) --libs libcjson libcurl)

# A managed Modal session alone (backends/modal_managed_session.c), against
# the modal gateway double (tests/modal-managed.bats).
MODAL_MANAGED_DRIVER_SRCS := tests/modal_managed_driver.c backends/modal_managed_session.c backends/random_id.c \
                             backends/modal_gateway.c backends/http_body.c backends/sh_words.c \
                             backends/event_queue.c backends/xprintf.c broker/files_host.c \
                             broker/shell_state.c
$(BUILDDIR)/airlock-modal-managed-driver: $(MODAL_MANAGED_DRIVER_SRCS) $(BUILDDIR)/gen/modal_managed_wrapper.h \
                                          $(wildcard backends/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ibackends -Ibroker -I$(BUILDDIR)/gen $(shell $(PKG) --cflags $(BROKER_PKGS)) \
	  -pthread -o $@ $(MODAL_MANAGED_DRIVER_SRCS) $(LDHARDEN) $(shell $(PKG) --libs libcjson libcurl libarchive)

# Unit tests (cmocka), always with ASan+UBSan: test_X tests the module(s)
# listed for it.
UNIT_TESTS := protocol output_window config shell_state supervisor_protocol
UNIT_SRCS_protocol := helper/protocol.c
UNIT_SRCS_shell_state := broker/shell_state.c
UNIT_SRCS_supervisor_protocol := backends/supervisor_protocol.c helper/protocol.c
UNIT_SRCS_output_window := broker/output_window.c
UNIT_TESTS += spool files_host
UNIT_SRCS_spool := broker/spool.c backends/xprintf.c
UNIT_SRCS_files_host := broker/files_host.c backends/xprintf.c
UNIT_SRCS_config := broker/config.c policy/xalloc.c backends/size_text.c policy/egress_policy.c
# policy/: one test per module; test_rules also runs every case of the
# shipped rule file (policy/default.rules).
UNIT_TESTS += shell_parse rules gate modal_mode audit_log docker_risk
UNIT_SRCS_shell_parse := policy/shell_parse.c policy/normalize.c policy/inline_code.c
UNIT_SRCS_rules := policy/rules.c policy/egress_policy.c policy/shell_parse.c policy/normalize.c policy/inline_code.c policy/xalloc.c
UNIT_SRCS_gate := policy/gate.c policy/rules.c policy/egress_policy.c policy/shell_parse.c policy/normalize.c policy/inline_code.c policy/xalloc.c
UNIT_SRCS_modal_mode := policy/modal_mode.c policy/xalloc.c
UNIT_SRCS_audit_log := policy/audit_log.c policy/audit_dirs.c policy/redact.c policy/xalloc.c
UNIT_SRCS_docker_risk := policy/docker_risk.c policy/xalloc.c
UNIT_TESTS += protected_paths
# issue 18: the egress allowlist's decisions and the parsers of what a
# sandbox sends before a flow is decided.
UNIT_TESTS += egress_policy egress_wire
UNIT_SRCS_egress_policy := policy/egress_policy.c policy/xalloc.c
UNIT_SRCS_egress_wire := backends/egress_wire.c
UNIT_SRCS_protected_paths := policy/protected_paths.c policy/xalloc.c
# backends/egress_audit: airlock-egress's rate-limited audit lines.
UNIT_TESTS += egress_audit
UNIT_SRCS_egress_audit := backends/egress_audit.c policy/audit_log.c policy/audit_dirs.c policy/redact.c policy/xalloc.c
# backends/docker: the Engine API client against an in-process fake socket.
UNIT_TESTS += docker_engine
UNIT_SRCS_docker_engine := backends/docker_engine.c backends/http_body.c backends/xprintf.c backends/docker_seccomp.c
# backends/daytona_http (and the create request of daytona_sandbox): the
# Daytona client against an in-process HTTP server.
UNIT_TESTS += daytona_http
UNIT_SRCS_daytona_http := backends/daytona_http.c backends/daytona_sandbox.c backends/http_body.c backends/xprintf.c
# backends/protobuf_wire and grpc_call (the Modal client's wire): checked
# against protoc-generated Python and a python3-grpcio server.
UNIT_TESTS += protobuf_wire grpc_call
UNIT_SRCS_protobuf_wire := backends/protobuf_wire.c backends/xprintf.c
UNIT_SRCS_grpc_call := backends/grpc_call.c backends/random_id.c backends/xprintf.c
# backends/modal_api: the JWT exp claim and the error text (the calls
# themselves: tests/modal.bats against the double).
UNIT_TESTS += modal_api
UNIT_SRCS_modal_api := backends/modal_api.c backends/grpc_call.c backends/protobuf_wire.c backends/random_id.c backends/xprintf.c
# backends/sif_cache: records, checks, LRU and the floor, with a fake build.
UNIT_TESTS += sif_cache
UNIT_SRCS_sif_cache := backends/sif_cache.c backends/size_text.c backends/xprintf.c \
                      policy/audit_dirs.c policy/xalloc.c
# backends/singularity: versions, flag gating, argv and environment.
UNIT_TESTS += singularity_argv
UNIT_SRCS_singularity_argv := backends/singularity_argv.c backends/xprintf.c
UNIT_CFLAGS := -std=gnu11 $(WARN) -O1 -g -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined -Ihelper -Ibroker -Ibackends -Ipolicy \
               -DAIRLOCK_SOURCE_DIR='"$(CURDIR)"' 
.SECONDEXPANSION:
$(BUILDDIR)/test_%: tests/unit/test_%.c $$(UNIT_SRCS_$$*) $(wildcard helper/*.h broker/*.h backends/*.h policy/*.h) policy/default.rules Makefile
	@mkdir -p $(BUILDDIR)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(UNIT_SRCS_$*) \
	  $(shell $(PKG) --cflags --libs cmocka $(BROKER_PKGS)) $(BROKER_LIBS)

$(BUILDDIR)/make_seeds: fuzz/make_seeds.c helper/protocol.c backends/supervisor_protocol.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CC) -std=gnu11 $(WARN) -O1 -g -Ihelper -Ibackends -o $@ fuzz/make_seeds.c helper/protocol.c

# what a sandbox's supervisor sends the broker (untrusted: code in the
# sandbox could forge it)
$(BUILDDIR)/fuzz_supervisor_protocol: fuzz/fuzz_supervisor_protocol.c backends/supervisor_protocol.c backends/supervisor_protocol.h helper/protocol.c helper/protocol.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ihelper -Ibackends -o $@ fuzz/fuzz_supervisor_protocol.c \
	  backends/supervisor_protocol.c helper/protocol.c

$(BUILDDIR)/fuzz_protocol: fuzz/fuzz_protocol.c helper/protocol.c helper/protocol.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ihelper -o $@ fuzz/fuzz_protocol.c helper/protocol.c

# normalize + tokenize of the approval gate: untrusted text of any length.
$(BUILDDIR)/fuzz_shell_parse: fuzz/fuzz_shell_parse.c policy/shell_parse.c policy/normalize.c policy/inline_code.c policy/shell_parse.h policy/inline_code.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ipolicy -o $@ fuzz/fuzz_shell_parse.c \
	  policy/shell_parse.c policy/normalize.c policy/inline_code.c $(BROKER_LIBS)

# the whole gate with the shipped rules: a harmless prefix never softens a
# verdict.
$(BUILDDIR)/fuzz_gate: fuzz/fuzz_gate.c $$(GATE_SRCS) $(wildcard policy/*.h) policy/default.rules Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ipolicy \
	  -DFUZZ_DEFAULT_RULES='"$(CURDIR)/policy/default.rules"' -o $@ fuzz/fuzz_gate.c \
	  $(GATE_SRCS) $(shell $(PKG) --libs libpcre2-8 libcjson) $(BROKER_LIBS)

# what the Modal client reads off the network: the protobuf decoder and
# the gRPC frame reassembler.
FUZZ_PROTOBUF_SRCS := backends/protobuf_wire.c backends/grpc_call.c backends/random_id.c backends/xprintf.c
$(BUILDDIR)/fuzz_protobuf: fuzz/fuzz_protobuf.c $(FUZZ_PROTOBUF_SRCS) backends/protobuf_wire.h backends/grpc_call.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ibackends -o $@ fuzz/fuzz_protobuf.c \
	  $(FUZZ_PROTOBUF_SRCS) $(shell $(PKG) --cflags --libs libcurl)

# what airlock-egress reads from a sandbox before it decides a flow: DNS
# queries, TLS ClientHellos, HTTP request heads.
$(BUILDDIR)/fuzz_egress_wire: fuzz/fuzz_egress_wire.c backends/egress_wire.c backends/egress_wire.h Makefile
	@mkdir -p $(BUILDDIR)
	$(CLANG) -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -Ibackends -o $@ fuzz/fuzz_egress_wire.c \
	  backends/egress_wire.c

# ---- fuzzing: every harness for FUZZ_SECONDS each ----
# Seeds: the checked-in fuzz/corpus/NAME when there is one (text inputs),
# else written by make_seeds (binary protocol messages).
FUZZ_SECONDS ?= 60
FUZZERS := protocol supervisor_protocol shell_parse gate protobuf egress_wire
fuzz: $(foreach f,$(FUZZERS),$(BUILDDIR)/fuzz_$(f)) $(BUILDDIR)/make_seeds
	@for f in $(FUZZERS); do \
	  mkdir -p $(BUILDDIR)/fuzz/$$f/corpus $(BUILDDIR)/fuzz/$$f/artifacts; \
	  if [ -d fuzz/corpus/$$f ]; then seeds=fuzz/corpus/$$f; \
	  else seeds=$(BUILDDIR)/fuzz/$$f/seeds; rm -rf $$seeds; \
	    $(BUILDDIR)/make_seeds $$seeds || exit 1; fi; \
	  $(BUILDDIR)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(BUILDDIR)/fuzz/$$f/artifacts/ \
	    $(BUILDDIR)/fuzz/$$f/corpus $$seeds || exit 1; \
	done

# ---- tests ----
TEST_TOOLS := $(BUILDDIR)/airlock-probe $(BUILDDIR)/airlock-hostile $(BUILDDIR)/airlock-ssh-stream \
              $(BUILDDIR)/airlock-daytona-driver $(BUILDDIR)/airlock-modal-driver \
              $(BUILDDIR)/airlock-modal-managed-driver \
              $(foreach t,$(UNIT_TESTS),$(BUILDDIR)/test_$(t)) \
              $(BUILDDIR)/airlock-session-driver $(BUILDDIR)/airlock-egress-tap \
              $(BUILDDIR)/fuzz_protocol $(BUILDDIR)/fuzz_shell_parse $(BUILDDIR)/fuzz_gate \
              $(BUILDDIR)/fuzz_protobuf $(BUILDDIR)/fuzz_egress_wire \
              $(BUILDDIR)/fuzz_supervisor_protocol \
              $(BUILDDIR)/make_seeds

# The whole suite: unit tests, a fuzz smoke run under ASan+UBSan, and the
# command-line tests as an unprivileged user under every privilege mode.
# Needs root (it creates a test user and installs a setuid helper into a
# private prefix); ends with "N passed, N failed".  Warnings are errors
# here, and in the suite's own builds (exported to them).
check: deps
	$(MAKE) sdk-proofs
	$(MAKE) check-installed
check-installed: export WERROR = 1
check-installed: all $(TEST_TOOLS)
	BUILDDIR=$(BUILDDIR) tests/run-tests.sh
test: check

# The official SDKs that prove a test double's fidelity
# (tests/doubles/NAME/check.mjs), pinned by their package-lock.json and
# installed into $(BUILDDIR)/NAME, never globally.  make check installs
# them; when npm or the registry fails, the proof tests fail and say so.
SDK_PROOFS := daytona-sdk modal-sdk
.PHONY: $(SDK_PROOFS)
$(SDK_PROOFS): %: $(BUILDDIR)/%/.installed
$(BUILDDIR)/%/.installed: tests/doubles/%/package.json tests/doubles/%/package-lock.json
	@mkdir -p $(@D)
	cp $^ $(@D)/
	cd $(@D) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@
# The official MCP clients that drive `airlock mcp` in tests/mcp.bats (the
# TypeScript SDK, the Inspector's CLI), from tests/mcp/NAME likewise.
MCP_CLIENTS := mcp-sdk mcp-inspector
.PHONY: $(MCP_CLIENTS)
$(MCP_CLIENTS): mcp-%: $(BUILDDIR)/mcp-%/.installed
$(BUILDDIR)/mcp-%/.installed: tests/mcp/%/package.json tests/mcp/%/package-lock.json
	@mkdir -p $(@D)
	cp $^ $(@D)/
	cd $(@D) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@
sdk-proofs:
	@for p in $(SDK_PROOFS) $(MCP_CLIENTS); do $(MAKE) --no-print-directory -s $(BUILDDIR)/$$p/.installed \
	  || echo "airlock: installing the official SDK $$p failed: its proof test will fail" >&2; done

# ---- packages ----
DEB_PACKAGES := build-essential pkg-config clang libclang-rt-14-dev \
                libcap-ng-dev libseccomp-dev libcjson-dev libcurl4-openssl-dev libcmocka-dev \
                bats libcap2-bin busybox-static iproute2 procps util-linux passwd \
                python3 man-db bubblewrap libpcre2-dev libunistring-dev docker.io sudo curl \
                libarchive-dev nettle-dev openssh-client openssh-server \
                python3-grpcio python3-protobuf protobuf-compiler openssl \
                debhelper dpkg-dev fakeroot lintian blhc adduser libslirp-dev libglib2.0-dev \
                libwslay-dev
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else echo "all build and test packages are installed"; fi

# Figures, never a verdict: the approval gate's cost per command against
# spawning /bin/true; a warm session's per-command latency against bash -c
# (and docker exec); sandbox creation against bubblewrap; with ratios.
bench: all $(BUILDDIR)/gate-bench
	$(BUILDDIR)/gate-bench policy/default.rules
	BUILDDIR=$(BUILDDIR) tests/bench/bench.sh
	BUILDDIR=$(BUILDDIR) tests/bench/network_bench.sh

# The peers an agent would pick instead (Anthropic's srt, OpenAI's codex
# sandbox), pinned by tests/bench/peers/package-lock.json, into
# $(BUILDDIR)/peers (never global); srt also needs ripgrep and socat.
# make bench measures them when they are there.
PEER_PACKAGES := ripgrep socat bubblewrap
bench-peers:
	@missing=$$(for p in $(PEER_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing:" $$missing; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; fi
	mkdir -p $(BUILDDIR)/peers
	cp tests/bench/peers/package.json tests/bench/peers/package-lock.json $(BUILDDIR)/peers/
	cd $(BUILDDIR)/peers && npm ci --no-audit --no-fund --loglevel=error

GATE_SRCS := policy/gate.c policy/rules.c policy/egress_policy.c policy/shell_parse.c policy/normalize.c policy/inline_code.c policy/xalloc.c
$(BUILDDIR)/gate-bench: tests/bench/gate_bench.c $(GATE_SRCS) $(wildcard policy/*.h) Makefile $(BUILD_OPTIONS)
	@mkdir -p $(BUILDDIR)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -Ipolicy -o $@ tests/bench/gate_bench.c $(GATE_SRCS) $(LDHARDEN) \
	  $(shell $(PKG) --libs libpcre2-8 libcjson) $(BROKER_LIBS)

demo: deps
	$(MAKE) all
	tests/demo.sh $(BUILDDIR)

# ---- install ----
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/airlock \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(BUILDDIR)/airlock $(DESTDIR)$(BINDIR)/airlock
	install -m 0755 $(BUILDDIR)/airlock-daemon $(DESTDIR)$(DAEMON_PATH)
	install -m 0755 $(BUILDDIR)/airlock-helper $(DESTDIR)$(HELPER_PATH)
	install -m 0755 $(BUILDDIR)/airlock-supervisor $(DESTDIR)$(SUPERVISOR_PATH)
	install -m 0755 $(BUILDDIR)/airlock-egress $(DESTDIR)$(EGRESS_PATH)
	install -d $(DESTDIR)$(DATADIR)/airlock
	install -m 0644 policy/default.rules $(DESTDIR)$(DEFAULT_RULES)
	install -m 0644 $(BUILDDIR)/airlock.1 $(DESTDIR)$(MANDIR)/man1/airlock.1
	install -m 0644 $(BUILDDIR)/airlock-helper.8 $(DESTDIR)$(MANDIR)/man8/airlock-helper.8

# setuid root; only the group `airlock` may run it when that group exists.
install-setuid: install
	@if getent group airlock >/dev/null; then \
	  chown root:airlock $(DESTDIR)$(HELPER_PATH) && chmod 4750 $(DESTDIR)$(HELPER_PATH); \
	else chown root:root $(DESTDIR)$(HELPER_PATH) && chmod 4755 $(DESTDIR)$(HELPER_PATH); fi
	@ls -l $(DESTDIR)$(HELPER_PATH)

# file capabilities instead of setuid, for distribution packaging.
install-caps: install
	chown root:root $(DESTDIR)$(HELPER_PATH)
	chmod 0755 $(DESTDIR)$(HELPER_PATH)
	setcap cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin+ep $(DESTDIR)$(HELPER_PATH)
	@getcap $(DESTDIR)$(HELPER_PATH)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/airlock $(DESTDIR)$(DAEMON_PATH) $(DESTDIR)$(HELPER_PATH) \
	  $(DESTDIR)$(SUPERVISOR_PATH) $(DESTDIR)$(EGRESS_PATH) \
	  $(DESTDIR)$(DEFAULT_RULES) \
	  $(DESTDIR)$(MANDIR)/man1/airlock.1 $(DESTDIR)$(MANDIR)/man8/airlock-helper.8

# ---- the Debian package (debian/) ----
# Built from a copy of the source in $(DEB_DIR) (dpkg-buildpackage writes
# beside the tree it builds, and its build must not touch this one's):
# the .deb, .buildinfo, .changes and the build log (for blhc) land there.
# dpkg-buildpackage gets none of this make's flags: -s would hide the
# compiler lines from blhc.
DEB_DIR := $(BUILDDIR)/deb
DEB_SOURCES := LICENSE Makefile NEWS.md README.md SECURITY.md VERSION \
               backends broker debian docs fuzz helper policy tests
deb:
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/airlock-$(VERSION)
	cp -a $(DEB_SOURCES) $(DEB_DIR)/airlock-$(VERSION)/
	rm -rf $(DEB_DIR)/airlock-$(VERSION)/debian/build
	cd $(DEB_DIR)/airlock-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	  dpkg-buildpackage -us -uc -b -J$$(nproc) \
	  > ../build.log 2>&1 || { tail -n 40 ../build.log; exit 1; }
	@ls $(DEB_DIR)/*.deb

# The trusted core's budget: C lines in helper/, blank and comment lines out.
helper-lines:
	@n=0; for f in helper/*.c helper/*.h; do \
	  c=$$(gcc -fpreprocessed -dD -E -P $$f 2>/dev/null | grep -cv '^[[:space:]]*$$'); n=$$((n + c)); done; \
	  echo "helper/: $$n lines of C (budget 2500)"

clean:
	rm -rf $(BUILDDIR)

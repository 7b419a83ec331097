# SPDX-License-Identifier: GPL-2.0-only
# vsockmap build. Outputs go to .output/; `make V=1` shows full commands.

PREFIX		?= /usr/local
DESTDIR		?=
SBINDIR		?= $(PREFIX)/sbin
BINDIR		?= $(PREFIX)/bin
MANDIR		?= $(PREFIX)/share/man
SYSCONFDIR	?= /etc
UNITDIR		?= $(PREFIX)/lib/systemd/system
EXAMPLEDIR	?= $(PREFIX)/share/doc/vsockmap/examples

OUTPUT		:= .output
CC		?= cc
CLANG		?= clang
BPFTOOL		?= bpftool
PKG_CONFIG	?= pkg-config
VMLINUX_BTF	?= /sys/kernel/btf/vmlinux

PKGS		:= libbpf libsystemd inih json-c
CFLAGS		?= -O2 -g
WARNINGS	:= -Wall -Wextra -Werror=implicit-function-declaration -Wshadow -Wformat=2
# src/common: shared by the daemon, the CLI and the tests; src/daemon (its subfolders by
# job) and src/ctl: one program each. Headers are included by name.
SRC_DIRS	:= src/common src/ctl src/daemon src/daemon/listener src/daemon/redirect \
		   src/daemon/dataplane src/daemon/sockets src/daemon/systemd src/daemon/control
SRC_INCLUDES	:= $(addprefix -I,$(SRC_DIRS))
override CFLAGS	+= $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -Iinclude -I$(OUTPUT) $(SRC_INCLUDES) \
		   $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null) -MMD -MP
LDLIBS		+= $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
# The daemon's test knobs (VSOCKMAPD_TEST_*, docs/hacking.md): in every build but the
# package's (debian/rules builds with TEST_KNOBS=0), so the installed daemon has none.
TEST_KNOBS	?= 1
ifeq ($(TEST_KNOBS),1)
override CFLAGS	+= -DVSOCKMAP_TEST_KNOBS
endif
# The object is embedded in the daemon whole, its DWARF too: no build path in it.
BPF_CFLAGS	:= -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -I$(OUTPUT) -Iinclude -MMD -MP \
		   -ffile-prefix-map=$(CURDIR)=.

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# Modules shared by the daemon, the CLI and the unit tests.
COMMON_SRCS	:= $(wildcard src/common/*.c)
# The daemon's own modules.
DAEMON_SRCS	:= $(wildcard src/daemon/*.c src/daemon/*/*.c)
CTL_SRCS	:= $(wildcard src/ctl/*.c)
UNIT_SRCS	:= $(wildcard tests/unit/test_*.c)
# The BPF programs on real sockets, without the daemon (as the kernel's prog_tests).
PROG_SRCS	:= $(wildcard tests/prog/test_prog_*.c)
TOOL_SRCS	:= $(wildcard tests/tools/*.c)

COMMON_OBJS	:= $(COMMON_SRCS:%.c=$(OUTPUT)/%.o)
DAEMON_OBJS	:= $(DAEMON_SRCS:%.c=$(OUTPUT)/%.o)
CTL_OBJS	:= $(CTL_SRCS:%.c=$(OUTPUT)/%.o)
UNIT_BINS	:= $(UNIT_SRCS:tests/unit/%.c=$(OUTPUT)/tests/%) \
		   $(PROG_SRCS:tests/prog/%.c=$(OUTPUT)/tests/%)
# What a prog test links: the data plane, the only user of libbpf, and what it needs.
PROG_DEPS	:= $(addprefix $(OUTPUT)/src/daemon/,dataplane/bpf_dataplane.o dataplane/slot_pool.o \
		   dataplane/dataplane_queues.o dataplane/dgram_plane.o dataplane/insert_probe.o \
		   dataplane/unhash_probe.o dataplane/psock_wake.o dataplane/cgroup_self.o sockets/fd_spare.o sockets/sockopt.o)
# bench/trace's two tools (their rules are below).
TRACE_TOOLS	:= vsm-trace vsm-profile
TOOL_BINS	:= $(TOOL_SRCS:tests/tools/%.c=$(OUTPUT)/tools/%) $(TRACE_TOOLS:%=$(OUTPUT)/tools/%)
BPF_OBJ		:= $(OUTPUT)/vsockmap.bpf.o
SKEL		:= $(OUTPUT)/vsockmap.skel.h

BINS		:= $(OUTPUT)/vsockmapd $(OUTPUT)/vsockmapctl

# libFuzzer targets (tests/fuzz/), built with clang, ASan and UBSan into their own tree.
FUZZ_OUTPUT	:= .output-fuzz
FUZZ_SRCS	:= $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS	:= $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_OUTPUT)/%)
FUZZ_OBJS	:= $(COMMON_SRCS:%.c=$(FUZZ_OUTPUT)/%.o)
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS	:= -O1 -g $(FUZZ_SAN) $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -Iinclude $(SRC_INCLUDES) \
		   $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)

.DELETE_ON_ERROR:
.PHONY: all deps check check-unit check-host check-sanitize check-vm check-systemd demo install \
	clean format \
	toolcheck tools unit-tests bench fuzz fuzz-build lint soak soak-host programs deb trace kernel-patched kernel-selftest

all: toolcheck $(BINS) tools

# What is installed: the daemon, the CLI and the configuration file (debian/rules builds this).
programs: $(BINS) $(OUTPUT)/vsockmap.conf

tools: $(TOOL_BINS)

unit-tests: $(UNIT_BINS)

# One readable line when a tool or library is missing or too old.
toolcheck:
	$(Q)scripts/check-toolchain.sh

deps:
	$(Q)scripts/install-deps.sh

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BPF_OBJ): bpf/vsockmap.bpf.c $(OUTPUT)/vmlinux.h include/vsockmap.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name vsockmap_bpf > $@.tmp && mv $@.tmp $@

# The object's SHA-256, so the logs of every suite can show the same object was loaded.
$(OUTPUT)/bpf-object.sha256: $(BPF_OBJ)
	$(Q)sha256sum $< | cut -d' ' -f1 > $@.tmp && mv $@.tmp $@

$(OUTPUT)/bpf_object_id.h: $(OUTPUT)/bpf-object.sha256
	$(Q)printf '#define VSOCKMAP_BPF_SHA256 "%s"\n' "$$(cat $<)" > $@.tmp && mv $@.tmp $@

# The data plane's files include the skeleton (dataplane_internal.h).
$(addprefix $(OUTPUT)/src/daemon/dataplane/,bpf_dataplane.o dataplane_queues.o dgram_plane.o \
	insert_probe.o unhash_probe.o): $(SKEL)
$(OUTPUT)/src/daemon/daemon.o $(OUTPUT)/src/daemon/control/control_commands.o $(OUTPUT)/src/daemon/systemd/handover.o: $(OUTPUT)/bpf_object_id.h

$(OUTPUT)/%.o: %.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUTPUT)/vsockmapd: $(DAEMON_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(OUTPUT)/vsockmapctl: $(CTL_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Unit tests of a daemon module link that module too.
$(OUTPUT)/tests/test_sockopt: $(OUTPUT)/src/daemon/sockets/sockopt.o
$(OUTPUT)/tests/test_socket_file: $(OUTPUT)/src/daemon/sockets/socket_file.o
$(OUTPUT)/tests/test_listen_socket: $(addprefix $(OUTPUT)/src/daemon/sockets/,listen_socket.o \
	socket_file.o socket_address.o)
$(OUTPUT)/tests/test_slot_pool: $(OUTPUT)/src/daemon/dataplane/slot_pool.o
$(OUTPUT)/tests/test_psock_wake: $(OUTPUT)/src/daemon/dataplane/psock_wake.o
$(OUTPUT)/tests/test_auto_datapath: $(OUTPUT)/src/daemon/listener/auto_datapath.o
$(OUTPUT)/tests/test_fd_carrier: $(addprefix $(OUTPUT)/src/daemon/systemd/,fd_carrier.o \
	passed_fds.o)
$(OUTPUT)/tests/test_stored_pair: $(OUTPUT)/src/daemon/systemd/stored_pair.o
$(OUTPUT)/tests/test_redirect_phase: $(OUTPUT)/src/daemon/redirect/redirect_phase.o
$(OUTPUT)/tests/test_redirect_record: $(OUTPUT)/src/daemon/redirect/redirect_record.o
$(OUTPUT)/tests/test_uid_tally: $(OUTPUT)/src/daemon/redirect/uid_tally.o
$(OUTPUT)/tests/test_control_server: $(addprefix $(OUTPUT)/src/daemon/,control/control_server.o \
	control/control_conn.o sockets/socket_file.o sockets/peer_access.o)

$(OUTPUT)/tests/%: $(OUTPUT)/tests/unit/%.o $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcmocka

$(OUTPUT)/tests/test_prog_%: $(OUTPUT)/tests/prog/test_prog_%.o $(PROG_DEPS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcmocka

# bench/trace: the kernel-cost tracer and the CPU-time sampler (bench/README.md), each a BPF
# object and skeleton of its own, linked with what they share (run_command.c).
$(OUTPUT)/vsm-trace.bpf.o: bench/trace/vsm_trace.h
$(OUTPUT)/vsm-profile.bpf.o: bench/trace/vsm_profile.h

$(TRACE_TOOLS:%=$(OUTPUT)/%.bpf.o): $(OUTPUT)/%.bpf.o: bench/trace/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ibench/trace -c $< -o $@

$(TRACE_TOOLS:%=$(OUTPUT)/%.skel.h): $(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

$(TRACE_TOOLS:%=$(OUTPUT)/bench/trace/%.o): $(OUTPUT)/bench/trace/%.o: $(OUTPUT)/%.skel.h

$(TRACE_TOOLS:%=$(OUTPUT)/tools/%): $(OUTPUT)/tools/%: $(OUTPUT)/bench/trace/%.o \
		$(OUTPUT)/bench/trace/run_command.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(OUTPUT)/tools/%: $(OUTPUT)/tests/tools/%.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@

$(OUTPUT):
	$(Q)mkdir -p $@

# make check SANITIZE=address,undefined: only the unit and host suites, built with those.
check: deps all $(UNIT_BINS)
	$(Q)$(if $(SANITIZE),SANITIZE=$(SANITIZE) tests/run-all.sh sanitize,tests/run-all.sh)

check-unit: all $(UNIT_BINS)
	$(Q)tests/run-all.sh unit

check-host: all
	$(Q)tests/run-all.sh host

check-sanitize: toolcheck
	$(Q)tests/run-all.sh sanitize

check-systemd: all
	$(Q)tests/run-all.sh systemd

check-vm: all
	$(Q)tests/run-all.sh vm

demo: deps all
	$(Q)tests/vm/demo.sh

# Performance, reported and never asserted; QUICK=1 for the short profile (bench/README.md).
bench: deps all
	$(Q)QUICK=$(QUICK) bench/run.sh

# What the kernel does per MiB, per relay mode, in the VM (bench/trace/run.sh); never asserted.
trace: deps all
	$(Q)bench/trace/run.sh

# The kernel patches (kernel/README.md) built into stock and patched VM kernels, cached outside
# the tree; never part of make check.
kernel-patched:
	$(Q)kernel/build.sh

# The kernel's vsock test suite, with the series' tests, on both kernels, and the af_unix
# test also on the series without patch 6, which it must fail (kernel/README.md).
kernel-selftest: all
	$(Q)kernel/build.sh --only patched --without 6 --if-stale >/dev/null
	$(Q)kernel/selftest.sh

# Many connections through the daemon to real vsock in the VM; QUICK=1 is make check's profile.
soak: deps all
	$(Q)QUICK=$(QUICK) tests/vm/soak.sh

soak-host: all
	$(Q)tests/host/soak.sh

# cppcheck and clang-tidy (scripts/lint.sh, .clang-tidy), and the module-call check. clang-tidy
# reads the generated headers (the skeleton, bpf_object_id.h) and scripts/module-cycles.py the
# objects of the daemon and the CLI: building both programs makes all of them, so that
# `make lint` works as the first command in a fresh clone.
lint: toolcheck $(BINS)
	$(Q)scripts/lint.sh

# Each target for FUZZ_SECONDS (default 60), or FUZZ_RUNS execs; tests/fuzz/README.md.
fuzz: fuzz-build
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh

fuzz-build: toolcheck $(FUZZ_BINS)

$(FUZZ_OUTPUT)/src/%.o: src/%.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# The record decoder is the daemon's, not a common module.
$(FUZZ_OUTPUT)/fuzz_record: $(FUZZ_OUTPUT)/src/daemon/redirect/redirect_record.o

$(FUZZ_OUTPUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(call msg,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ $(LDLIBS)

# The installed configuration: config/vsockmap.conf with every setting commented out, so
# that a fresh install starts and listens on nothing (scripts/conffile.awk).
$(OUTPUT)/vsockmap.conf: config/vsockmap.conf scripts/conffile.awk | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)awk -f scripts/conffile.awk $< > $@.tmp && mv $@.tmp $@

# The Debian package in .output/deb, built from a copy of the tree's files
# (scripts/build-deb.sh); DEB_VERSION=V builds it as version V.
deb:
	$(Q)scripts/build-deb.sh $(if $(DEB_VERSION),--version $(DEB_VERSION))

# The configuration as the package has it (all commented out; an existing one is the
# administrator's and never overwritten); the demo's configuration and the socket units that
# match only its sections as examples.
install: programs
	install -D -m 0755 $(OUTPUT)/vsockmapd $(DESTDIR)$(SBINDIR)/vsockmapd
	install -D -m 0755 $(OUTPUT)/vsockmapctl $(DESTDIR)$(BINDIR)/vsockmapctl
	install -D -m 0644 systemd/vsockmapd.service $(DESTDIR)$(UNITDIR)/vsockmapd.service
	for f in config/vsockmap.conf systemd/*.socket; do \
		install -D -m 0644 $$f $(DESTDIR)$(EXAMPLEDIR)/$${f##*/}; done
	[ -e $(DESTDIR)$(SYSCONFDIR)/vsockmap/vsockmap.conf ] || \
		install -D -m 0644 $(OUTPUT)/vsockmap.conf $(DESTDIR)$(SYSCONFDIR)/vsockmap/vsockmap.conf
	install -D -m 0644 completions/vsockmapctl $(DESTDIR)$(PREFIX)/share/bash-completion/completions/vsockmapctl
	for m in man/*.[0-9]; do \
		install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; done

format:
	clang-format -i $(wildcard src/*/*.[ch] src/*/*/*.[ch]) include/*.h bpf/*.c tests/unit/*.c tests/tools/*.c

clean:
	rm -rf $(OUTPUT) .output-asan $(FUZZ_OUTPUT)

-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)

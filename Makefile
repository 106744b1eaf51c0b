# Justitia — top-level Makefile.
#
#   make                      build everything into build/
#   make check                unit tests on the host (also under ASan + UBSan,
#                             built in build-san/), fuzzers, then integration tests
#                             in the Soft-RoCE VM; last line "N passed, N failed, N skipped"
#   make check QUICK=1        unit tests only (VM tests skip; refused under CI=true)
#   make demo                 the main job on the Soft-RoCE testbed
#   make install              PREFIX DESTDIR SBINDIR BINDIR LIBDIR SYSCONFDIR SYSTEMDUNITDIR MANDIR
#                             (SYSCONFDIR/justitia/justitiad.json only if absent)
#   make SANITIZE=address,undefined    make V=1    make WERROR=1
.SUFFIXES:

PREFIX         ?= /usr/local
SBINDIR        ?= $(PREFIX)/sbin
BINDIR         ?= $(PREFIX)/bin
LIBDIR         ?= $(PREFIX)/lib
INCLUDEDIR     ?= $(PREFIX)/include
MANDIR         ?= $(PREFIX)/share/man
SYSCONFDIR     ?= /etc
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR        ?=

B := build
CC ?= cc
ifeq ($(origin CC),default)
CC := cc
endif

WARNINGS := -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
	-Wmissing-declarations -Wwrite-strings -Wpointer-arith -Wold-style-definition \
	-Wredundant-decls -Wnested-externs -Wcast-align -Wundef -Wno-unused-parameter \
	-Wno-missing-field-initializers
CSTD     := -std=c11 -D_GNU_SOURCE
OPTFLAGS ?= -O2 -g
CFLAGS   ?=
LDFLAGS  ?=
ALL_CFLAGS := $(CSTD) $(OPTFLAGS) $(WARNINGS) -fPIC -MMD -MP -I. -Iinclude -Icommon $(CFLAGS)
ifeq ($(WERROR),1)
ALL_CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS    += -fsanitize=$(SANITIZE)
endif

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

# ---------------------------------------------------------------- shim
SHIM_SRCS := $(wildcard shim/*.c) common/proto.c common/proto_client.c
SHIM_OBJS := $(SHIM_SRCS:%.c=$(B)/obj/%.o)
SHIM_LIB  := $(B)/libjustitia.so
SHIM_LIBS := -libverbs -ljansson -ldl -pthread

# ---------------------------------------------------------------- daemon, justctl
COMMON_OBJS := $(B)/obj/common/proto.o $(B)/obj/common/proto_client.o $(B)/obj/common/log.o
DAEMON_SRCS := $(filter-out %.bpf.c,$(wildcard daemon/*.c))
# common/jsonpos.c: source positions of JSON values, for the configuration's
# errors here and the scenarios' in justbench (not the shim: it has no use)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/common/jsonpos.o
DAEMON      := $(B)/justitiad
DAEMON_LIBS := -lev -ljansson -libverbs -lbpf -pthread
JUSTCTL     := $(B)/justctl
JUSTCTL_LIBS := -ljansson

# ---------------------------------------------------------------- justbench
# tools/justbench.c and its tools/bench_*.c modules (docs/justbench.1)
JUSTBENCH      := $(B)/justbench
JUSTBENCH_SRCS := tools/justbench.c $(wildcard tools/bench_*.c)
JUSTBENCH_OBJS := $(JUSTBENCH_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/common/jsonpos.o
JUSTBENCH_LIBS := -libverbs -ljansson -pthread

# ---------------------------------------------------------------- justsim
# The RNIC model (tests/sim/, docs/rnic-model.md) with the daemon's pure
# controller modules on top, in virtual time (and its table of the flows
# other hosts register, rreadtab.c, for the peer views).
SIM_SRCS     := $(wildcard tests/sim/*.c)
# The shim's objects but the interposer and its API (preload.c, api.c): the
# model's flows post through the real shim (tests/sim/sim_shim.c).
SIM_OBJS     := $(SIM_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/daemon/quantile.o \
	$(B)/obj/daemon/aimd.o $(B)/obj/daemon/tokens.o $(B)/obj/daemon/share.o \
	$(B)/obj/daemon/rreadtab.o $(B)/obj/daemon/rreadmsg.o $(B)/obj/common/log.o \
	$(filter-out $(B)/obj/shim/preload.o $(B)/obj/shim/api.o,$(SHIM_OBJS))
JUSTSIM      := $(B)/justsim
JUSTSIM_LIBS := -ljansson -libverbs -ldl -pthread

# ---------------------------------------------------------------- BPF: the QP watcher
# libbpf-bootstrap style: clang -target bpf, `bpftool gen object`, `bpftool gen
# skeleton`; the generated files stay in build/bpf/.  Kernel types come from
# the checked-in daemon/qpwatch.vmlinux.h and are relocated at load time
# (CO-RE), so nothing here depends on the build host's kernel (docs/qpwatch.md).
# The rules are below, after `all`.
BPF_CLANG    ?= clang
BPFTOOL      ?= bpftool
BPF_ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS   := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Wextra \
	-Wno-unused-parameter -Idaemon
QPWATCH_SKEL := $(B)/bpf/qpwatch.skel.h
QPWATCH_DEPS := daemon/qpwatch.bpf.c daemon/qpwatch.vmlinux.h daemon/qpwatch_event.h

# ---------------------------------------------------------------- test programs
# Each tests/progs/*.c is one program; tests/progs/lib/*.c are the helpers
# they share (RC setup, verification), linked as an archive so that each
# program takes only what it uses.
PROG_SRCS := $(wildcard tests/progs/*.c)
PROGS     := $(PROG_SRCS:tests/progs/%.c=$(B)/tests/%)
PROG_LIBS := -libverbs -lrdmacm -ljansson -lpthread
PROGLIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(wildcard tests/progs/lib/*.c))
PROGLIB      := $(B)/tests/libprogs.a

# ---------------------------------------------------------------- unit tests
# tests/unit/test_<module>.c #includes the module's .c to reach its statics,
# so each test binary links only cmocka and the libraries the module needs.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS     := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
UNIT_LIBS := -lcmocka -ljansson -lev -libverbs -lbpf -ldl -pthread

TARGETS := $(SHIM_LIB) $(DAEMON) $(JUSTCTL) $(JUSTBENCH) $(JUSTSIM) $(PROGS) $(UNITS)

all: $(TARGETS)

# Rebuild everything when the compiler or flags change (SANITIZE=, WERROR=...).
$(B)/.flags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' > $@

$(B)/obj/%.o: %.c $(B)/.flags
	$(call msg,CC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(SHIM_LIB): $(SHIM_OBJS) shim/libjustitia.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -o $@ $(SHIM_OBJS) -Wl,--version-script=shim/libjustitia.map \
		-Wl,-z,defs -Wl,-z,now $(LDFLAGS) $(SHIM_LIBS)

$(DAEMON): $(DAEMON_OBJS) $(COMMON_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(DAEMON_LIBS)

JUSTCTL_OBJS := $(B)/obj/tools/justctl.o $(B)/obj/tools/ctl_args.o $(B)/obj/tools/ctl_daemon.o \
	$(B)/obj/tools/ctl_show.o $(B)/obj/tools/ctl_text.o $(B)/obj/tools/ctl_metrics.o
$(JUSTCTL): $(JUSTCTL_OBJS) $(B)/obj/common/proto.o $(B)/obj/common/proto_client.o
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JUSTCTL_LIBS)

$(JUSTBENCH): $(JUSTBENCH_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JUSTBENCH_LIBS)

$(JUSTSIM): $(B)/obj/tools/justsim.o $(SIM_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(JUSTSIM_LIBS)

$(PROGLIB): $(PROGLIB_OBJS)
	$(call msg,AR,$@)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(B)/tests/%: $(B)/obj/tests/progs/%.o $(PROGLIB) $(COMMON_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(PROG_LIBS)

$(B)/tests/unit/%: $(B)/obj/tests/unit/%.o
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(UNIT_LIBS)

# The controller glue and the control socket are tested with the daemon's
# objects (not main.o): they need all of them, which one #included .c file
# cannot give.
DAEMON_UNITS := $(B)/tests/unit/test_controller $(B)/tests/unit/test_ctlsock
$(DAEMON_UNITS): $(B)/tests/unit/%: $(B)/obj/tests/unit/%.o \
		$(filter-out $(B)/obj/daemon/main.o,$(DAEMON_OBJS)) $(COMMON_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(DAEMON_LIBS) -lcmocka

# Tests that #include one daemon module (to reach its statics) and link the
# daemon's other objects: test_ctl (ctl.c), test_refresp (refresp.c),
# test_splitq (splitq.c), test_flows (flows.c), test_rread (rread.c),
# test_rreadtab (rreadtab.c), test_rreadmsg (rreadmsg.c).
DAEMON_MODULE_TESTS := ctl refresp splitq flows rread rreadtab rreadmsg
$(DAEMON_MODULE_TESTS:%=$(B)/tests/unit/test_%): $(B)/tests/unit/test_%: \
		$(B)/obj/tests/unit/test_%.o $(DAEMON_OBJS) $(COMMON_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(filter-out $(B)/obj/daemon/main.o $(B)/obj/daemon/$*.o,$(DAEMON_OBJS)) \
		$(COMMON_OBJS) $(LDFLAGS) $(DAEMON_LIBS) -lcmocka

# justbench's server side of --mode bidir and --mode progress: test_bench_bidir
# and test_bench_progress #include their module (to reach its statics) and link
# justbench's other objects.
JUSTBENCH_MODULE_TESTS := bidir progress
$(JUSTBENCH_MODULE_TESTS:%=$(B)/tests/unit/test_bench_%): $(B)/tests/unit/test_bench_%: \
		$(B)/obj/tests/unit/test_bench_%.o $(JUSTBENCH_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $< $(filter-out $(B)/obj/tools/justbench.o $(B)/obj/tools/bench_$*.o, \
		$(JUSTBENCH_OBJS)) $(LDFLAGS) $(JUSTBENCH_LIBS) -lcmocka

# The model's test runs the model and the daemon modules: their objects.
$(B)/tests/unit/test_sim: $(B)/obj/tests/unit/test_sim.o $(SIM_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(UNIT_LIBS)

$(B)/bpf/qpwatch.tmp.o: $(QPWATCH_DEPS)
	$(call msg,BPF,$@)
	@mkdir -p $(dir $@)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(B)/bpf/qpwatch.bpf.o: $(B)/bpf/qpwatch.tmp.o
	$(call msg,BPFGEN,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(QPWATCH_SKEL): $(B)/bpf/qpwatch.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name qpwatch_bpf > $@.tmp && mv $@.tmp $@

$(B)/obj/daemon/qpwatch.o $(B)/obj/tests/unit/test_qpwatch.o: $(QPWATCH_SKEL)
$(B)/obj/daemon/qpwatch.o $(B)/obj/tests/unit/test_qpwatch.o: ALL_CFLAGS += -I$(B)/bpf

# ---------------------------------------------------------------- benchmarks
# tests/bench/bench_*.c: programs that print numbers, never pass/fail.
# `make bench` builds and runs them (and callgrind for instruction counts).
BENCH_SRCS := $(wildcard tests/bench/bench_*.c)
BENCHES    := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)

$(B)/bench/%: $(B)/obj/tests/bench/%.o
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(UNIT_LIBS)

# The controller's and the registry's benchmarks run the daemon's own code:
# its objects, not main.o.
$(B)/bench/bench_controller $(B)/bench/bench_flows: $(B)/bench/%: $(B)/obj/tests/bench/%.o \
		$(filter-out $(B)/obj/daemon/main.o,$(DAEMON_OBJS)) $(COMMON_OBJS)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(DAEMON_LIBS)

bench: $(BENCHES) $(JUSTSIM)
	$(Q)tests/bench/run-bench

# ---------------------------------------------------------------- fuzz targets
# libFuzzer targets (clang); `make fuzz` builds them, `make check` runs each
# briefly from its seed corpus (tests/fuzz/corpus/<name>/).
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/fuzz/%)
FUZZ_CC   ?= clang

fuzz: $(FUZZERS)

$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(B)/.flags
	$(call msg,FUZZ,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined $(CSTD) -I. -Icommon \
		-MMD -MP -MF $@.d -o $@ $< -ljansson

# The daemon channel's message layer lives in an event loop: it needs libev.
$(B)/fuzz/fuzz_peer: tests/fuzz/fuzz_peer.c tests/fuzz/fuzz.h $(B)/.flags
	$(call msg,FUZZ,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined $(CSTD) -I. -Icommon \
		-MMD -MP -MF $@.d -o $@ $< -ljansson -lev -pthread

# The endpoint parser lives with the daemon's own verbs: it needs libibverbs.
$(B)/fuzz/fuzz_endpoint: tests/fuzz/fuzz_endpoint.c tests/fuzz/fuzz.h $(B)/.flags
	$(call msg,FUZZ,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined $(CSTD) -I. -Icommon \
		-MMD -MP -MF $@.d -o $@ $< -ljansson -libverbs

# The control socket's fuzzer drives ctl.c and its command modules (ctlcmd,
# ctlconn, ctlview: #included, so instrumented) with the daemon's other
# modules from the main build.
FUZZ_CTL_OBJS := $(filter-out $(B)/obj/daemon/main.o $(B)/obj/daemon/ctl.o \
	$(B)/obj/daemon/ctlcmd.o $(B)/obj/daemon/ctlconn.o $(B)/obj/daemon/ctlview.o,$(DAEMON_OBJS)) \
	$(COMMON_OBJS)
$(B)/fuzz/fuzz_ctl: tests/fuzz/fuzz_ctl.c tests/fuzz/fuzz.h $(FUZZ_CTL_OBJS) $(B)/.flags
	$(call msg,FUZZ,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined $(CSTD) -I. -Icommon -Idaemon \
		-I$(B)/bpf -MMD -MP -MF $@.d -o $@ $< $(FUZZ_CTL_OBJS) $(DAEMON_LIBS) $(LDFLAGS)

# The split protocol's fuzzer runs the shim's modules against a fake
# provider (tests/splitfake.h): it needs what the shim links.
$(B)/fuzz/fuzz_splitmsg: tests/fuzz/fuzz_splitmsg.c tests/fuzz/fuzz.h tests/splitfake.h $(B)/.flags
	$(call msg,FUZZ,$@)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined $(CSTD) -I. -Icommon \
		-MMD -MP -MF $@.d -o $@ $< $(SHIM_LIBS)

# ---------------------------------------------------------------- check / demo
# Both README commands start by installing what is missing (tools/install-deps),
# then build, then run.  The build runs in a sub-make so it happens after the
# packages (headers, libraries) are there.
check:
	$(Q)tools/install-deps
	$(Q)$(MAKE) --no-print-directory all fuzz
	$(Q)$(MAKE) --no-print-directory san
	$(Q)QUICK=$(QUICK) tests/run-check

# Everything again with ASan + UBSan in build-san/, for run-check --san (the
# libFuzzer targets are built with both already).
san:
	$(Q)$(MAKE) --no-print-directory B=build-san SANITIZE=address,undefined all

check-unit:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run-check --unit

demo:
	$(Q)tools/install-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo

# ---------------------------------------------------------------- install
install: all
	install -d $(DESTDIR)$(LIBDIR)/justitia $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(PREFIX)/share/doc/justitia
	install -m 0755 $(SHIM_LIB) $(DESTDIR)$(LIBDIR)/justitia/libjustitia.so
	install -m 0644 include/justitia.h $(DESTDIR)$(INCLUDEDIR)/justitia.h
	install -m 0755 $(DAEMON) $(DESTDIR)$(SBINDIR)/justitiad
	install -m 0755 $(JUSTCTL) $(DESTDIR)$(BINDIR)/justctl
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(JUSTBENCH) $(DESTDIR)$(BINDIR)/justbench
	install -m 0644 docs/justbench.1 $(DESTDIR)$(MANDIR)/man1/justbench.1
	install -m 0644 docs/libjustitia.7 $(DESTDIR)$(MANDIR)/man7/libjustitia.7
	install -m 0644 docs/justitiad.8 docs/justctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 docs/justitiad.json.5.md docs/protocol.md docs/justbench-scenario.md \
		docs/qpwatch.md $(DESTDIR)$(PREFIX)/share/doc/justitia/
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		systemd/justitiad.service > $(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service.d
	install -m 0644 systemd/justitiad.service.d/qpwatch.conf \
		$(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service.d/qpwatch.conf
	install -m 0644 etc/justitiad.json \
		$(DESTDIR)$(PREFIX)/share/doc/justitia/justitiad.json.example
	# the example configuration, never over an existing one (justitiad.json(5))
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/justitia
	test -e $(DESTDIR)$(SYSCONFDIR)/justitia/justitiad.json || \
		install -m 0644 etc/justitiad.json $(DESTDIR)$(SYSCONFDIR)/justitia/justitiad.json
	sed -e 's|@LIBDIR@|$(LIBDIR)|g' systemd/justitia-preload.conf.example \
		> $(DESTDIR)$(PREFIX)/share/doc/justitia/justitia-preload.conf.example
	sed -e 's|@BINDIR@|$(BINDIR)|g' systemd/justitia-metrics.service \
		> $(DESTDIR)$(PREFIX)/share/doc/justitia/justitia-metrics.service
	install -m 0644 systemd/justitia-metrics.timer $(DESTDIR)$(PREFIX)/share/doc/justitia/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/justitia/libjustitia.so $(DESTDIR)$(SBINDIR)/justitiad \
		$(DESTDIR)$(BINDIR)/justctl $(DESTDIR)$(MANDIR)/man7/libjustitia.7 \
		$(DESTDIR)$(MANDIR)/man8/justitiad.8 $(DESTDIR)$(MANDIR)/man8/justctl.8 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service.d/qpwatch.conf
	-rmdir $(DESTDIR)$(SYSTEMDUNITDIR)/justitiad.service.d
	rm -f $(DESTDIR)$(BINDIR)/justbench $(DESTDIR)$(MANDIR)/man1/justbench.1
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/justitia
	-rmdir $(DESTDIR)$(LIBDIR)/justitia
	@echo "uninstall: $(DESTDIR)$(SYSCONFDIR)/justitia/justitiad.json is kept (configuration)"

clean:
	rm -rf $(B) build-san

.PHONY: all bench fuzz san check check-unit demo install uninstall clean FORCE

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
# the fuzzers' dependencies (they #include the modules they fuzz)
-include $(wildcard $(B)/fuzz/*.d)

# edge0-infer — build, test, demo, bench.  Everything goes into $(BUILD) (default: build/):
#   $(BUILD)/bin/     edge0-infer, edge0-bench (and llamacpp-bench from `make llamacpp`)
#   $(BUILD)/tools/   one program per tools/*.c (micro benchmarks, simulators): tools/NAME.c ->
#                     $(BUILD)/tools/NAME; tools/llamacpp_{bench,ref}.c need llama.cpp: `make llamacpp`
#   $(BUILD)/tests/   one test binary per tests/test_*.c, run by tests/run.sh
# `make` (= `make all`) only compiles; it never installs anything. `make test`, `make demo`,
# `make bench`, `make sweep` and `make asan` first run `make deps` (tools/deps.sh: the missing
# Debian packages), then build in a sub-make, one after the other, so that under -j no compile
# starts before the headers it needs are installed.
BUILD ?= build
CC ?= cc
OPT ?= -O2
CFLAGS_COMMON = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -pthread -Isrc -I$(BUILD)/gen $(OPT)
ifeq ($(SAN),1)
CFLAGS_COMMON += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS_SAN = -fsanitize=address,undefined
endif
CFLAGS_AVX2 = -mavx2 -mfma -mf16c
CFLAGS_AVX512 = -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
# The libraries libedge0.a's objects call (jansson: JSON; crypto: SHA-256 in sysinfo_identity.c).
# --as-needed: a binary records only those it really calls (tests of the kernels need none of the
# first two). A tool that needs more names it in LDLIBS_<tool>.
LDLIBS = -ljansson -lcrypto -lm -lpthread
LDFLAGS = -Wl,--as-needed
LDLIBS_expert_read_bench = -luring
# libedit (line editing and history in `chat` at a terminal): edge0-infer only. The chat test
# drives it in a pseudo-terminal (forkpty, libutil).
LDLIBS_edge0_infer = -ledit -lmicrohttpd
LDLIBS_test_chat = -lutil

# Build identity for src/measure/sysinfo_identity.c: git commit, dirty flag, compiler and flags, written to
# $(BUILD)/gen/e0_build_info.h and rewritten only when a value changes (the .d files then rebuild
# just that object). Outside git both git values are "unknown".
HASH := \#
E0_GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
E0_GIT_DIRTY := $(shell git rev-parse HEAD >/dev/null 2>&1 && { test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true; } || echo unknown)
E0_COMPILER := $(subst ",,$(shell $(CC) --version 2>/dev/null | head -n1))
E0_BUILD_INFO := $(shell mkdir -p $(BUILD)/gen && printf '$(HASH)define E0_GIT_COMMIT "%s"\n$(HASH)define E0_GIT_DIRTY "%s"\n$(HASH)define E0_COMPILER "%s"\n$(HASH)define E0_CFLAGS "%s"\n' '$(E0_GIT_COMMIT)' '$(E0_GIT_DIRTY)' '$(E0_COMPILER)' '$(CFLAGS_COMMON)' > $(BUILD)/gen/e0_build_info.h.tmp && { cmp -s $(BUILD)/gen/e0_build_info.h.tmp $(BUILD)/gen/e0_build_info.h && rm -f $(BUILD)/gen/e0_build_info.h.tmp || mv $(BUILD)/gen/e0_build_info.h.tmp $(BUILD)/gen/e0_build_info.h; })

LIB_SRC   := $(sort $(shell find src -name '*.c' ! -path 'src/cli/*' ! -path 'src/serve/*'))
# src/serve (the HTTP server of `serve`) links into edge0-infer only, with libmicrohttpd; never into libedge0.a.
SERVE_SRC := $(sort $(wildcard src/serve/*.c))
CLI_SRC   := $(wildcard src/cli/*.c)
BENCH_SRC := $(wildcard bench/*.c)
TEST_SRC  := $(wildcard tests/test_*.c)
TOOL_SRC  := $(filter-out tools/llamacpp_bench.c tools/llamacpp_ref.c,$(wildcard tools/*.c))
GEN_SRC   := $(BUILD)/gen/unicode_data.c

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(if $(wildcard tools/gen_unicode.sh),$(BUILD)/obj/gen/unicode_data.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
SERVE_OBJ := $(SERVE_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TOOL_BIN  := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)
LIB       := $(BUILD)/libedge0.a

.PHONY: all deps test asan demo bench sweep llamacpp llamaserver clean
all: $(BUILD)/bin/edge0-infer $(if $(BENCH_SRC),$(BUILD)/bin/edge0-bench) $(TEST_BIN) $(TOOL_BIN)

# Install the missing Debian packages (the only target that installs anything).
deps:
	@sh tools/deps.sh

$(BUILD)/obj/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_AVX2) -MMD -MP -c $< -o $@
$(BUILD)/obj/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_AVX512) -MMD -MP -c $< -o $@
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -MMD -MP -c $< -o $@
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -c $< -o $@

# Unicode tables generated from Debian's unicode-data (UnicodeData.txt, Unicode 15).
UNICODE_DATA ?= /usr/share/unicode/UnicodeData.txt
$(GEN_SRC): tools/gen_unicode.sh
	@mkdir -p $(dir $@)
	sh tools/gen_unicode.sh $(UNICODE_DATA) > $@.tmp && mv $@.tmp $@

# Case-mapping tables for the chat templates' string functions, from the same package.
UNICODE_DIR ?= $(dir $(UNICODE_DATA))
$(BUILD)/gen/jinja_case_data.inc: tools/gen_case.sh
	@mkdir -p $(dir $@)
	sh tools/gen_case.sh $(UNICODE_DIR) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/text/jinja/jinja_unicode.o: $(BUILD)/gen/jinja_case_data.inc

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/bin/edge0-infer: $(CLI_OBJ) $(SERVE_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -o $@ $(CLI_OBJ) $(SERVE_OBJ) $(LIB) $(LDLIBS) $(LDLIBS_edge0_infer)

$(BUILD)/bin/edge0-bench: $(BENCH_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -o $@ $(BENCH_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/t.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -Itests -o $@ $< $(LIB) $(LDLIBS) $(LDLIBS_$*)

# The tests' shared helper headers besides t.h (tests/t_*.h, e.g. t_rand.h): any test may include one.
$(TEST_BIN): $(wildcard tests/t_*.h)

$(BUILD)/tools/%: tools/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -MMD -MP -MT $@ -MF $(BUILD)/obj/tools/$*.d -o $@ $< $(LIB) $(LDLIBS) $(LDLIBS_$*)
$(TOOL_BIN): | $(BUILD)/obj/tools

$(BUILD)/obj/tools:
	@mkdir -p $@

# Every test (needs ../shared, the shared data folder, beside the repo; or E0_SHARED); the runner
# ends with "N passed, N failed, N skipped".
test:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory all
	@sh tests/run.sh $(BUILD)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, in $(BUILD)/asan.
asan:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=1 OPT=-O1 test

demo:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory all
	@sh tools/demo.sh $(BUILD)

# Speed of synthesized models next to the memory-bandwidth bound -> docs/perf.md.
bench:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory all
	@sh tools/bench.sh $(BUILD)

# The standard measurement of any model: E0_BENCH_MODEL=M.gguf make sweep (see docs/bench.md).
sweep:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh $(BUILD)

# llama.cpp for side-by-side measurements only (never linked into the engine): fetches the
# prebuilt libraries (npm node-llama-cpp) into $(BUILD)/llamacpp, builds $(BUILD)/bin/llamacpp-bench.
# Then: sh tools/side_by_side.sh MODEL.gguf [THREADS].
llamacpp:
	@sh tools/llamacpp.sh $(BUILD)

# llama.cpp's own llama-server, compiled from the pinned source (CMake, minutes; AVX2 level unless
# LLAMASERVER_SIMD=native) into $(BUILD)/llamacpp/server, for `edge0-bench compare --mode server`.
llamaserver: llamacpp
	@sh tools/llamaserver.sh $(BUILD)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- Fuzzing (fuzz/, see fuzz/run.sh): libFuzzer targets built with clang into $(BUILD)/fuzz. ----
# The engine is compiled a second time with -fsanitize=fuzzer-no-link,address,undefined into
# $(BUILD)/fuzz/obj; seed corpora are built from ../shared into $(BUILD)/fuzz/corpus/NAME.
#   make fuzz [FUZZ_SECONDS=600]   each target for FUZZ_SECONDS; fails on any crash/leak/timeout
#   make fuzz-ci                   each target for 30 s
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_SHARED ?= ../shared
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_NAMES := gguf tokenizer jinja messages trace serve grammar
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 -pthread -Isrc -I$(BUILD)/gen \
              -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
              -Wno-string-concatenation  # clang-only lint; the engine splits "\xNN" "text" on purpose
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o) $(if $(wildcard tools/gen_unicode.sh),$(FUZZ_DIR)/obj/gen/unicode_data.o)
FUZZ_BIN := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)
# fuzz_serve (and the regression test replaying it) needs the request/response code of src/serve,
# which is not in libedge0.a; not http.c, so no libmicrohttpd. FUZZ_OBJ_NAME: extra objects of fuzz_NAME.
FUZZ_SERVE_SRC := src/serve/api.c src/serve/output.c
FUZZ_OBJ_serve := $(FUZZ_SERVE_SRC:%.c=$(FUZZ_DIR)/obj/%.o)

.PHONY: fuzz fuzz-ci fuzz-build fuzz-corpus fuzz-cc
fuzz-build: $(FUZZ_BIN) $(FUZZ_DIR)/fuzz_seeds
fuzz-cc:
	@sh tools/deps.sh clang
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz needs $(FUZZ_CC) with libFuzzer (Debian: apt-get install clang)" >&2; exit 1; }
$(FUZZ_LIB_OBJ) $(FUZZ_OBJ_serve): | fuzz-cc

$(FUZZ_DIR)/obj/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined $(CFLAGS_AVX2) -MMD -c $< -o $@
$(FUZZ_DIR)/obj/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined $(CFLAGS_AVX512) -MMD -c $< -o $@
$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -c $< -o $@
$(FUZZ_DIR)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
$(FUZZ_DIR)/obj/src/text/jinja/jinja_unicode.o: $(BUILD)/gen/jinja_case_data.inc

$(FUZZ_DIR)/libedge0-fuzz.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h $(FUZZ_DIR)/libedge0-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ_$*) $(FUZZ_DIR)/libedge0-fuzz.a $(LDLIBS)
$(FUZZ_DIR)/fuzz_serve: $(FUZZ_OBJ_serve)

# The seed builder (an ordinary program, sanitized, on the same objects).
$(FUZZ_DIR)/fuzz_seeds: fuzz/seeds.c fuzz/fuzz_common.h $(FUZZ_DIR)/libedge0-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=address,undefined -o $@ $< $(FUZZ_DIR)/libedge0-fuzz.a $(LDLIBS)

# Seeds are rebuilt on every run (inputs libFuzzer added to the corpus stay).
fuzz-corpus: $(FUZZ_DIR)/fuzz_seeds
	@mkdir -p $(FUZZ_DIR)/corpus
	E0_SHARED=$(FUZZ_SHARED) $(FUZZ_DIR)/fuzz_seeds $(FUZZ_SHARED) $(FUZZ_DIR)/corpus

fuzz: fuzz-build fuzz-corpus
	@E0_SHARED=$(FUZZ_SHARED) sh fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-ci: fuzz-build fuzz-corpus
	@E0_SHARED=$(FUZZ_SHARED) sh fuzz/run.sh $(FUZZ_DIR) 30 $(FUZZ_NAMES)

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)
# The regression test includes the fuzz targets' code (tests/test_fuzz_regress.c), fuzz_serve's
# with the serve objects it calls (the pattern rule above, plus those objects).
# test_serve_api: unit tests of those serve objects (tool calls parsed out of replies).
$(BUILD)/tests/test_serve_api: tests/test_serve_api.c tests/t.h $(FUZZ_SERVE_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -Itests -o $@ $< $(FUZZ_SERVE_SRC:%.c=$(BUILD)/obj/%.o) $(LIB) $(LDLIBS)
$(BUILD)/tests/test_fuzz_regress: tests/test_fuzz_regress.c tests/t.h $(FUZZ_SERVE_SRC:%.c=$(BUILD)/obj/%.o) $(LIB) $(wildcard fuzz/*.c fuzz/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LDFLAGS) $(LDFLAGS_SAN) -Itests -o $@ $< $(FUZZ_SERVE_SRC:%.c=$(BUILD)/obj/%.o) $(LIB) $(LDLIBS)

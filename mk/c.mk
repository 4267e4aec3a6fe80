# C: examples, the cmocka test suite (also under AddressSanitizer), the demo
# and the fambench benchmark. Everything links libopenfam.so.0 from the build
# tree through the `lib` target.

C_EXAMPLES    := $(BUILD)/examples/hello $(BUILD)/examples/gather
C_TEST_NAMES  := test_api test_atomics test_threads
C_TESTS       := $(addprefix $(BUILD)/c-tests/,$(C_TEST_NAMES))
C_TESTS_ASAN  := $(addsuffix -asan,$(C_TESTS))
C_TEST_HDRS   := bindings/c/tests/famtest.h include/openfam.h
C_DEMO        := $(BUILD)/demo/demo
C_DEMO_STORE  := $(abspath $(BUILD)/demo-store)
ASAN_FLAGS    := -fsanitize=address -fno-omit-frame-pointer
# Relink when the library changes, but only name it as a file once it exists:
# the rule that builds it belongs to `lib`, which runs first (order-only).
C_LIB_DEP     := $(wildcard $(LIB))

# No ASan options are needed to coexist with the Go runtime in libopenfam.so:
# Go chains to the signal handlers ASan installed before it, and the suites
# pass under ASan's defaults. LeakSanitizer is left on (checked to report a
# planted leak with the library loaded), so leaked C memory fails the run.
C_ASAN_OPTIONS := detect_leaks=1:halt_on_error=1

ALL_TARGETS  += examples-c fambench
TEST_TARGETS += test-c
DEMO_TARGETS += demo-c
DEPS_APT     += libcmocka-dev

.PHONY: examples-c test-c demo-c fambench

examples-c: $(C_EXAMPLES) ## build the C examples into build/examples/

$(BUILD)/examples/%: bindings/c/examples/%.c include/openfam.h $(C_LIB_DEP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

$(BUILD)/c-tests/%: bindings/c/tests/%.c $(C_TEST_HDRS) $(C_LIB_DEP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS) -lcmocka

$(BUILD)/c-tests/%-asan: bindings/c/tests/%.c $(C_TEST_HDRS) $(C_LIB_DEP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(ASAN_FLAGS) -o $@ $< $(APP_LDFLAGS) -lcmocka

test-c: $(C_TESTS) $(C_TESTS_ASAN) $(C_EXAMPLES) ## C API test suite (cmocka), plain and under ASan, and the examples
	@failed=""; \
	for t in $(C_TESTS); do echo "== $$t"; $$t || failed="$$failed $$t"; done; \
	for t in $(C_TESTS_ASAN); do echo "== $$t (ASan)"; \
	  ASAN_OPTIONS=$(C_ASAN_OPTIONS) $$t || failed="$$failed $$t"; done; \
	for t in $(C_EXAMPLES); do echo "== $$t"; \
	  store=$$(mktemp -d); \
	  OPENFAM_DATA_DIR=$$store OPENFAM_SHM_DIR=$$store/shm OPENFAM_BACKUP_DIR=$$store/backups \
	    env -u OPENFAM_SERVER $$t || failed="$$failed $$t"; rm -rf $$store; done; \
	if [ -n "$$failed" ]; then echo "C tests FAILED:$$failed"; exit 1; fi; \
	echo "C tests passed"

$(C_DEMO): examples/demo/demo.c include/openfam.h $(C_LIB_DEP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

# Two runs on a fresh store: the first creates and writes, the second finds
# the item by name and checks what the first wrote.
C_DEMO_ENV := OPENFAM_DATA_DIR=$(C_DEMO_STORE) OPENFAM_SHM_DIR=$(C_DEMO_STORE)/shm \
              OPENFAM_BACKUP_DIR=$(C_DEMO_STORE)/backups env -u OPENFAM_SERVER
demo-c: $(C_DEMO) ## the C demo, run twice to show persistence
	rm -rf $(C_DEMO_STORE)
	$(C_DEMO_ENV) $(C_DEMO)
	$(C_DEMO_ENV) $(C_DEMO)

fambench: $(BINDIR)/fambench ## build the C benchmark

$(BINDIR)/fambench: cmd/fambench/fambench.c include/openfam.h $(C_LIB_DEP) $(VERSION_STAMP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(VERSION_CFLAGS) -o $@ $< $(APP_LDFLAGS)


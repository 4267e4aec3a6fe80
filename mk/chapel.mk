# Chapel binding (bindings/chapel): the extern layer is checked against
# include/openfam.h on every `make test`; the examples are compiled and run
# only where a Chapel compiler (chpl) is on the PATH.

CHAPEL_DIR      := bindings/chapel
CHAPEL_BUILD    := $(BUILD)/chapel
CHAPEL_PY       ?= python3
# Extra flags for chpl (e.g. --fast) and for running the programs (e.g.
# -nl 1 where CHPL_COMM is not none).
CHPL_FLAGS      ?=
CHPL_RUN_FLAGS  ?=
CHAPEL_EXAMPLES := hello multipe

.PHONY: test-chapel chapel-check chapel-examples

test-chapel: chapel-check ## check the Chapel binding against openfam.h; with chpl, build and run its examples
	@if command -v chpl >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory chapel-examples; \
	else \
	  echo "test-chapel: chpl not on PATH, Chapel examples not compiled"; \
	fi

chapel-check: ## compare every extern proc of OpenFAM.chpl with include/openfam.h, plus the checker's self-tests
	CC="$(CC)" $(CHAPEL_PY) $(CHAPEL_DIR)/check_binding.py --cc "$(CC)" \
	  --header include/openfam.h --module $(CHAPEL_DIR)/OpenFAM.chpl
	CC="$(CC)" $(CHAPEL_PY) -m unittest discover -s $(CHAPEL_DIR) -p 'test_*.py'

# $(wildcard $(LIB)) relinks when the library changes; the rule that builds
# it belongs to `lib`, which runs first (order-only).
$(CHAPEL_BUILD)/%: $(CHAPEL_DIR)/examples/%.chpl $(CHAPEL_DIR)/OpenFAM.chpl include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	chpl $(CHPL_FLAGS) -M $(CHAPEL_DIR) -I include -L $(LIBDIR) \
	  --ldflags "-Wl,-rpath,$(ABS_LIBDIR)" -o $@ $<

# Each run gets a fresh embedded store and ignores any configured server, so
# the examples see only their own regions. multipe runs under famrun when
# the launcher has been built, else as a single PE.
chapel-examples: $(addprefix $(CHAPEL_BUILD)/,$(CHAPEL_EXAMPLES))
	@store=$$(mktemp -d); \
	export OPENFAM_DATA_DIR=$$store OPENFAM_SHM_DIR=$$store/shm OPENFAM_BACKUP_DIR=$$store/backups; \
	unset OPENFAM_SERVER; rc=0; \
	echo "== $(CHAPEL_BUILD)/hello"; $(CHAPEL_BUILD)/hello $(CHPL_RUN_FLAGS) || rc=1; \
	if [ -x $(BINDIR)/famrun ]; then \
	  echo "== $(BINDIR)/famrun -n 2 $(CHAPEL_BUILD)/multipe"; \
	  $(BINDIR)/famrun -n 2 $(CHAPEL_BUILD)/multipe $(CHPL_RUN_FLAGS) || rc=1; \
	else \
	  echo "== $(CHAPEL_BUILD)/multipe (famrun not built: one PE)"; \
	  $(CHAPEL_BUILD)/multipe $(CHPL_RUN_FLAGS) || rc=1; \
	fi; \
	rm -rf $$store; exit $$rc

TEST_TARGETS += test-chapel

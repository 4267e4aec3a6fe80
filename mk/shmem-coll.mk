# OpenSHMEM teams, collectives and locks (shmem/team.c, shmem/coll*.c,
# shmem/barrier.c, shmem/lock.c; compiled into libopenfam.so.0 by `lib`
# through capi/shmem_*.c): their test programs, each run under oshrun with
# 1, 2, 3 and 4 PEs (odd counts matter: dissemination rounds, strided teams);
# the world-only ones also on memory servers (--servers 2: the core's
# private mode); then the misuses of bad_input.c, each of which must end
# the job. bench_coll is a quick latency look, built but not run.

SHMEM_COLL_SRC := $(wildcard shmem/tests/coll/*.c)
SHMEM_COLL_BIN := $(patsubst shmem/tests/coll/%.c,$(BUILD)/shmem-coll/%,$(SHMEM_COLL_SRC))
SHMEM_COLL_NP  ?= 1 2 3 4
# handles also as C++ (oshc++): the predefined handles in both languages.
SHMEM_COLL_BIN += $(BUILD)/shmem-coll/handles_cxx
SHMEM_COLL_RUN := $(filter-out %/bad_input %/bench_coll,$(SHMEM_COLL_BIN))
SHMEM_COLL_PRIVATE := $(BUILD)/shmem-coll/world $(BUILD)/shmem-coll/lock

TEST_TARGETS += test-shmem-coll

.PHONY: test-shmem-coll

$(BUILD)/shmem-coll/%: shmem/tests/coll/%.c shmem/tests/coll/check.h $(wildcard include/shmem*.h) $(C_LIB_DEP) | $(BINDIR)/oshcc lib
	@mkdir -p $(@D)
	$(BINDIR)/oshcc -std=c11 -pedantic -Wall -Wextra -Werror -g -O2 -o $@ $<

# handles is about programs linked as executables, which get copies of the
# library objects they name (copy relocations): built as PIE explicitly,
# and as C++ by oshc++ (its default, PIE on current toolchains).
$(BUILD)/shmem-coll/handles: shmem/tests/coll/handles.c shmem/tests/coll/check.h $(wildcard include/shmem*.h) $(C_LIB_DEP) | $(BINDIR)/oshcc lib
	@mkdir -p $(@D)
	$(BINDIR)/oshcc -std=c11 -pedantic -Wall -Wextra -Werror -g -O2 -fPIE -pie -o $@ $<

$(BUILD)/shmem-coll/handles_cxx: shmem/tests/coll/handles.c shmem/tests/coll/check.h $(wildcard include/shmem*.h) $(C_LIB_DEP) | $(BINDIR)/oshc++ lib
	@mkdir -p $(@D)
	$(BINDIR)/oshc++ -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -g -O2 -o $@ $<

# Each program exits non-zero (shmem_global_exit(1)) on the first wrong
# value; famrun's --timeout turns a hang into a failure.
test-shmem-coll: shmem $(SHMEM_COLL_BIN) ## OpenSHMEM teams, collectives and locks (shmem/tests/coll) under oshrun -np 1 to 4 and on memory servers
	@failed=""; for np in $(SHMEM_COLL_NP); do for t in $(SHMEM_COLL_RUN); do \
	  echo "== oshrun -np $$np $$t"; \
	  env -u OPENFAM_SERVER $(BINDIR)/oshrun -np $$np --timeout 180s $$t || failed="$$failed $$(basename $$t):np$$np"; \
	done; done; \
	for a in "-np 2 --servers 2" "-np 3 --servers 2"; do for t in $(SHMEM_COLL_PRIVATE); do \
	  echo "== oshrun $$a $$t"; \
	  env -u OPENFAM_SERVER $(BINDIR)/oshrun $$a --timeout 180s $$t || failed="$$failed $$(basename $$t):servers"; \
	done; done; \
	echo "== shmem/tests/coll/bad_input.sh"; \
	env -u OPENFAM_SERVER sh shmem/tests/coll/bad_input.sh $(BINDIR)/oshrun $(BUILD)/shmem-coll/bad_input || failed="$$failed bad_input"; \
	if [ -n "$$failed" ]; then echo "test-shmem-coll FAILED:$$failed"; exit 1; fi; \
	echo "test-shmem-coll passed"

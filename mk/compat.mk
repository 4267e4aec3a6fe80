# OpenFAM 3.2 source compatibility (include/fam/*.h, capi/fam_c.c):
# a gtest suite in OpenFAM's style, an initialize/options/config suite, and a
# C program calling every c_fam_* function. Built into $(BUILD)/compat.
#
# test-compat runs them single-PE against a private store under
# $(BUILD)/compat/run, then again under `famrun -n 2` when $(BINDIR)/famrun
# has been built (skipped with a message otherwise).

COMPAT_SRC  := bindings/compat
COMPAT_OUT  := $(BUILD)/compat
COMPAT_RUN  := $(abspath $(COMPAT_OUT))/run
COMPAT_HDRS := include/openfam.h include/fam/fam.h include/fam/fam_exception.h include/fam/fam_c.h
COMPAT_CXXFLAGS := -std=c++14 $(APP_CFLAGS)
COMPAT_CFLAGS   := -std=gnu11 $(APP_CFLAGS)
COMPAT_BINS := $(COMPAT_OUT)/fam_compat_test $(COMPAT_OUT)/fam_compat_init_test $(COMPAT_OUT)/fam_c_test

# Every run gets a fresh store and no outside configuration; COMPAT_RUN_ID
# (the recipe shell's pid) is shared by the PEs of one famrun job.
COMPAT_ENV = env -u OPENFAM_ROOT -u OPENFAM_SERVER \
	OPENFAM_DATA_DIR=$(COMPAT_RUN)/data OPENFAM_SHM_DIR=$(COMPAT_RUN)/shm \
	OPENFAM_BACKUP_DIR=$(COMPAT_RUN)/backup TMPDIR=$(COMPAT_RUN)/tmp COMPAT_RUN_ID=$$$$

$(COMPAT_OUT)/fam_compat_test: $(COMPAT_SRC)/fam_compat_test.cpp $(COMPAT_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(COMPAT_CXXFLAGS) -o $@ $< -lgtest $(APP_LDFLAGS)

$(COMPAT_OUT)/fam_compat_init_test: $(COMPAT_SRC)/fam_compat_init_test.cpp $(COMPAT_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(COMPAT_CXXFLAGS) -o $@ $< -lgtest $(APP_LDFLAGS)

$(COMPAT_OUT)/fam_c_test: $(COMPAT_SRC)/fam_c_test.c $(COMPAT_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(COMPAT_CFLAGS) -o $@ $< $(APP_LDFLAGS)

.PHONY: test-compat verify-compat
test-compat: $(COMPAT_BINS) famd famrun ## OpenFAM 3.2 compatibility suites (C++ and C API), single-PE and under famrun -n 2
	rm -rf $(COMPAT_RUN) && mkdir -p $(COMPAT_RUN)/data $(COMPAT_RUN)/shm $(COMPAT_RUN)/backup $(COMPAT_RUN)/tmp
	$(COMPAT_ENV) $(COMPAT_OUT)/fam_compat_test
	$(COMPAT_ENV) $(COMPAT_OUT)/fam_compat_init_test
	$(COMPAT_ENV) $(COMPAT_OUT)/fam_c_test
	@echo "$(BINDIR)/famrun -n 2 (compat suites)"
	$(COMPAT_ENV) $(BINDIR)/famrun -n 2 $(COMPAT_OUT)/fam_compat_test
	$(COMPAT_ENV) $(BINDIR)/famrun -n 2 $(COMPAT_OUT)/fam_c_test

# Needs no library: the headers compile alone in C and C++, the suites
# compile with the warning flags, and fam_c.c defines exactly the functions
# fam_c.h declares.
verify-compat: ## compile-check the OpenFAM compatibility headers, suites and fam_c.c
	@mkdir -p $(COMPAT_OUT)
	$(CC) -std=c11 $(APP_CFLAGS) -fsyntax-only -x c include/fam/fam_c.h
	$(CXX) $(COMPAT_CXXFLAGS) -fsyntax-only -x c++ include/fam/fam_c.h
	$(CXX) $(COMPAT_CXXFLAGS) -fsyntax-only $(COMPAT_SRC)/fam_compat_test.cpp
	$(CXX) $(COMPAT_CXXFLAGS) -fsyntax-only $(COMPAT_SRC)/fam_compat_init_test.cpp
	$(CC) $(COMPAT_CFLAGS) -fsyntax-only $(COMPAT_SRC)/fam_c_test.c
	$(CC) $(COMPAT_CFLAGS) -c capi/fam_c.c -o $(COMPAT_OUT)/fam_c.o
	@sed -n 's/^[^#/ ].*[ *]\(c_fam_[a-z0-9_]*\)(.*/\1/p' include/fam/fam_c.h | sort > $(COMPAT_OUT)/declared.txt
	@nm $(COMPAT_OUT)/fam_c.o | awk '$$2 == "T" { print $$3 }' | sort > $(COMPAT_OUT)/defined.txt
	@diff $(COMPAT_OUT)/declared.txt $(COMPAT_OUT)/defined.txt && echo "fam_c.c: $$(wc -l < $(COMPAT_OUT)/defined.txt) c_fam_* functions, as declared"

TEST_TARGETS   += test-compat
VERIFY_TARGETS += verify-compat
DEPS_APT       += libgtest-dev

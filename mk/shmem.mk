# OpenSHMEM 1.5 on FAM (shmem/, include/shmem*.h): the layer is compiled
# into libopenfam.so.0 by `lib` (capi/shmem_*.c include shmem/*.c, so one
# Go runtime serves both APIs); here: its generated sources, the oshcc,
# oshc++ and oshrun (shmemrun) wrappers, the openfam-shmem pkg-config file,
# their installation, and the core's own smoke tests.

SHMEM_GEN_SRC  := $(wildcard shmem/gen/*.go shmem/gen/templates/*.tmpl)
SHMEM_TOOLS    := $(BINDIR)/oshcc $(BINDIR)/oshc++ $(BINDIR)/oshrun $(BINDIR)/shmemrun
SHMEM_PC       := $(LIBDIR)/pkgconfig/openfam-shmem.pc
SHMEM_CORE_SRC := $(wildcard shmem/tests/core/*.c)
SHMEM_CORE_BIN := $(patsubst shmem/tests/core/%.c,$(BUILD)/shmem-core/%,$(SHMEM_CORE_SRC))

ALL_TARGETS    += shmem
TEST_TARGETS   += test-shmem-core
VERIFY_TARGETS += verify-shmem

.PHONY: shmem shmem-gen verify-shmem test-shmem-core

shmem: lib famd famrun $(SHMEM_TOOLS) $(SHMEM_PC) ## OpenSHMEM: the library plus oshcc, oshc++, oshrun, shmemrun and openfam-shmem.pc

shmem-gen: ## regenerate the typed OpenSHMEM routines (go run ./shmem/gen)
	$(GO) run ./shmem/gen

# Every file the generator writes is regenerated under a temp dir and
# compared with the committed one.
verify-shmem: ## check that the generated OpenSHMEM sources are current
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(GO) run ./shmem/gen -o $$tmp && \
	cd $$tmp && n=0 && for f in $$(find . -type f | sort); do \
	  n=$$((n + 1)); \
	  cmp -s $$f $(CURDIR)/$$f || { echo "verify-shmem: $${f#./} is not what shmem/gen writes (run make shmem-gen)"; \
	    diff -u $(CURDIR)/$$f $$f | head -20; exit 1; }; done && \
	echo "verify-shmem: $$n generated files up to date"

# sed_wrapper(name, compiler, env var, incdir, libdir): oshcc/oshc++ from
# their template.
define sed_wrapper
sed -e 's|@NAME@|$(1)|g' -e 's|@COMPILER@|$(2)|g' -e 's|@ENVVAR@|$(3)|g' -e 's|@INCDIR@|$(4)|g' \
    -e 's|@LIBDIR@|$(5)|g' -e 's|@VERSION@|$(OPENFAM_VERSION)|g' shmem/scripts/oshcc.in
endef

$(BINDIR)/oshcc: shmem/scripts/oshcc.in $(VERSION_STAMP)
	@mkdir -p $(@D)
	$(call sed_wrapper,oshcc,$(CC),OSHMEM_CC,$(CURDIR)/include,$(ABS_LIBDIR)) > $@ && chmod 0755 $@

$(BINDIR)/oshc++: shmem/scripts/oshcc.in $(VERSION_STAMP)
	@mkdir -p $(@D)
	$(call sed_wrapper,oshc++,$(CXX),OSHMEM_CXX,$(CURDIR)/include,$(ABS_LIBDIR)) > $@ && chmod 0755 $@

$(BINDIR)/oshrun: shmem/scripts/oshrun
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(BINDIR)/shmemrun: | $(BINDIR)/oshrun
	ln -sf oshrun $@

# write_shmem_pc(file, prefix, libdir, includedir)
define write_shmem_pc
printf '%s\n' 'prefix=$(2)' 'libdir=$(3)' 'includedir=$(4)' '' \
  'Name: openfam-shmem' \
  'Description: OpenSHMEM 1.5 on OpenFAM (Go implementation)' \
  'Version: $(LIB_VERSION)' \
  'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lopenfam' \
  'Libs.private: -lpthread' \
  'Cflags: -I$${includedir}' > $(1)
endef

$(SHMEM_PC): mk/shmem.mk VERSION
	@mkdir -p $(@D)
	$(call write_shmem_pc,$@,$(CURDIR),$(ABS_LIBDIR),$(CURDIR)/include)

# make install: the wrappers with the installed paths, the launcher and
# the pkg-config file (mk/install.mk lists $(SHMEM_INSTALL_LIST)).
$(INST_DIR)/oshcc $(INST_DIR)/oshc++ $(INST_DIR)/openfam-shmem.pc: shmem/scripts/oshcc.in mk/shmem.mk $(VERSION_STAMP)
	@mkdir -p $(INST_DIR)
	$(call sed_wrapper,oshcc,$(CC),OSHMEM_CC,$(PREFIX)/include,$(PREFIX)/lib) > $(INST_DIR)/oshcc
	$(call sed_wrapper,oshc++,$(CXX),OSHMEM_CXX,$(PREFIX)/include,$(PREFIX)/lib) > $(INST_DIR)/oshc++
	$(call write_shmem_pc,$(INST_DIR)/openfam-shmem.pc,$(PREFIX),$${prefix}/lib,$${prefix}/include)

define SHMEM_INSTALL_LIST
0755 $(INST_DIR)/oshcc bin/oshcc
0755 $(INST_DIR)/oshc++ bin/oshc++
0755 shmem/scripts/oshrun bin/oshrun
link oshrun bin/shmemrun
0644 $(INST_DIR)/openfam-shmem.pc lib/pkgconfig/openfam-shmem.pc
endef

# The install paths depend on PREFIX: made afresh for every install.
install: shmem-install-files
.PHONY: shmem-install-files
shmem-install-files:
	@rm -f $(INST_DIR)/oshcc $(INST_DIR)/oshc++ $(INST_DIR)/openfam-shmem.pc
	@$(MAKE) --no-print-directory $(INST_DIR)/oshcc

# ---- the core's smoke tests ----------------------------------------------------------

$(BUILD)/shmem-core/%: shmem/tests/core/%.c $(wildcard include/shmem*.h) $(C_LIB_DEP) | $(BINDIR)/oshcc lib
	@mkdir -p $(@D)
	$(BINDIR)/oshcc -std=c11 -pedantic -Wall -Wextra -Werror -g -O2 -o $@ $<

# Each program under oshrun -np 2 and -np 4 (mapped heaps: famd passes the
# items' descriptors), then -np 2 and 3 with --servers 2 (items striped over
# two memory servers: fam_map refuses them, private mode and the FAM data
# path serve), with a 1.5 MiB heap (heap.c checks the limit); then the
# misuses of bad_input.c, each of which must end the job.
test-shmem-core: shmem $(SHMEM_CORE_BIN) ## OpenSHMEM core smoke tests (shmem/tests/core) under oshrun -np 2 and 4, and on memory servers
	@for t in $(filter-out %/bad_input,$(SHMEM_CORE_BIN)); do for a in "-np 2" "-np 4" "-np 2 --servers 2" "-np 3 --servers 2"; do \
	  echo "== SHMEM_SYMMETRIC_SIZE=1.5M oshrun $$a $$t"; \
	  SHMEM_SYMMETRIC_SIZE=1.5M env -u OPENFAM_SERVER $(BINDIR)/oshrun $$a --timeout 120s $$t || exit 1; done; done
	@echo "== $(BUILD)/shmem-core/stale (a singleton, no launcher, on a private store)"
	@store=$$(mktemp -d); OPENFAM_DATA_DIR=$$store OPENFAM_SHM_DIR=$$store/shm OPENFAM_BACKUP_DIR=$$store/backups \
	  env -u OPENFAM_SERVER $(BUILD)/shmem-core/stale; rc=$$?; rm -rf $$store; [ $$rc -eq 0 ]
	@echo "== shmem/tests/core/bad_input.sh"
	@env -u OPENFAM_SERVER -u SHMEM_SYMMETRIC_SIZE -u SMA_SYMMETRIC_SIZE sh shmem/tests/core/bad_input.sh $(BINDIR)/oshrun $(BUILD)/shmem-core/bad_input

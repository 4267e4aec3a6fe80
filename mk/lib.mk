# libopenfam.so.0: the native C library (include/openfam.h) built from capi/
# with the Go core inside, its pkg-config file, the exported
# symbol check and the C-level tests of the handle table.

LIB_LINK    := $(LIBDIR)/libopenfam.so
LIB_PC      := $(LIBDIR)/pkgconfig/openfam.pc
LIB_MAP     := capi/libopenfam.map
LIB_SOURCES := $(shell find core capi shmem -path capi/testdata -prune -o -path shmem/tests -prune -o -path shmem/examples -prune -o -path shmem/bench -prune -o -path shmem/gen -prune -o \( -name '*.go' -o -name '*.c' -o -name '*.h' \) -print) \
               $(wildcard include/*.h include/fam/*.h) go.mod go.sum $(LIB_MAP)
LIB_VERSION := $(VERSION_BASE)
# C sources capi/*.c include from outside capi/.
LIB_C_EXTERNAL := $(sort $(wildcard include/*.h include/fam/*.h shmem/*.c shmem/*.h))
# The soname is set here because Go's linker does not set one for c-shared.
# The version script exports only the public API, hiding the Go runtime,
# cgo's glue and the private ofam_* functions.
LIB_LDFLAGS := -extldflags '-Wl,-soname,libopenfam.so.0 -Wl,--version-script=$(CURDIR)/$(LIB_MAP)'
LIB_TESTS   := $(addprefix $(BUILD)/capi-tests/,smoke handles atomics environ finalize_race fork_before_init persist)

ALL_TARGETS    += lib
TEST_TARGETS   += test-capi
VERIFY_TARGETS += verify-symbols

.PHONY: lib test-capi verify-symbols

lib: $(LIB) $(LIB_LINK) $(LIB_PC) ## build build/lib/libopenfam.so.0 (+ .so link and pkg-config file)

$(LIB): $(LIB_SOURCES)
	@mkdir -p $(@D)
	@# go build leaves an output it thinks current in place, and it does not
	@# track the version script: a changed map alone would not relink.
	@rm -f $@
	@# Go's build cache keys a cgo package on the files in its directory, not
	@# on the files they #include from elsewhere (include/, shmem/): a hash of
	@# those in CGO_CFLAGS (part of the key) makes a change to them rebuild.
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -DOFAM_SRC_HASH=$$(cat $(LIB_C_EXTERNAL) | sha256sum | cut -c1-16)" $(GO) build -buildmode=c-shared -ldflags "$(LIB_LDFLAGS)" -o $@ ./capi/lib
	@# cgo's header for the library is not an interface: openfam.h is.
	@rm -f $(LIBDIR)/libopenfam.so.h $(LIBDIR)/libopenfam.h

$(LIB_LINK): | $(LIB)
	ln -sf libopenfam.so.0 $@

# write_pc(file, prefix, libdir, includedir): writes a pkg-config file.
define write_pc
printf '%s\n' 'prefix=$(2)' 'libdir=$(3)' 'includedir=$(4)' '' \
  'Name: openfam' \
  'Description: OpenFAM fabric-attached memory programming interface (Go implementation)' \
  'Version: $(LIB_VERSION)' \
  'Libs: -L$${libdir} -lopenfam' \
  'Libs.private: -lpthread' \
  'Cflags: -I$${includedir}' > $(1)
endef

# The build-tree file points at the build tree, so programs can use
# PKG_CONFIG_PATH=build/lib/pkgconfig before anything is installed.
$(LIB_PC): mk/lib.mk VERSION
	@mkdir -p $(@D)
	$(call write_pc,$@,$(CURDIR),$(ABS_LIBDIR),$(CURDIR)/include)

# Installation (make install, uninstall) is in mk/install.mk.

# Public names outside the fam_/shmem_ prefixes: OpenSHMEM's pre-1.2
# routines and the constant pointers its SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED
# and SHMEM_CTX_DEFAULT are.
SHMEM_EXTRA_EXPORTS := shmemi_team_world_ptr|shmemi_team_shared_ptr|shmemi_ctx_default_ptr|start_pes|_my_pe|_num_pes|shmalloc|shfree|shmemalign|shrealloc

# Every exported symbol is public API, and every function openfam.h declares
# is exported.
verify-symbols: $(LIB) ## check that the library exports exactly the public API names
	@nm -D --defined-only $(LIB) | awk '{print $$NF}' | sort -u > $(BUILD)/lib-exports.txt
	@bad=$$(grep -Ev '^(fam_|c_fam_|shmem_)' $(BUILD)/lib-exports.txt | grep -Evx '$(SHMEM_EXTRA_EXPORTS)'); \
	if [ -n "$$bad" ]; then echo "non-API symbols exported by $(LIB):"; echo "$$bad"; exit 1; fi
	@grep -oE '\bfam_[a-z0-9_]+[[:space:]]*\(' include/openfam.h | sed 's/[[:space:](]//g' | sort -u > $(BUILD)/lib-declared.txt
	@missing=$$(comm -23 $(BUILD)/lib-declared.txt $(BUILD)/lib-exports.txt); \
	if [ -n "$$missing" ]; then echo "declared in openfam.h but not exported:"; echo "$$missing"; exit 1; fi
	@# Declarations only: not the C11 generic forms (macros: #define
	@# lines) nor comments.
	@cat include/shmem.h include/shmem-typed.h include/shmem-coll.h include/shmem-coll-typed.h | grep -v '^#' | grep -Ev '^[[:space:]]*(/\*|\*)' | grep -oE '\b(shmem_[a-z0-9_]+|start_pes|_my_pe|_num_pes|shmalloc|shfree|shmemalign|shrealloc)\(' | tr -d '(' | sort -u > $(BUILD)/lib-shmem-declared.txt
	@missing=$$(comm -23 $(BUILD)/lib-shmem-declared.txt $(BUILD)/lib-exports.txt); \
	if [ -n "$$missing" ]; then echo "declared in include/shmem*.h but not exported:"; echo "$$missing"; exit 1; fi
	@readelf -d $(LIB) | grep -q 'SONAME.*\[libopenfam.so.0\]' || { echo "$(LIB): soname is not libopenfam.so.0"; exit 1; }
	@echo "verify-symbols: $$(wc -l < $(BUILD)/lib-exports.txt) exported symbols, all public; all $$(wc -l < $(BUILD)/lib-declared.txt) openfam.h and $$(wc -l < $(BUILD)/lib-shmem-declared.txt) shmem*.h functions present"

$(BUILD)/capi-tests/%: capi/testdata/%.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

# The Go unit tests of the handle table, then the C programs on a fresh store.
test-capi: $(LIB_TESTS) famd ## handle table and C smoke tests of libopenfam
	$(GO) test -race -count=1 ./capi/
	@for t in $(LIB_TESTS); do echo "== $$t"; store=$$(mktemp -d); \
	  OPENFAM_DATA_DIR=$$store OPENFAM_SHM_DIR=$$store/shm OPENFAM_BACKUP_DIR=$$store/backups \
	    env -u OPENFAM_SERVER $$t; rc=$$?; rm -rf $$store; [ $$rc -eq 0 ] || exit $$rc; done
	@# The finalize race again with items mapped from descriptors famd passes.
	@echo "== $(BUILD)/capi-tests/finalize_race $(BINDIR)/famd"; \
	  env -u OPENFAM_SERVER $(BUILD)/capi-tests/finalize_race $(BINDIR)/famd

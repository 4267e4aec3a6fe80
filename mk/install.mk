# make install / make uninstall under PREFIX (and DESTDIR): the library, its
# headers, pkg-config file and CMake package configuration, the tools, and
# their man pages, which are built here from docs/man/*.md, and famd's
# systemd unit, tmpfiles.d and sysusers.d entries (dist/systemd). A manifest under
# PREFIX/share/openfam lets uninstall remove exactly what install put there
# (mk/install.sh).
#
# Installed programs find libopenfam.so.0 without LD_LIBRARY_PATH: fambench
# is linked again for the install with a run path relative to itself
# ($ORIGIN/../lib), so it uses the library beside it wherever PREFIX is,
# never the build tree's.

MAN_SRC     := $(wildcard docs/man/*.md)
MAN_PAGES   := $(patsubst docs/man/%.md,$(BUILD)/man/%,$(MAN_SRC))
INST_DIR    := $(BUILD)/install
INST_BENCH  := $(INST_DIR)/fambench
CMAKE_VER   := $(INST_DIR)/OpenFAMConfigVersion.cmake

ALL_TARGETS  += man
TEST_TARGETS += test-install
# cmake for the test's find_package(OpenFAM) project; groff renders the man
# pages there (man-db's man is not needed).
DEPS_APT     += cmake groff-base

.PHONY: install uninstall man test-install

man: $(MAN_PAGES) ## build the man pages (build/man) from docs/man/*.md

# The pages carry the stamped version, so they are remade when it changes.
$(BUILD)/man/%: docs/man/%.md docs/man/md2man.py $(VERSION_STAMP)
	@mkdir -p $(@D)
	python3 docs/man/md2man.py --version '$(OPENFAM_VERSION)' $< $@

$(INST_BENCH): cmd/fambench/fambench.c include/openfam.h $(LIB) $(VERSION_STAMP)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(VERSION_CFLAGS) -o $@ $< -L$(ABS_LIBDIR) -lopenfam -Wl,-rpath,'$$ORIGIN/../lib' -lpthread

$(CMAKE_VER): cmake/OpenFAMConfigVersion.cmake.in VERSION
	@mkdir -p $(@D)
	sed 's/@VERSION@/$(LIB_VERSION)/g' $< > $@

# What install puts where (relative to PREFIX), one entry a line for
# mk/install.sh: MODE SRC DEST, or link TARGET DEST.
define INSTALL_LIST
0755 $(LIB) lib/libopenfam.so.0
link libopenfam.so.0 lib/libopenfam.so
$(foreach h,$(wildcard include/*.h include/fam/*.h),0644 $(h) $(h)
)0644 $(INST_DIR)/openfam.pc lib/pkgconfig/openfam.pc
0644 cmake/OpenFAMConfig.cmake lib/cmake/OpenFAM/OpenFAMConfig.cmake
0644 $(CMAKE_VER) lib/cmake/OpenFAM/OpenFAMConfigVersion.cmake
$(foreach t,famd famrun famctl,0755 $(BINDIR)/$(t) bin/$(t)
)0755 $(INST_BENCH) bin/fambench
$(foreach p,$(MAN_PAGES),0644 $(p) share/man/man$(subst .,,$(suffix $(p)))/$(notdir $(p))
)0644 $(INST_DIR)/famd.service lib/systemd/system/famd.service
0644 dist/systemd/famd.tmpfiles.conf lib/tmpfiles.d/openfam.conf
0644 dist/systemd/famd.sysusers.conf lib/sysusers.d/openfam.conf
$(SHMEM_INSTALL_LIST)
endef
export INSTALL_LIST

install: lib famd famrun famctl $(INST_BENCH) $(CMAKE_VER) man ## install library, headers, pkg-config and CMake files, tools, man pages under PREFIX (and DESTDIR)
	@# The pkg-config file names PREFIX itself (not DESTDIR), so it is made
	@# for each install.
	@$(call write_pc,$(INST_DIR)/openfam.pc,$(PREFIX),$${prefix}/lib,$${prefix}/include)
	@# So is the systemd unit, which runs PREFIX/bin/famd.
	@sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/systemd/famd.service > $(INST_DIR)/famd.service
	@printf '%s\n' "$$INSTALL_LIST" | sh mk/install.sh install '$(DESTDIR)$(PREFIX)'

uninstall: ## remove what make install put under PREFIX (and DESTDIR), by its manifest
	@sh mk/install.sh uninstall '$(DESTDIR)$(PREFIX)'

test-install: lib famd famrun famctl ## install into a temp PREFIX; check --version, man pages, pkg-config and CMake builds, uninstall
	python3 docs/man/md2man_test.py -q
	@MAKE='$(MAKE)' CC='$(CC)' CXX='$(CXX)' OPENFAM_VERSION='$(OPENFAM_VERSION)' tests/install-test.sh

# OpenFAM in Go: top-level entry points. `make help` lists them.
#
# Each area adds its own targets in mk/<area>.mk and appends to the lists
# below, so areas do not edit each other's rules.

GO       ?= go
CC       ?= gcc
CXX      ?= g++
PREFIX   ?= /usr/local
BUILD    := build
LIBDIR   := $(BUILD)/lib
BINDIR   := $(BUILD)/bin
LIB      := $(LIBDIR)/libopenfam.so.0
ABS_LIBDIR := $(abspath $(LIBDIR))

# Flags for C and C++ programs that use the library from the build tree.
APP_CFLAGS   := -I$(CURDIR)/include -Wall -Wextra -Werror -g -O2
APP_LDFLAGS  := -L$(ABS_LIBDIR) -lopenfam -Wl,-rpath,$(ABS_LIBDIR) -lpthread

ALL_TARGETS    :=
TEST_TARGETS   :=
VERIFY_TARGETS :=
DEMO_TARGETS   :=
CLEAN_PATHS    := $(BUILD)
# Debian packages and PyPI packages the tests need; `make deps` installs them.
DEPS_APT       :=
DEPS_PIP       :=

include $(sort $(wildcard mk/*.mk))

.DEFAULT_GOAL := all
.PHONY: all test verify demo deps clean help install

all: $(ALL_TARGETS) ## build the library, headers, tools and examples

test: $(TEST_TARGETS) ## run every test suite

verify: $(VERIFY_TARGETS) ## formatting, vet, generated files, exported symbols

demo: $(DEMO_TARGETS) ## run the demo on the embedded default (no daemon)

deps: ## install the Debian and PyPI packages the tests need (needs root)
	@if [ -n "$(strip $(DEPS_APT))" ]; then \
	  missing=""; for p in $(DEPS_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi; fi
	@if [ -n "$(strip $(DEPS_PIP))" ]; then python3 -m pip install -q $(DEPS_PIP); fi

clean: ## remove build outputs
	rm -rf $(CLEAN_PATHS)

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sort -u | \
	  awk 'BEGIN {FS = ":.*## "} {printf "  %-18s %s\n", $$1, $$2}'

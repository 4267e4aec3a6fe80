# Scale series (issue "Scale"; a benchmark, not part of test): famscale on
# the embedded store and through famd at growing item counts, famd restart
# with the largest count, many regions, many clients of one famd, and an
# oversubscribed famrun job. Sizes: SCALE_ITEMS, SCALE_FAMD_ITEMS,
# SCALE_OPS, SCALE_REGIONS, SCALE_CONNS, SCALE_NPES; SCALE_CPU=1 times the
# operations in CPU time instead of wall time (for a busy machine).

FAMSCALE := $(BINDIR)/famscale
SCALE_ITEMS      ?= 1000,10000,100000,1000000
SCALE_FAMD_ITEMS ?= 1000,10000,100000
SCALE_OPS        ?= 1000
SCALE_REGIONS    ?= 10000
SCALE_CONNS      ?= 256
SCALE_NPES       ?= 64
SCALE_CPU        ?=

ALL_TARGETS += $(FAMSCALE)

.PHONY: bench-scale

$(FAMSCALE): tests/scale/famscale.c include/openfam.h $(C_LIB_DEP) $(VERSION_STAMP) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(VERSION_CFLAGS) -o $@ $< $(APP_LDFLAGS)

bench-scale: $(FAMSCALE) $(MULTIPE) famd famrun ## per-operation cost at 1e3..1e6 items (embedded and famd), famd restart, 10k regions, 256 clients, famrun -n 64
	CPU=$(SCALE_CPU) ITEMS=$(SCALE_ITEMS) FAMD_ITEMS=$(SCALE_FAMD_ITEMS) OPS=$(SCALE_OPS) REGIONS=$(SCALE_REGIONS) \
	  CONNS=$(SCALE_CONNS) NPES=$(SCALE_NPES) tests/scale/scale-bench.sh $(BINDIR) $(MULTIPE)

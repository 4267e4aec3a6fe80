# The applications of the OpenFAM papers (bindings/c/apps): SpMV and
# PageRank over FAM, run by famrun, and rmatgen, the synthetic R-MAT input
# generator whose FAMCSR files the Python spmv example reads too.
#
# test-apps checks both against their serial computations (--check) on
# small inputs: a generated R-MAT matrix, a symmetric Matrix Market file and
# an edge list with a dangling vertex, alone (embedded store), under
# famrun -n 1, 2, 3 and 4, and with two memory servers (--servers 2),
# interleaving on and off; damaged inputs are refused with a reason and
# status 2. Small on purpose: seconds on a busy machine.

APPS_DIR   := $(BUILD)/apps
APPS       := $(APPS_DIR)/spmv $(APPS_DIR)/pagerank $(APPS_DIR)/rmatgen
APPS_HDRS  := bindings/c/apps/famapp.h include/openfam.h
APPS_DATA  := bindings/c/apps/testdata

ALL_TARGETS  += apps
TEST_TARGETS += test-apps

.PHONY: apps test-apps

apps: $(APPS) ## build the SpMV and PageRank applications and rmatgen into build/apps/

$(APPS_DIR)/%: bindings/c/apps/%.c $(APPS_HDRS) $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

# Each line: famrun arguments | app arguments. Every run ends in the app's
# own comparison with a serial computation (exit 1 on a mismatch).
test-apps: $(APPS) famd famrun ## SpMV and PageRank against serial computations under famrun -n 1/2/3/4 and --servers 2
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(APPS_DIR)/rmatgen --scale 8 --edge-factor 8 --seed 3 -o $$tmp/rmat.famcsr; \
	echo "== rmatgen: the same arguments give the same file, another seed another"; \
	$(APPS_DIR)/rmatgen --scale 8 --edge-factor 8 --seed 3 -o $$tmp/again.famcsr >/dev/null; \
	cmp $$tmp/rmat.famcsr $$tmp/again.famcsr; \
	$(APPS_DIR)/rmatgen --scale 8 --edge-factor 8 --seed 4 -o $$tmp/other.famcsr >/dev/null; \
	! cmp -s $$tmp/rmat.famcsr $$tmp/other.famcsr; \
	$(APPS_DIR)/rmatgen --convert $(APPS_DATA)/small.mtx -o $$tmp/small.famcsr >/dev/null; \
	for app in spmv pagerank; do \
	  echo "== $$app alone (embedded store)"; \
	  OPENFAM_DATA_DIR=$$tmp/store OPENFAM_SHM_DIR=$$tmp/shm OPENFAM_BACKUP_DIR=$$tmp/backups \
	    env -u OPENFAM_SERVER $(APPS_DIR)/$$app --input $$tmp/rmat.famcsr --check; \
	  for run in "-n 1|--input $$tmp/rmat.famcsr" \
	             "-n 2|--scale 7 --edge-factor 4 --seed 9 --group 16" \
	             "-n 3|--input $$tmp/rmat.famcsr --group 10" \
	             "-n 3|--input $(APPS_DATA)/small.mtx --group 2" \
	             "-n 2|--input $(APPS_DATA)/graph.edges --group 3" \
	             "-n 4|--input $$tmp/rmat.famcsr --group 5" \
	             "-n 4 --servers 2|--input $(APPS_DATA)/small.mtx" \
	             "-n 2|--input $$tmp/small.famcsr" \
	             "-n 2 --servers 2|--input $$tmp/rmat.famcsr --group 32" \
	             "-n 3 --servers 2|--input $$tmp/rmat.famcsr --interleave off" \
	             "-n 3 --servers 2|--input $(APPS_DATA)/graph.edges --group 1"; do \
	    fr=$${run%%|*}; args=$${run#*|}; \
	    echo "== famrun $$fr $$app $$args"; \
	    env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE $(BINDIR)/famrun $$fr --timeout 120s \
	      $(APPS_DIR)/$$app $$args --check; \
	  done; \
	done; \
	head -c 100 $$tmp/rmat.famcsr > $$tmp/cut.famcsr; \
	for app in spmv pagerank; do \
	  for bad in $$tmp/cut.famcsr $(APPS_DATA)/bad-row.mtx $(APPS_DATA)/bad.edges $$tmp/missing; do \
	    echo "== famrun -n 2 $$app --input $$bad: refused with status 2"; \
	    rc=0; env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE $(BINDIR)/famrun -n 2 --timeout 120s \
	      $(APPS_DIR)/$$app --input $$bad 2>$$tmp/err || rc=$$?; \
	    grep "^$$app: $$bad: " $$tmp/err || { cat $$tmp/err; echo "no reason given"; exit 1; }; \
	    [ $$rc = 2 ] || { echo "status $$rc, want 2"; exit 1; }; \
	  done; \
	done; \
	echo "apps: SpMV and PageRank match their serial computations and refuse bad inputs"

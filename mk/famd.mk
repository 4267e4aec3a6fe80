# famd: the control-plane protocol (gRPC code generated from spec/proto),
# the daemon and its server packages.
#
# protoc comes from Debian; the Go plugins are pinned in go.mod as tools
# and run through `go tool` (`go tool -n` builds one and prints its path for
# protoc's --plugin), so the generated files depend only on go.mod and the
# Debian protoc version.

PROTO_SRC := spec/proto/openfam/v1/fam.proto
PROTO_OUT := spec/proto/openfamv1
FAMD_PKGS := ./core/rpc/ ./core/embed/ ./cmd/famd/

DEPS_APT += protobuf-compiler
# MUNGE (famd --auth munge): the tests start a private munged with its own
# key and socket, and skip with a reason when these are missing. Neither
# famd nor libopenfam.so links libmunge: it is loaded at run time.
DEPS_APT += munge libmunge2

# $(call protoc-gen,OUTDIR): one shell command generating the Go and gRPC
# code of PROTO_SRC into OUTDIR/openfamv1.
protoc-gen = protoc -I spec/proto \
  --plugin=protoc-gen-go=$$($(GO) tool -n protoc-gen-go) \
  --plugin=protoc-gen-go-grpc=$$($(GO) tool -n protoc-gen-go-grpc) \
  --go_out=$(1) --go_opt=module=github.com/gofam/openfam/spec/proto \
  --go-grpc_out=$(1) --go-grpc_opt=module=github.com/gofam/openfam/spec/proto \
  $(PROTO_SRC)

.PHONY: proto verify-proto famd test-famd

proto: ## regenerate spec/proto/openfamv1 from the .proto files
	mkdir -p $(PROTO_OUT)
	$(call protoc-gen,spec/proto)

verify-proto: ## regenerate the gRPC code into a temp dir and diff with the committed files
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(call protoc-gen,$$tmp) && \
	diff -r $$tmp/openfamv1 $(PROTO_OUT) && echo "verify-proto: generated code is up to date"

famd: ## build the famd daemon into build/bin
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BINDIR)/famd ./cmd/famd

test-famd: ## famd, its gRPC server and the in-process daemon (race detector on)
	$(GO) test -race -count=1 $(FAMD_PKGS)

ALL_TARGETS    += famd
TEST_TARGETS   += test-famd
VERIFY_TARGETS += verify-proto

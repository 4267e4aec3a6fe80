# Go core: unit tests with the race detector, formatting and vet.

GO_PKGS := ./core/... ./internal/...

.PHONY: test-go verify-go bench-go
test-go: ## Go unit tests of the core and shared internal packages (race detector on; the allocation counts without it)
	$(GO) test -race -count=1 $(GO_PKGS)
	$(GO) test -count=1 -run 'TestRemoteSmallOpsAllocate|TestSmallCallsAllocateNothing' ./core/ ./core/transport/

verify-go: ## gofmt and go vet over every Go package
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench-go: ## Go micro-benchmarks of the core packages (the 64 MiB striped series: 10 gets each; the libfabric ones are make bench-fabric)
	$(GO) test -run '^$$' -bench . -benchtime 20000x $$($(GO) list ./core/... | grep -v -e /core/embed -e /core/fabric)
	$(GO) test -run '^$$' -bench . -benchtime 10x ./core/embed/

TEST_TARGETS   += test-go
VERIFY_TARGETS += verify-go

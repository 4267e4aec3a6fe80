package features

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/fabric"
)

// The data plane is the contract's third axis (issue 15), beside the
// backend (Go, C ABI) and the mode (embedded, famd, @striping on memory
// servers): with -provider NAME every famd a scenario starts runs that
// data plane (famd --provider) and the scenario's programs insist on it
// (OPENFAM_PROVIDER), so the famd-backed scenarios (unix and TCP, famd
// restarts, revocations, @striping with memory servers) move their bytes
// over libfabric. Scenarios that start no famd do not involve the data
// plane: in that mode they are skipped, and counted as such in the
// summary line. make test-features-ofi runs the axis on libfabric's
// software providers.
//
//	go test ./features/ -run TestFeatures -args -provider='tcp;ofi_rxm'
var providerFlag = flag.String("provider", "", "run the famd-backed scenarios with every famd on this data-plane provider\n(famd --provider; the programs get OPENFAM_PROVIDER): tcp or a libfabric provider such as \"tcp;ofi_rxm\"")

// onProvider counts the scenarios that ran on a famd of -provider, and
// skipped those that start none.
var onProvider, offProvider atomic.Int64

// providerMode reports whether the scenarios run with -provider.
func providerMode() bool { return *providerFlag != "" }

// checkProvider fails the test, naming the provider and libfabric's
// reason, when -provider cannot be opened on this host: a provider that
// is not there must not pass as a run of nothing.
func checkProvider(t *testing.T) {
	onProvider.Store(0)
	offProvider.Store(0)
	p := *providerFlag
	if p == "" || embed.IsTCP(p) {
		return
	}
	ep, err := fabric.Open(p, fabric.Options{Node: "127.0.0.1"})
	if err != nil {
		t.Fatalf("features[provider %s]: the provider is unavailable on this host: %v (fi_info -l lists libfabric's providers; make setup installs libfabric1 and libfabric-bin)", p, err)
	}
	ep.Close()
}

// providerSummary is the line a run with -provider adds to its log.
func providerSummary(name string) string {
	return fmt.Sprintf("features[%s, provider %s]: %d famd-backed scenarios ran on it; %d scenarios start no famd and were skipped (the data plane is not involved)",
		name, *providerFlag, onProvider.Load(), offProvider.Load())
}

// startsFamd reports whether a scenario starts a famd (its data plane is
// then the provider's).
func startsFamd(s *godog.Scenario) bool {
	for _, st := range s.Steps {
		if strings.Contains(st.Text, "famd") {
			return true
		}
	}
	return false
}

// providerBefore runs before each scenario in -provider mode: scenarios
// without a famd are skipped; the others' programs get OPENFAM_PROVIDER.
func providerBefore(ctx context.Context, s *godog.Scenario) (context.Context, error) {
	if !providerMode() {
		return ctx, nil
	}
	if !startsFamd(s) {
		offProvider.Add(1)
		return ctx, godog.ErrSkip
	}
	onProvider.Add(1)
	os.Setenv("OPENFAM_PROVIDER", *providerFlag)
	return ctx, nil
}

// famdProvider is the provider every famd a scenario starts runs ("" is
// famd's default, tcp).
func famdProvider() string { return *providerFlag }

// countable reports whether a passed scenario counts as run: in -provider
// mode those that start no famd were skipped.
func countable(s *godog.Scenario) bool { return !providerMode() || startsFamd(s) }

// removeShmRegions removes the shared-memory regions of libfabric's shm
// provider that process pid, now gone, left in /dev/shm: shm names them
// "PID:DOMAIN:ENDPOINT" and unlinks them when the endpoint closes, which a
// famd killed with SIGKILL never does (16 MiB of tmpfs each, about 30 a
// run). Nothing is done on other providers.
func removeShmRegions(pid int) {
	if !strings.EqualFold(strings.TrimSpace(famdProvider()), "shm") {
		return
	}
	names, _ := filepath.Glob("/dev/shm/" + strconv.Itoa(pid) + ":*")
	for _, n := range names {
		os.Remove(n)
	}
}

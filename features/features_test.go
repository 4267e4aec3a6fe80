// Package features runs the executable specification of OpenFAM's API: the
// Gherkin scenarios in *.feature, through godog, against two backends (the
// Go core, and the C ABI of include/openfam.h linked into this test binary).
//
//	go test ./features/                          both backends
//	go test ./features/ -args -backend=capi      one backend
//	go test ./features/ -args -godog.tags=@atomics -godog.format=pretty
package features

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cucumber/godog"
	messages "github.com/cucumber/messages/go/v21"
)

var (
	backendFlag = flag.String("backend", "", "run the scenarios on one backend only: go or capi (default both)")
	tagsFlag    = flag.String("godog.tags", "~@wip", "godog tag expression selecting scenarios")
	formatFlag  = flag.String("godog.format", "progress", "godog output format (progress, pretty, ...)")
)

// areaCounts counts passed scenarios by their area tag.
type areaCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *areaCounts) add(tags []*messages.PickleTag) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	for _, t := range tags {
		if areas[t.Name] {
			a.n[t.Name]++
		}
	}
}

func (a *areaCounts) String() string {
	var parts []string
	total := 0
	for tag, n := range a.n {
		parts = append(parts, fmt.Sprintf("%s=%d", tag, n))
		total += n
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d scenarios passed: %s", total, strings.Join(parts, " "))
}

// areas are the tags naming a feature file's area; every feature carries
// exactly one (TestFeatureInventory checks).
var areas = map[string]bool{"@regions": true, "@items": true, "@permissions": true, "@getput": true,
	"@gather_scatter": true, "@atomics": true, "@ordering_contexts": true, "@persistence": true,
	"@errors": true, "@backup_restore": true, "@launcher": true, "@striping": true,
	"@redundancy": true}

func run(t *testing.T, name string, newBackend func() Backend, tags string) {
	if *backendFlag != "" && *backendFlag != name {
		t.Skipf("-backend=%s", *backendFlag)
	}
	checkProvider(t) // provider_test.go
	paths, err := filepath.Glob("*.feature")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no feature files: %v", err)
	}
	var counts areaCounts
	suite := godog.TestSuite{
		Name:                "openfam-" + name,
		ScenarioInitializer: scenarioInit(newBackend, &counts),
		Options: &godog.Options{Format: *formatFlag, Paths: paths, Strict: true, NoColors: true,
			TestingT: t, Tags: tags, Output: os.Stdout},
	}
	if suite.Run() != 0 {
		t.Errorf("%s backend: scenarios failed", name)
	}
	t.Logf("features[%s]: %s", name, counts.String())
	if providerMode() {
		t.Log(providerSummary(name))
	}
}

// TestFeaturesGo runs every scenario against package core.
func TestFeaturesGo(t *testing.T) {
	run(t, "go", func() Backend { return newGoBackend() }, *tagsFlag)
}

// TestFeaturesCABI runs every scenario against the C functions of
// openfam.h, except those tagged @go-only: they need a second identity in
// one process, which the process-wide C instance cannot have.
func TestFeaturesCABI(t *testing.T) {
	run(t, "capi", func() Backend { return newCBackend() }, *tagsFlag+"&&~@go-only")
}

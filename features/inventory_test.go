package features

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"
)

// TestFeatureInventory checks the shape of the specification and reports
// its size: each feature file opens with a prose description, carries
// exactly the area tag named after the file, and gives every scenario a
// concrete title. It logs the scenario count per area (outline rows
// counted one by one) and the @wip count, which the README's status table
// quotes (make features-wip-count prints them).
func TestFeatureInventory(t *testing.T) {
	paths, err := filepath.Glob("*.feature")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no feature files: %v", err)
	}
	total, wip := map[string]int{}, map[string]int{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := gherkin.ParseGherkinDocument(f, (&messages.Incrementing{}).NewId)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		feat := doc.Feature
		area := "@" + strings.TrimSuffix(p, ".feature")
		if feat == nil || len(strings.Fields(feat.Description)) < 30 {
			t.Errorf("%s: the feature must open with a prose specification of at least 30 words", p)
			continue
		}
		if len(feat.Tags) != 1 || feat.Tags[0].Name != area || !areas[area] {
			t.Errorf("%s: the feature must carry exactly the area tag %s", p, area)
		}
		pickles := gherkin.Pickles(*doc, p, (&messages.Incrementing{}).NewId)
		for _, pk := range pickles {
			if strings.TrimSpace(pk.Name) == "" || strings.Contains(pk.Name, "<") {
				t.Errorf("%s: scenario %q has no concrete title", p, pk.Name)
			}
			total[area]++
			for _, tag := range pk.Tags {
				if tag.Name == "@wip" {
					wip[area]++
				}
			}
		}
	}
	var lines []string
	all, allWip := 0, 0
	for a, n := range total {
		lines = append(lines, fmt.Sprintf("%-20s %4d scenarios, %d @wip", a, n, wip[a]))
		all += n
		allWip += wip[a]
	}
	sort.Strings(lines)
	for _, l := range lines {
		t.Log("inventory: " + l)
	}
	t.Logf("inventory: total %d scenarios, %d @wip (excluded from the runs)", all, allWip)
}

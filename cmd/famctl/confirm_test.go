package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gofam/openfam/internal/testutil"
)

// fakeConsole makes famctl see a terminal (or none) with answer typed on it,
// and returns what famctl prompted.
func fakeConsole(t *testing.T, tty bool, answer string) *bytes.Buffer {
	t.Helper()
	saved := console
	t.Cleanup(func() { console = saved })
	var prompt bytes.Buffer
	console.in = strings.NewReader(answer)
	console.out = &prompt
	console.isTTY = func() bool { return tty }
	return &prompt
}

// TestDestroyRegionConfirmation: destroy-region destroys only after "yes"
// typed on a terminal or --yes; without a terminal it refuses with exit 2.
func TestDestroyRegionConfirmation(t *testing.T) {
	f := startFamd(t)
	f.ok(t, "create-region", "keep", "1M")
	exists := func() bool { return strings.Contains(f.ok(t, "regions"), "keep") }

	// No terminal, no --yes: refused, nothing destroyed.
	fakeConsole(t, false, "yes\n")
	_, errOut := f.fails(t, 2, "destroy-region", "keep")
	if !strings.Contains(errOut, "stdin is not a terminal") || !strings.Contains(errOut, "--yes") || !exists() {
		t.Fatalf("destroy-region without a terminal: %q (region still there: %v)", errOut, exists())
	}
	// --json does not change that.
	f.fails(t, 2, "--json", "destroy-region", "keep")

	// A terminal, answered anything but yes: nothing destroyed.
	for _, answer := range []string{"no\n", "y\n", "YES please\n", ""} {
		prompt := fakeConsole(t, true, answer)
		_, errOut := f.fails(t, 1, "destroy-region", "keep")
		if !strings.Contains(prompt.String(), "Destroy region keep") || !strings.Contains(errOut, "nothing destroyed") || !exists() {
			t.Fatalf("answer %q: prompt %q, stderr %q, region still there: %v", answer, prompt.String(), errOut, exists())
		}
	}

	// A terminal and "yes": destroyed.
	prompt := fakeConsole(t, true, "yes\n")
	if out := f.ok(t, "destroy-region", "keep"); !strings.Contains(out, "destroyed region keep") || exists() {
		t.Fatalf("destroy-region answered yes: %q; prompt %q", out, prompt.String())
	}

	// --yes with no terminal: destroyed without a prompt.
	f.ok(t, "create-region", "keep", "1M")
	prompt = fakeConsole(t, false, "")
	f.ok(t, "destroy-region", "--yes", "keep")
	if exists() || prompt.Len() != 0 {
		t.Fatalf("destroy-region --yes: region still there %v, prompt %q", exists(), prompt.String())
	}
}

// TestTableAndJSONAgree: the interleave size and the servers of a region
// read the same in the table, in stat and in --json; the server ids are
// labelled as ids and counted in a column of their own.
func TestTableAndJSONAgree(t *testing.T) {
	f := startFamd(t)
	f.ok(t, "create-region", "on", "1M")
	f.ok(t, "create-region", "off", "1M", "--no-interleave")
	var regs struct{ Regions []regionJSON }
	f.okJSON(t, &regs, "regions")
	table := f.ok(t, "regions")
	for _, j := range regs.Regions {
		row := rowFor(t, table, 1, j.Name)
		if j.InterleaveSize != 1<<20 || row[8] != fmtSize(j.InterleaveSize) {
			t.Errorf("region %s: interleave_size %d in JSON, BLOCK %q in the table (want 1M in both)", j.Name, j.InterleaveSize, row[8])
		}
		// Server 0 is the famd itself.
		if row[9] != "1" || j.ServerCount != 1 || row[10] != "0" || len(j.Servers) != 1 || j.Servers[0] != 0 {
			t.Errorf("region %s held by the famd: row %v, JSON %+v", j.Name, row, j)
		}
		st := f.ok(t, "stat", j.Name)
		if !regexp.MustCompile(`(?m)^interleave size +1M \(1048576 bytes\)$`).MatchString(st) ||
			!regexp.MustCompile(`(?m)^server count +1$`).MatchString(st) {
			t.Errorf("stat %s:\n%s", j.Name, st)
		}
		var sj regionJSON
		f.okJSON(t, &sj, "stat", j.Name)
		if sj.InterleaveSize != j.InterleaveSize {
			t.Errorf("stat --json %s: interleave_size %d, regions --json %d", j.Name, sj.InterleaveSize, j.InterleaveSize)
		}
	}
	if row := rowFor(t, table, 1, "off"); row[7] != "off" {
		t.Errorf("region off: INTERLEAVE %q", row[7])
	}
	if row := rowFor(t, table, 1, "on"); row[7] != "on" {
		t.Errorf("region on: INTERLEAVE %q", row[7])
	}
	if got := interleaveSize(0); got != 1<<20 {
		t.Errorf("a famd reporting interleave size 0 shows as %d, want fam_stat's 1MiB", got)
	}
}

// TestIsTerminal: a pipe (what a script gives famctl) is no terminal.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) {
		t.Error("a pipe is taken for a terminal")
	}
}

// TestDestroyRegionOnARealTerminal runs famctl on a pseudo-terminal (with
// script(1)) and types the answer: the terminal is recognised as one.
func TestDestroyRegionOnARealTerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) (util-linux) is not installed: no pseudo-terminal to run famctl on")
	}
	f := startFamd(t)
	f.ok(t, "create-region", "tty", "1M")
	bin := testutil.CopyExecutable(t)
	cmd := exec.Command(scriptBin, "-qec", bin+" -test.run=^$", "/dev/null")
	cmd.Env = append(os.Environ(), "FAMCTL_TEST_ARGS="+strings.Join([]string{"--server", "unix:" + f.sock, "destroy-region", "tty"}, "\x1f"))
	cmd.Stdin = strings.NewReader("yes\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("famctl destroy-region on a terminal: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Type 'yes'") || !strings.Contains(string(out), "destroyed region tty") {
		t.Errorf("famctl destroy-region on a terminal said:\n%s", out)
	}
	if strings.Contains(f.ok(t, "regions"), "tty") {
		t.Error("the region survived a confirmed destroy-region")
	}
}

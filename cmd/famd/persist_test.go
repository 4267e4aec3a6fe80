package main

import (
	"os/exec"
	"strings"
	"testing"
)

// famd refuses a bad OPENFAM_PERSIST / OPENFAM_PERSIST_INTERVAL before it
// serves anything (issue 20).
func TestBadPersistPolicyIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, env := range [][]string{{"OPENFAM_PERSIST=sometimes"}, {"OPENFAM_PERSIST=lazy", "OPENFAM_PERSIST_INTERVAL=soon"}} {
		cmd := exec.Command(famdBin, "--socket", dir+"/s", "--data-dir", dir+"/data")
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(string(out), "OPENFAM_PERSIST") {
			t.Errorf("famd with %v: %v, output %q; want a refusal naming the variable", env, err, out)
		}
	}
}

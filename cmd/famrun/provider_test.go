package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvider: --provider, or OPENFAM_PROVIDER in famrun's environment,
// starts the private famd with that provider and gives the PEs the same
// OPENFAM_PROVIDER, so one setting serves the job; without either, famd
// gets no --provider (its default, tcp) and the PEs none.
func TestProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag", nil, []string{"--provider", "sockets"}, "sockets"},
		{"environment", []string{"OPENFAM_PROVIDER=tcp;ofi_rxm"}, nil, "tcp;ofi_rxm"},
		{"flag wins", []string{"OPENFAM_PROVIDER=sockets"}, []string{"--provider", "tcp"}, "tcp"},
		{"neither", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			rec := filepath.Join(out, "record")
			env := append(append(fakeEnv("serve", tmp, rec), "OUT="+out), tc.env...)
			args := append(append([]string{"-n", "1"}, tc.args...), "--", "sh", "-c", `printf %s "$OPENFAM_PROVIDER" > "$OUT/provider"`)
			r := runFamrun(t, env, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if got := fakeRecord(t, rec)["provider"]; got != tc.want {
				t.Errorf("famd started with --provider %q, want %q", got, tc.want)
			}
			if got, _ := os.ReadFile(filepath.Join(out, "provider")); string(got) != tc.want {
				t.Errorf("the PE got OPENFAM_PROVIDER %q, want %q", got, tc.want)
			}
		})
	}
	r := runFamrun(t, []string{noFamd}, nil, "-n", "1", "--provider", "tcp ofi_rxm", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "not a provider name") {
		t.Errorf("--provider with a space: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}

// TestProviderUnavailable: a provider the host's libfabric does not have
// stops the job before any PE runs, with famd's message naming it.
func TestProviderUnavailable(t *testing.T) {
	if famdBin == "" {
		t.Skipf("cmd/famd does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	r := runFamrun(t, []string{"FAMD=" + famdBin, "TMPDIR=" + tmp, "OUT=" + out}, nil,
		"-n", "1", "--provider", "no-such-provider", "--", "sh", "-c", `touch "$OUT/ran"`)
	if r.code != 1 || !strings.Contains(r.stderr, "no-such-provider") || !strings.Contains(r.stderr, "fi_info -l") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming the provider and fi_info -l", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
		t.Error("a PE ran although famd could not start")
	}
	emptyDir(t, tmp)
}

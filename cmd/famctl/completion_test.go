package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion: the scripts parse in their shells, and bash's completes
// commands, options, subcommands and option values as it should.
func TestCompletion(t *testing.T) {
	f := &famdServer{sock: "/nonexistent"} // no famd is contacted
	dir := t.TempDir()
	bashScript := filepath.Join(dir, "famctl.bash")
	if err := os.WriteFile(bashScript, []byte(f.ok(t, "completion", "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to test the bash completion")
	}
	if out, err := exec.Command(bash, "-n", bashScript).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	// complete WORDS... prints what bash offers for the last word.
	driver := `source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _famctl
echo "${COMPREPLY[*]}"; complete -p famctl >/dev/null || echo "not registered"`
	complete := func(words ...string) string {
		t.Helper()
		cmd := exec.Command(bash, append([]string{"-c", driver, "famctl-test", bashScript}, words...)...)
		cmd.Env = append(os.Environ(), "OPENFAM_SERVER=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	all := complete("famctl", "")
	for _, c := range commands {
		if !strings.Contains(" "+all+" ", " "+c.name+" ") {
			t.Errorf("bash completion does not list command %s: %q", c.name, all)
		}
	}
	for words, want := range map[string]string{
		"famctl --server unix:/x de":       "destroy-region",
		"famctl --timeout 3s back":         "backups",
		"famctl backups ":                  "list delete",
		"famctl completion ":               "bash zsh",
		"famctl --json backups delete --y": "--yes",
		"famctl create-region --no":        "--no-interleave",
		"famctl --mo":                      "",
	} {
		w := strings.Split(words, " ")
		if got := complete(append([]string{}, w...)...); got != want {
			t.Errorf("completing %q: %q, want %q", words, got, want)
		}
	}
	if got := complete("famctl", "destroy-region", "--"); !strings.Contains(got, "--yes") || !strings.Contains(got, "--data-dir") {
		t.Errorf("options of destroy-region: %q", got)
	}

	zshScript := filepath.Join(dir, "_famctl")
	if err := os.WriteFile(zshScript, []byte(f.ok(t, "completion", "zsh")), 0o600); err != nil {
		t.Fatal(err)
	}
	if zsh, err := exec.LookPath("zsh"); err != nil {
		t.Log("zsh not installed: not checking the zsh script's syntax")
	} else {
		if out, err := exec.Command(zsh, "-n", zshScript).CombinedOutput(); err != nil {
			t.Fatalf("zsh -n: %v\n%s", err, out)
		}
		out, err := exec.Command(zsh, "-c", `autoload -U compinit && compinit -u -D && source "$1" && print -r -- $_comps[famctl]`, "x", zshScript).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "_famctl" {
			t.Errorf("zsh does not register _famctl for famctl: %v %q", err, out)
		}
	}
	f.fails(t, 2, "completion", "fish")
}

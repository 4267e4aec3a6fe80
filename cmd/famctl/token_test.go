package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gofam/openfam/core/rpc"
)

func famctl(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// famctl token new writes 64 hex digits and a newline, mode 0600, that
// famd's token reader accepts; it never overwrites a token unless told
// to, and --force replaces one (narrowing a wider mode to 0600).
func TestTokenNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cluster.token")
	code, out, errs := famctl("token", "new", p)
	if code != 0 || !strings.Contains(out, p) {
		t.Fatalf("token new: exit %d, %q %q", code, out, errs)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(b) {
		t.Fatalf("token file holds %q, want 64 hex digits and a newline", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if tok, err := rpc.ReadToken(p); err != nil || tok != strings.TrimSpace(string(b)) {
		t.Fatalf("rpc.ReadToken: %q, %v", tok, err)
	}

	code, _, errs = famctl("token", "new", p)
	if code != exitError || !strings.Contains(errs, "--force") {
		t.Fatalf("overwrite without --force: exit %d, %q", code, errs)
	}
	if b2, _ := os.ReadFile(p); !bytes.Equal(b, b2) {
		t.Fatal("the existing token was changed without --force")
	}

	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = famctl("token", "new", p, "--force", "--json")
	if code != 0 || !strings.Contains(out, `"file"`) {
		t.Fatalf("token new --force --json: exit %d, %q %q", code, out, errs)
	}
	b3, _ := os.ReadFile(p)
	if bytes.Equal(b, b3) || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(b3) {
		t.Fatalf("--force wrote %q (old %q)", b3, b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after --force %v, want 0600", st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left temporary files: %v", ents)
	}

	if code, _, errs := famctl("token", "old", p); code != exitUsage {
		t.Fatalf("token old: exit %d, %q", code, errs)
	}
	if code, _, errs := famctl("token", "new", filepath.Join(dir, "missing", "t")); code != exitError {
		t.Fatalf("token new in a missing directory: exit %d, %q", code, errs)
	}
	if code, out, _ := famctl("help", "token"); code != 0 || !strings.Contains(out, "64 hexadecimal digits") {
		t.Fatalf("help token: exit %d, %q", code, out)
	}
}

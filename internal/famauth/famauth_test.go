package famauth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadToken(write("good", "  s3cret \n", 0o600)); err != nil || tok != "s3cret" {
		t.Fatalf("ReadToken: %q %v", tok, err)
	}
	for name, p := range map[string]string{
		"group-readable": write("loose", "s3cret", 0o640),
		"empty":          write("empty", " \n", 0o600),
		"missing":        filepath.Join(dir, "none"),
	} {
		if tok, err := ReadToken(p); err == nil {
			t.Fatalf("%s token file accepted: %q", name, tok)
		}
	}
}

func TestTokenCredsCarryTokenAndIdentity(t *testing.T) {
	md, err := TokenCreds{Token: "tok", UID: 1000, GID: 100}.GetRequestMetadata(context.Background())
	if err != nil || md[MDAuthorization] != "Bearer tok" || md[MDUID] != "1000" || md[MDGID] != "100" {
		t.Fatalf("metadata %v, %v", md, err)
	}
}

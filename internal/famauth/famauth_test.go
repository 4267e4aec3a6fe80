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

// TestCallsCarryNoIdentity: what a client sends is the token (and, once
// famd gave one, the session secret); never a uid or gid of its choosing.
func TestCallsCarryNoIdentity(t *testing.T) {
	c := &Client{Token: "tok"}
	s := &session{c: c}
	md, err := perRPC{s}.GetRequestMetadata(context.Background())
	if err != nil || len(md) != 1 || md[MDAuthorization] != "Bearer tok" {
		t.Fatalf("metadata %v, %v: want the token only", md, err)
	}
	s.took(map[string][]string{MDAuthSession: {"s3ss10n"}})
	c.Mode = ModeMunge
	md, _ = perRPC{s}.GetRequestMetadata(context.Background())
	if len(md) != 3 || md[MDAuthSession] != "s3ss10n" || md[MDAuthWant] != ModeMunge {
		t.Fatalf("metadata after a handshake %v: want token, session secret and the insistence on MUNGE", md)
	}
}

// TestServerProof: a proof is bound to the token and to every field, and
// fields cannot be shifted between one another.
func TestServerProof(t *testing.T) {
	p := ServerProof("server-token", "uuid", "ctl:1", "data:2")
	if !CheckServerProof("server-token", p, "uuid", "ctl:1", "data:2") {
		t.Fatal("a proof does not check against its own fields")
	}
	for name, ok := range map[string]bool{
		"other token":   CheckServerProof("cluster-token", p, "uuid", "ctl:1", "data:2"),
		"other address": CheckServerProof("server-token", p, "uuid", "evil:1", "data:2"),
		"shifted":       CheckServerProof("server-token", p, "uuidctl:1", "", "data:2"),
		"empty proof":   CheckServerProof("server-token", "", "uuid", "ctl:1", "data:2"),
	} {
		if ok {
			t.Errorf("%s: proof accepted", name)
		}
	}
}

func TestClientFromEnv(t *testing.T) {
	t.Setenv("OPENFAM_AUTH", "kerberos")
	if _, err := ClientFromEnv("tok"); err == nil {
		t.Fatal("OPENFAM_AUTH=kerberos accepted")
	}
	t.Setenv("OPENFAM_AUTH", "TOKEN")
	if c, err := ClientFromEnv("tok"); err != nil || c.Mode != ModeToken {
		t.Fatalf("OPENFAM_AUTH=TOKEN: %+v, %v", c, err)
	}
}

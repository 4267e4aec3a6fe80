package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// offline runs famctl with --data-dir dir (and OPENFAM_SERVER unset).
func offline(t *testing.T, dir, shm string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("OPENFAM_SERVER", "")
	var so, se bytes.Buffer
	code := run(append([]string{"--data-dir", dir, "--shm-dir", shm}, args...), &so, &se)
	return code, so.String(), se.String()
}

// treeSum is a digest of every file (path, mode, content) under dir.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestOfflineDataDir: famctl --data-dir reads a famd's store after the
// famd stopped, shows what the famd showed, changes nothing in it, refuses
// commands that would change it, and says who holds the store while a
// famd or a program with the embedded store has it open.
func TestOfflineDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	shm := t.TempDir()
	d, err := embed.Start(embed.Options{DataDir: dir, ShmDir: shm})
	if err != nil {
		t.Fatal(err)
	}
	f := &famdServer{sock: d.SocketPath(), dataDir: dir}
	var vol, per regionJSON
	f.okJSON(t, &vol, "create-region", "vol", "2M", "--volatile", "--mode", "0640")
	f.okJSON(t, &per, "create-region", "per", "1M", "--persistent")
	f.allocate(t, vol.ID, "x", 4096)
	f.backup(t, per.ID, "y", "snap", 100)
	online := map[string]string{}
	for _, args := range [][]string{{"regions"}, {"items", "vol"}, {"stat", "vol"}, {"stat", "vol", "x"}, {"backups"}} {
		online[strings.Join(args, " ")] = f.ok(t, append([]string{"--json"}, args...)...)
	}

	// While famd runs: refused, naming it.
	code, _, errOut := offline(t, dir, shm, "regions")
	if code != 1 || !strings.Contains(errOut, "running famd (pid") || !strings.Contains(errOut, "--server") {
		t.Fatalf("--data-dir while famd runs: exit %d, %q", code, errOut)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	before, shmBefore := treeSum(t, dir), treeSum(t, shm)
	for args, want := range online {
		code, out, errOut := offline(t, dir, shm, append([]string{"--json"}, strings.Fields(args)...)...)
		if code != 0 {
			t.Fatalf("--data-dir %s: exit %d, %q", args, code, errOut)
		}
		if out != want {
			t.Errorf("--data-dir %s:\n%s\nfamd said:\n%s", args, out, want)
		}
	}
	if code, out, _ := offline(t, dir, shm, "regions"); code != 0 || !strings.Contains(out, "vol") || !strings.Contains(out, "per") {
		t.Errorf("--data-dir regions (table): %d %q", code, out)
	}
	// Commands that change the store: usage errors, before anything opens.
	for _, args := range [][]string{{"destroy-region", "vol", "--yes"}, {"create-region", "z", "1M"}, {"chmod", "vol", "0600"},
		{"backups", "delete", "snap", "--yes"}, {"servers"}} {
		if code, _, errOut := offline(t, dir, shm, args...); code != 2 || !strings.Contains(errOut, "read-only") {
			t.Errorf("--data-dir %v: exit %d, %q", args, code, errOut)
		}
	}
	if code, _, _ := offline(t, dir, shm, "--server", "unix:/nonexistent", "regions"); code != 2 {
		t.Errorf("--data-dir with --server: exit %d, want 2", code)
	}
	if after := treeSum(t, dir); after != before {
		t.Error("famctl --data-dir changed the data directory")
	}
	if after := treeSum(t, shm); after != shmBefore {
		t.Error("famctl --data-dir changed the volatile regions")
	}
	// A directory with no store: a clear error, and nothing created.
	empty := t.TempDir()
	if code, _, errOut := offline(t, empty, shm, "regions"); code != 1 || !strings.Contains(errOut, "holds no OpenFAM store") {
		t.Errorf("--data-dir of an empty directory: %d %q", code, errOut)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("--data-dir created %v in an empty directory", ents)
	}

	// A program with the embedded store open (no famd): refused, naming it.
	fam, err := core.Initialize(core.Options{DataDir: dir, ShmDir: shm, UID: -1, GID: -1, PECount: 1})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = offline(t, dir, shm, "regions")
	fam.Finalize()
	if code != 1 || !strings.Contains(errOut, "open in a running program") {
		t.Fatalf("--data-dir while a program has the store open: exit %d, %q", code, errOut)
	}
}

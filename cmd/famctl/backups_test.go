package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/testutil"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// A copy of this test binary run with FAMCTL_TEST_ARGS set is famctl with
// those arguments (separated by \x1f): how the tests run famctl as another
// Unix user.
func init() {
	if a, ok := os.LookupEnv("FAMCTL_TEST_ARGS"); ok {
		os.Exit(run(strings.Split(a, "\x1f"), os.Stdout, os.Stderr))
	}
}

// famctlAs runs famctl against f as uid/gid in a child process and returns
// its exit status, stdout and stderr.
func (f *famdServer) famctlAs(t *testing.T, uid, gid uint32, args ...string) (int, string, string) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(f.sock), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.CopyExecutable(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAMCTL_TEST_ARGS="+strings.Join(append([]string{"--server", "unix:" + f.sock}, args...), "\x1f"),
		"OPENFAM_SERVER=", "HOME=/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, so.String(), se.String()
}

// backup makes a backup of a new item of size bytes in region regionID
// through the control plane (famctl has no command for it).
func (f *famdServer) backup(t *testing.T, regionID uint64, item, name string, size uint64) {
	t.Helper()
	conn, err := rpc.DialUnix(f.sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := pb.NewFamClient(conn)
	r, err := c.Allocate(ctx, &pb.AllocateRequest{RegionId: regionID, Name: item, Size: size, Mode: 0o600})
	if err != nil || r.GetErr() != nil {
		t.Fatalf("allocate %s: %v %v", item, err, r.GetErr())
	}
	defer c.CloseItem(ctx, &pb.KeyRequest{Key: r.GetItem().GetKey()})
	b, err := c.Backup(ctx, &pb.BackupRequest{Key: r.GetItem().GetKey(), Name: name})
	if err != nil || b.GetErr() != nil {
		t.Fatalf("backup %s: %v %v", name, err, b.GetErr())
	}
}

// TestBackups lists and deletes backups, as their owner and (when root)
// as another Unix user, whom famd's permissions apply to.
func TestBackups(t *testing.T) {
	f := startFamd(t)
	var reg regionJSON
	f.okJSON(t, &reg, "create-region", "src", "4M", "--mode", "0700")
	f.backup(t, reg.ID, "a", "nightly", 8192)
	f.backup(t, reg.ID, "b", "weekly", 100)
	me := owner(uint32(os.Getuid()), uint32(os.Getgid()))

	out := f.ok(t, "backups")
	if h := lines(out)[0]; strings.Join(h, " ") != "NAME SIZE MODE OWNER CREATED" {
		t.Errorf("backups header %v", h)
	}
	if row := rowFor(t, out, 0, "nightly"); row[1] != "8K" || row[2] != "0700" || row[3] != me {
		t.Errorf("backups row for nightly: %v", row)
	}
	var bs struct{ Backups []backupJSON }
	f.okJSON(t, &bs, "backups")
	if len(bs.Backups) != 2 || bs.Backups[0].Name != "nightly" || bs.Backups[0].Size != 8192 || bs.Backups[0].Mode != "0700" ||
		bs.Backups[0].UID != uint32(os.Getuid()) || bs.Backups[0].Owner != me || bs.Backups[1].Name != "weekly" {
		t.Errorf("backups --json: %+v", bs)
	} else if _, err := time.Parse(time.RFC3339, bs.Backups[0].Created); err != nil {
		t.Errorf("backups --json created %q: %v", bs.Backups[0].Created, err)
	}
	f.okJSON(t, &bs, "backups", "list", "week")
	if len(bs.Backups) != 1 || bs.Backups[0].Name != "weekly" {
		t.Errorf("backups list week --json: %+v", bs)
	}

	// Usage errors.
	f.fails(t, 2, "backups", "frob")
	f.fails(t, 2, "backups", "delete")

	// No terminal, no --yes: refused, nothing deleted.
	fakeConsole(t, false, "")
	if _, errOut := f.fails(t, 2, "backups", "delete", "nightly"); !strings.Contains(errOut, "--yes") {
		t.Errorf("backups delete without a terminal: %q", errOut)
	}
	// A terminal and "no": nothing deleted.
	prompt := fakeConsole(t, true, "no\n")
	f.fails(t, 1, "backups", "delete", "nightly")
	if !strings.Contains(prompt.String(), "backup nightly (8K") || !strings.Contains(f.ok(t, "backups"), "nightly") {
		t.Errorf("backups delete answered no: prompt %q, backups now\n%s", prompt.String(), f.ok(t, "backups"))
	}

	if os.Getuid() == 0 {
		// nobody cannot see root's 0700 backups (a backup keeps the mode that governed its item: the region's), nor delete them.
		code, out, errOut := f.famctlAs(t, 65534, 65534, "--json", "backups")
		if code != 0 || strings.Contains(out, "nightly") || strings.Contains(out, "weekly") {
			t.Errorf("backups as nobody: exit %d, %q %q", code, out, errOut)
		}
		code, _, errOut = f.famctlAs(t, 65534, 65534, "backups", "delete", "--yes", "nightly")
		if code != 1 || !strings.Contains(errOut, "FAM_ENOPERM") {
			t.Errorf("backups delete as nobody: exit %d, %q", code, errOut)
		}
		if !strings.Contains(f.ok(t, "backups"), "nightly") {
			t.Fatal("nobody deleted root's backup")
		}
	} else {
		t.Log("not root: skipping the second-user checks (they run famctl as nobody)")
	}

	// --yes: deleted.
	if out := f.ok(t, "backups", "delete", "nightly", "--yes"); !strings.Contains(out, "deleted backup nightly") {
		t.Errorf("backups delete --yes said %q", out)
	}
	f.okJSON(t, &bs, "backups")
	if len(bs.Backups) != 1 || bs.Backups[0].Name != "weekly" {
		t.Errorf("backups after deleting nightly: %+v", bs)
	}
	if _, errOut := f.fails(t, 1, "backups", "delete", "nightly", "--yes"); !strings.Contains(errOut, "FAM_EBACKUPNOTFOUND") {
		t.Errorf("deleting a deleted backup: %q", errOut)
	}
}

func TestParseBackupList(t *testing.T) {
	bs, err := parseBackupList("two words 10 0644 1 2 2026-01-02T03:04:05Z\n")
	if err != nil || len(bs) != 1 || bs[0].Name != "two words" || bs[0].Size != 10 || bs[0].Mode != "0644" || bs[0].GID != 2 {
		t.Errorf("parseBackupList: %+v, %v", bs, err)
	}
	if _, err := parseBackupList("x 10 0644 1 2\n"); err == nil {
		t.Error("a line without its created time parsed")
	}
}

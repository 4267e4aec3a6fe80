package rpc_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The stranger helper of TestBackupPermissionsThroughFamd runs as
// another Unix user; it is dispatched here rather than in TestMain so
// that this file stands alone.
func init() {
	switch os.Getenv("FAMD_TEST_HELPER") {
	case "backup-stranger":
		os.Exit(backupStranger())
	case "backup-member":
		os.Exit(backupMember())
	}
}

// runAs runs this test binary's helper as uid/gid against the famd at
// sock and returns what it printed.
func runAs(t *testing.T, helper, sock string, uid, gid uint32) string {
	t.Helper()
	if err := os.Chmod(dirOf(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyExecutable(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAMD_TEST_HELPER="+helper, "FAMD_SOCK="+sock, "HOME=/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper %s: %v\n%s", helper, err, out)
	}
	return string(out)
}

// TestBackupPermissionsThroughFamd repeats issue 11's backup attack
// through famd with a real second Unix user (nobody, 65534), whom famd
// knows from the kernel's peer credentials: root backs up a 0600 item of
// a 0700 region, and nobody must not list, restore, delete or take over
// that backup. Needs root to run the helper as nobody.
func TestBackupPermissionsThroughFamd(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another Unix user (nobody)")
	}
	d, _ := start(t, embed.Options{})
	owner := famdClient(t, d.SocketPath())
	secret := []byte("root's secret")
	vault, err := owner.CreateRegion("vault", 1<<16, 0o700, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := vault.Allocate("doc", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Default().Put(secret, doc, 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, "backup", func() (*core.Wait, error) { return owner.Backup(doc, "secret") })

	out := runAs(t, "backup-stranger", d.SocketPath(), 65534, 65534)
	want := fmt.Sprintf("uid=65534 list=%q restore=%d restore_region=%d delete=%d takeover=%d own=ok\n",
		"own-backup", core.CodeNoPerm, core.CodeNoPerm, core.CodeNoPerm, core.CodeExists)
	if out != want {
		t.Fatalf("helper said\n%q, want\n%q", out, want)
	}

	// The backup is root's, untouched, and nobody's own backup is
	// nobody's: root (owner class of nothing there) sees it only through
	// its mode, 0700 for nobody's region, so not at all.
	text, err := owner.ListBackups("")
	if err != nil || !strings.HasPrefix(text, "secret 64 0700 0 0 ") || strings.Contains(text, "own-backup") {
		t.Fatalf("root lists %q (%v)", text, err)
	}
	back, err := vault.Allocate("back", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, "restore", func() (*core.Wait, error) { return owner.Restore("secret", back) })
	buf := make([]byte, len(secret))
	if err := owner.Default().Get(buf, back, 0); err != nil || !bytes.Equal(buf, secret) {
		t.Fatalf("root restored %q (%v)", buf, err)
	}

	// famd's archive: a 0700 directory of 0600 files.
	dir := filepath.Join(d.DataDir(), "backups")
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "secret.fambackup"): 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
}

// TestGroupBackupThroughFamd: a real user of the owner's group (nobody,
// run with root's gid) reads a backup of a 0750 region through famd, which
// takes the gid from the kernel too, but may not delete it. Needs root.
func TestGroupBackupThroughFamd(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another Unix user (nobody)")
	}
	d, _ := start(t, embed.Options{})
	owner := famdClient(t, d.SocketPath())
	_, gid := owner.Identity()
	team, err := owner.CreateRegion("team", 1<<16, 0o750, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := team.Allocate("notes", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Default().Put([]byte("for the team"), notes, 0); err != nil {
		t.Fatal(err)
	}
	waitDone(t, "backup", func() (*core.Wait, error) { return owner.Backup(notes, "team-notes") })
	out := runAs(t, "backup-member", d.SocketPath(), 65534, gid)
	want := fmt.Sprintf("list=%q read=%q delete=%d\n", "team-notes", "for the team", core.CodeNoPerm)
	if out != want {
		t.Fatalf("helper said\n%q, want\n%q", out, want)
	}
	if text, err := owner.ListBackups("team"); err != nil || !strings.HasPrefix(text, "team-notes ") {
		t.Fatalf("the owner lists %q (%v) after the member's refused delete", text, err)
	}
}

// backupMember runs as a member of root's group: it lists, restores root's
// group-readable backup into an item of its own and tries to delete it.
func backupMember() int {
	o := core.DefaultOptions()
	o.Server, o.PEID, o.PECount, o.Timeout = "unix:"+os.Getenv("FAMD_SOCK"), 0, 1, 20*time.Second
	f, err := core.Initialize(o)
	if err != nil {
		fmt.Println("Initialize:", err)
		return 1
	}
	defer f.Finalize()
	text, err := f.ListBackups("")
	if err != nil {
		fmt.Println("ListBackups:", err)
		return 1
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l != "" {
			names = append(names, strings.Fields(l)[0])
		}
	}
	r, err := f.CreateRegion("members", 1<<16, 0o700, core.RegionAttr{})
	if err != nil {
		fmt.Println("CreateRegion:", err)
		return 1
	}
	w, it, err := f.RestoreNew("team-notes", r, "copy", 0o600)
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		fmt.Println("RestoreNew:", err)
		return 1
	}
	buf := make([]byte, 12)
	if err := f.Default().Get(buf, it, 0); err != nil {
		fmt.Println("Get:", err)
		return 1
	}
	fmt.Printf("list=%q read=%q delete=%d\n", strings.Join(names, ","), buf, code(f.DeleteBackup("team-notes")))
	return 0
}

// famdClient initializes a core instance served by the famd at sock.
func famdClient(t *testing.T, sock string) *core.Fam {
	t.Helper()
	o := core.DefaultOptions()
	o.Server, o.PEID, o.PECount, o.Timeout = "unix:"+sock, 0, 1, 20*time.Second
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatalf("Initialize against famd: %v", err)
	}
	t.Cleanup(func() { f.Finalize() })
	return f
}

func waitDone(t *testing.T, what string, start func() (*core.Wait, error)) {
	t.Helper()
	w, err := start()
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// code returns the FAM code of a call that starts a wait: its own error,
// else the wait's.
func code(w *core.Wait, err error) core.Code {
	if err == nil {
		err = w.Wait()
	}
	return core.CodeOf(err)
}

// backupStranger runs as nobody against root's famd: it makes a region,
// item and backup of its own, then tries root's backup "secret" every
// way, and prints what happened.
func backupStranger() int {
	o := core.DefaultOptions()
	o.Server, o.PEID, o.PECount, o.Timeout = "unix:"+os.Getenv("FAMD_SOCK"), 0, 1, 20*time.Second
	f, err := core.Initialize(o)
	if err != nil {
		fmt.Println("Initialize:", err)
		return 1
	}
	defer f.Finalize()
	r, err := f.CreateRegion("strangers", 1<<16, 0o700, core.RegionAttr{})
	if err != nil {
		fmt.Println("CreateRegion:", err)
		return 1
	}
	it, err := r.Allocate("mine", 64, 0o600)
	if err != nil {
		fmt.Println("Allocate:", err)
		return 1
	}
	if c := code(f.Backup(it, "own-backup")); c != 0 {
		fmt.Println("own backup: code", c)
		return 1
	}
	text, err := f.ListBackups("")
	if err != nil {
		fmt.Println("ListBackups:", err)
		return 1
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l != "" {
			names = append(names, strings.Fields(l)[0])
		}
	}
	restore := code(f.Restore("secret", it))
	buf := make([]byte, 13)
	if err := f.Default().Get(buf, it, 0); err != nil || !bytes.Equal(buf, make([]byte, 13)) {
		fmt.Printf("own item holds %q after a refused restore (%v)\n", buf, err)
		return 1
	}
	w, _, err := f.RestoreNew("secret", r, "stolen", 0o600)
	restoreRegion := code(w, err)
	del := code(f.DeleteBackup("secret"))
	takeover := code(f.Backup(it, "secret"))
	uid, _ := f.Identity()
	fmt.Printf("uid=%d list=%q restore=%d restore_region=%d delete=%d takeover=%d own=ok\n",
		uid, strings.Join(names, ","), restore, restoreRegion, del, takeover)
	return 0
}

// TestFamdRefusesBadModesAndNames sends what a client library would
// refuse straight to famd: famd validates modes and names itself.
func TestFamdRefusesBadModesAndNames(t *testing.T) {
	_, c := start(t, embed.Options{})
	r := createRegion(t, c, "ok", 1<<16, 0o600)
	for _, m := range []uint32{0o1000, 0o4777, 0o100600, 0xffffffff} {
		what := fmt.Sprintf("mode %#o", m)
		rep := check(c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: "bad", Size: 4096, Mode: m}))
		rep.code(t, "CreateRegion "+what, core.CodeInvalid)
		if !strings.Contains(rep.rep.GetErr().GetMsg(), fmt.Sprintf("%#o", m)) {
			t.Fatalf("CreateRegion %s: message %q does not name the mode", what, rep.rep.GetErr().GetMsg())
		}
		check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "bad", Size: 64, Mode: m})).code(t, "Allocate "+what, core.CodeInvalid)
		check(c.ChangeRegionPermissions(ctx(t), &pb.ChangeRegionPermissionsRequest{Id: r.GetId(), Mode: m})).code(t, "ChangeRegionPermissions "+what, core.CodeInvalid)
		check(c.RestoreNew(ctx(t), &pb.RestoreNewRequest{Name: "any", RegionId: r.GetId(), ItemName: "bad", Mode: m})).code(t, "RestoreNew "+what, core.CodeInvalid)
	}
	item := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "item", Size: 64, Mode: 0o640})).ok(t, "Allocate").GetItem()
	check(c.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: item.GetKey(), Mode: 0o2640})).code(t, "ChangeItemPermissions", core.CodeInvalid)
	for _, n := range []string{".", "..", "a/b", "x\x00y", "bell\x07", "del\x7f"} {
		what := fmt.Sprintf("name %q", n)
		check(c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: n, Size: 4096, Mode: 0o600})).code(t, "CreateRegion "+what, core.CodeInvalid)
		check(c.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: n})).code(t, "LookupRegion "+what, core.CodeInvalid)
		check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: n, Size: 64, Mode: 0o600})).code(t, "Allocate "+what, core.CodeInvalid)
		check(c.Backup(ctx(t), &pb.BackupRequest{Key: item.GetKey(), Name: n})).code(t, "Backup "+what, core.CodeInvalid)
		check(c.Restore(ctx(t), &pb.RestoreRequest{Key: item.GetKey(), Name: n})).code(t, "Restore "+what, core.CodeInvalid)
		check(c.DeleteBackup(ctx(t), &pb.BackupNameRequest{Name: n})).code(t, "DeleteBackup "+what, core.CodeInvalid)
		check(c.RestoreNew(ctx(t), &pb.RestoreNewRequest{Name: n, RegionId: r.GetId(), ItemName: "x", Mode: 0o600})).code(t, "RestoreNew "+what, core.CodeInvalid)
	}
	lr := check(c.ListRegions(ctx(t), &pb.ListRegionsRequest{})).ok(t, "ListRegions")
	if n := len(lr.GetRegions()); n != 1 {
		t.Fatalf("%d regions after refused creations, want 1", n)
	}
}

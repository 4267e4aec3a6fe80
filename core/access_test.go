package core

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// backupNames returns the names fam_list_backup shows f for prefix.
func backupNames(t *testing.T, f *Fam, prefix string) []string {
	t.Helper()
	text, err := f.ListBackups(prefix)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l != "" {
			names = append(names, strings.Fields(l)[0])
		}
	}
	return names
}

func waitOK(t *testing.T, w *Wait, err error) {
	t.Helper()
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestBackupsFollowTheirSourcesPermissions is the attack of issue 11 point
// 4 against the embedded core: another user must not list, restore (and
// so read), delete or take over the name of a backup of a 0600 item in a
// 0700 region.
func TestBackupsFollowTheirSourcesPermissions(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	defer f.Finalize()
	_, mygid := f.Identity()
	secret := []byte("owner's secret")

	vault, err := f.CreateRegion("vault", 1<<16, 0o700, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := vault.Allocate("doc", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Put(secret, doc, 0); err != nil {
		t.Fatal(err)
	}
	w, err := f.Backup(doc, "secret")
	waitOK(t, w, err)

	// The stranger has a region and item of its own to restore into.
	other := f.As(7000, mygid+1)
	mine, err := other.CreateRegion("strangers", 1<<16, 0o700, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	target, err := mine.Allocate("target", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}

	if got := backupNames(t, other, ""); len(got) != 0 {
		t.Fatalf("a stranger lists %v", got)
	}
	if got := backupNames(t, f, ""); len(got) != 1 || got[0] != "secret" {
		t.Fatalf("the owner lists %v", got)
	}
	_, err = other.Restore("secret", target)
	wantCode(t, err, CodeNoPerm)
	buf := make([]byte, len(secret))
	if err := other.Default().Get(buf, target, 0); err != nil || !bytes.Equal(buf, make([]byte, len(secret))) {
		t.Fatalf("the stranger's item holds %q (%v) after a refused restore", buf, err)
	}
	_, _, err = other.RestoreNew("secret", mine, "stolen", 0o600)
	wantCode(t, err, CodeNoPerm)
	_, err = other.Lookup("stolen", "strangers")
	wantCode(t, err, CodeNotFound)
	_, err = other.DeleteBackup("secret")
	wantCode(t, err, CodeNoPerm)
	// Taking over the name: a backup of the stranger's own item under the
	// owner's backup name fails and leaves the owner's backup alone.
	_, err = other.Backup(target, "secret")
	wantCode(t, err, CodeExists)

	back, err := vault.Allocate("back", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w, err = f.Restore("secret", back)
	waitOK(t, w, err)
	if err := f.Default().Get(buf, back, 0); err != nil || !bytes.Equal(buf, secret) {
		t.Fatalf("the owner restored %q (%v), want %q", buf, err, secret)
	}

	// Files 0600 in a 0700 directory.
	for p, want := range map[string]os.FileMode{o.BackupDir: 0o700, filepath.Join(o.BackupDir, "secret.fambackup"): 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}

	// The owner deletes; then the name is free for the stranger.
	w, err = f.DeleteBackup("secret")
	waitOK(t, w, err)
	w, err = other.Backup(target, "secret")
	waitOK(t, w, err)
	if got := backupNames(t, f, ""); len(got) != 0 {
		t.Fatalf("the stranger's 0700 backup is listed to its region's outsider: %v", got)
	}
}

// TestBackupModeClasses checks the classes of a backup's recorded mode:
// the group reads what the group could read, deleting needs ownership or
// write, and the recorded mode is the one that governed the item.
func TestBackupModeClasses(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	me, mygid := f.Identity()
	member := f.As(7001, mygid)
	stranger := f.As(7002, mygid+1)

	// Region-level permissions (the default): the region's 0750 governs,
	// not the item's own 0666.
	team, _ := f.CreateRegion("team", 1<<16, 0o750, RegionAttr{})
	notes, _ := team.Allocate("notes", 64, 0o666)
	f.Default().Put([]byte("for the team"), notes, 0)
	w, err := f.Backup(notes, "team-notes")
	waitOK(t, w, err)
	text, _ := f.ListBackups("team-notes")
	if want := fmt.Sprintf("team-notes 64 0750 %d %d ", me, mygid); !strings.HasPrefix(text, want) {
		t.Fatalf("listing %q, want it to start %q", text, want)
	}
	if got := backupNames(t, member, ""); len(got) != 1 {
		t.Fatalf("a group member lists %v", got)
	}
	if got := backupNames(t, stranger, ""); len(got) != 0 {
		t.Fatalf("a stranger lists %v", got)
	}
	memberRegion, _ := member.CreateRegion("member-own", 1<<16, 0o700, RegionAttr{})
	into, _ := memberRegion.Allocate("into", 64, 0o600)
	w, err = member.Restore("team-notes", into)
	waitOK(t, w, err)
	buf := make([]byte, 12)
	member.Default().Get(buf, into, 0)
	if string(buf) != "for the team" {
		t.Fatalf("member restored %q", buf)
	}
	_, err = member.DeleteBackup("team-notes") // r-x for the group: no write
	wantCode(t, err, CodeNoPerm)

	// Data item-level permissions: the item's own mode governs.
	perItem, _ := f.CreateRegion("open", 1<<16, 0o777, RegionAttr{PermLevel: PermDataItem})
	priv, _ := perItem.Allocate("priv", 64, 0o600)
	shared, _ := perItem.Allocate("shared", 64, 0o666)
	w, err = f.Backup(priv, "priv")
	waitOK(t, w, err)
	w, err = f.Backup(shared, "shared")
	waitOK(t, w, err)
	if got := backupNames(t, stranger, ""); len(got) != 1 || got[0] != "shared" {
		t.Fatalf("a stranger lists %v, want only [shared]", got)
	}
	// Write permission on a backup lets a non-owner delete it.
	w, err = stranger.DeleteBackup("shared")
	waitOK(t, w, err)
	_, err = stranger.DeleteBackup("priv")
	wantCode(t, err, CodeNoPerm)
}

// TestLegacyBackupHeader: a backup written before headers carried a
// version is treated as owned by the backup file's owner with mode 0600,
// whatever owner and mode it recorded.
func TestLegacyBackupHeader(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	defer f.Finalize()
	me, mygid := f.Identity()
	if err := os.MkdirAll(o.BackupDir, 0o700); err != nil {
		t.Fatal(err)
	}
	hdr, _ := json.Marshal(map[string]any{"name": "old", "size": 5, "mode": 0o666, "uid": 7003, "gid": 7003, "item": "x", "created": 1})
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(hdr)))
	data := append(append(append([]byte(backupMagic), n[:]...), hdr...), "hello"...)
	if err := os.WriteFile(filepath.Join(o.BackupDir, "old.fambackup"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	text, _ := f.ListBackups("old")
	if want := fmt.Sprintf("old 5 0600 %d %d ", me, mygid); !strings.HasPrefix(text, want) {
		t.Fatalf("listing %q, want it to start %q", text, want)
	}
	recorded := f.As(7003, 7003)
	if got := backupNames(t, recorded, ""); len(got) != 0 {
		t.Fatalf("the uid an old header names lists %v", got)
	}
	_, err := recorded.DeleteBackup("old")
	wantCode(t, err, CodeNoPerm)
	r, _ := f.CreateRegion("r", 1<<16, 0o600, RegionAttr{})
	w, it, err := f.RestoreNew("old", r, "restored", 0o600)
	waitOK(t, w, err)
	buf := make([]byte, 5)
	f.Default().Get(buf, it, 0)
	if string(buf) != "hello" {
		t.Fatalf("restored %q", buf)
	}
}

// TestModesOutsideRWXAreRefused: every call taking a mode refuses bits
// outside 0777 with CodeInvalid and a message naming the value, and
// changes nothing.
func TestModesOutsideRWXAreRefused(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("r", 1<<16, 0o640, RegionAttr{PermLevel: PermDataItem})
	it, _ := r.Allocate("it", 64, 0o640)
	w, err := f.Backup(it, "bk")
	waitOK(t, w, err)
	for _, m := range []uint32{0o1000, 0o1777, 0o4755, 0o2600, 0o100644, 0xffffffff} {
		name := fmt.Sprintf("%#o", m)
		check := func(what string, err error) {
			t.Helper()
			wantCode(t, err, CodeInvalid)
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("%s with mode %s: message %q does not name the mode", what, name, err)
			}
		}
		_, err := f.CreateRegion("bad", 4096, m, RegionAttr{})
		check("CreateRegion", err)
		_, err = r.Allocate("bad", 64, m)
		check("Allocate", err)
		check("Region.ChangePermissions", r.ChangePermissions(m))
		check("Item.ChangePermissions", it.ChangePermissions(m))
		_, _, err = f.RestoreNew("bk", r, "bad", m)
		check("RestoreNew", err)
	}
	_, err = f.LookupRegion("bad")
	wantCode(t, err, CodeNotFound)
	_, err = f.Lookup("bad", "r")
	wantCode(t, err, CodeNotFound)
	if st, _ := r.Stat(); st.Mode != 0o640 {
		t.Fatalf("region mode %#o after refused changes", st.Mode)
	}
	if st, _ := it.Stat(); st.Mode != 0o640 {
		t.Fatalf("item mode %#o after refused changes", st.Mode)
	}
	for _, m := range []uint32{0, 0o7, 0o777} {
		if err := it.ChangePermissions(m); err != nil {
			t.Fatalf("mode %#o: %v", m, err)
		}
	}
}

// TestPathLikeNamesAreRefused: region, item and backup names that look
// like paths or carry control characters fail with CodeInvalid.
func TestPathLikeNamesAreRefused(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("r", 1<<16, 0o600, RegionAttr{})
	it, _ := r.Allocate("it", 64, 0o600)
	w, err := f.Backup(it, "bk")
	waitOK(t, w, err)
	for _, n := range []string{".", "..", "/", "a/b", "../x", "nul\x00", "tab\t", "nl\n", "\x1b[0m", "del\x7f"} {
		_, err = f.CreateRegion(n, 4096, 0o600, RegionAttr{})
		wantCode(t, err, CodeInvalid)
		_, err = f.LookupRegion(n)
		wantCode(t, err, CodeInvalid)
		_, err = r.Allocate(n, 64, 0o600)
		wantCode(t, err, CodeInvalid)
		_, err = f.Lookup(n, "r")
		wantCode(t, err, CodeInvalid)
		_, err = f.Lookup("it", n)
		wantCode(t, err, CodeInvalid)
		_, err = f.Backup(it, n)
		wantCode(t, err, CodeInvalid)
		_, err = f.Restore(n, it)
		wantCode(t, err, CodeInvalid)
		_, err = f.DeleteBackup(n)
		wantCode(t, err, CodeInvalid)
		_, _, err = f.RestoreNew(n, r, "x", 0o600)
		wantCode(t, err, CodeInvalid)
		_, _, err = f.RestoreNew("bk", r, n, 0o600)
		wantCode(t, err, CodeInvalid)
	}
	for _, n := range []string{"...", ".hidden", "a.b", "r\u00e9gion", strings.Repeat("x", NameMax)} {
		reg, err := f.CreateRegion(n, 4096, 0o600, RegionAttr{})
		if err != nil {
			t.Fatalf("name %q: %v", n, err)
		}
		reg.Destroy()
	}
}

// TestNonOwnerWithWriteDestroysAndResizes pins issue 11 point 5: as in
// OpenFAM, destroying and resizing a region need write permission, not
// ownership; without it both are refused and change nothing.
func TestNonOwnerWithWriteDestroysAndResizes(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	_, mygid := f.Identity()
	for _, tc := range []struct {
		mode  uint32
		who   *Fam
		write bool
	}{
		{0o606, f.As(7010, mygid+1), true},  // other class w
		{0o660, f.As(7011, mygid), true},    // group class w
		{0o644, f.As(7012, mygid+1), false}, // read only
		{0o640, f.As(7013, mygid), false},   // group read only
	} {
		name := fmt.Sprintf("shared-%o", tc.mode)
		if _, err := f.CreateRegion(name, 1<<16, tc.mode, RegionAttr{}); err != nil {
			t.Fatal(err)
		}
		h, err := tc.who.LookupRegion(name)
		if err != nil {
			t.Fatal(err)
		}
		err = h.Resize(1 << 17)
		if !tc.write {
			wantCode(t, err, CodeNoPerm)
			wantCode(t, h.Destroy(), CodeNoPerm)
			if r, err := f.LookupRegion(name); err != nil {
				t.Fatalf("region %s gone after refused destroy: %v", name, err)
			} else if st, _ := r.Stat(); st.Size != 1<<16 {
				t.Fatalf("region %s resized to %d by a refused call", name, st.Size)
			}
			continue
		}
		if err != nil {
			t.Fatalf("mode %#o: non-owner resize: %v", tc.mode, err)
		}
		if st, _ := h.Stat(); st.Size != 1<<17 {
			t.Fatalf("size %d after resize", st.Size)
		}
		if err := h.Destroy(); err != nil {
			t.Fatalf("mode %#o: non-owner destroy: %v", tc.mode, err)
		}
		_, err = f.LookupRegion(name)
		wantCode(t, err, CodeNotFound)
	}
}

package features

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
)

// Steps in which another user owns something the scenario's own instance
// then tries to use. Unlike "I act as user N" (a second identity in the Go
// core, @go-only), the other user here has an instance of its own: a Go
// core opened with that uid and gid, on this scenario's store or archive
// directory. So these steps work with both backends: the backend under
// test only ever acts as this process's user.

// strangerIDs parses "user N of (my|another) group".
func strangerIDs(uid, group string) (uint32, uint32, error) {
	u, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return 0, 0, err
	}
	if int(u) == os.Getuid() {
		return 0, 0, fmt.Errorf("user %d is this process's own uid; pick another", u)
	}
	g := uint32(os.Getgid())
	if group == "another" {
		g++
	}
	return uint32(u), g, nil
}

// backupDir is where the backend under test keeps backups: famd's archive
// when a famd serves it, else the embedded one.
func (w *world) backupDir() string {
	if w.famd != nil {
		return w.famdOpts.BackupDir
	}
	return os.Getenv("OPENFAM_BACKUP_DIR")
}

// strangerStore opens user uid's own embedded store under the scenario's
// directory, archiving into the backend's backup directory.
func (w *world) strangerStore(uid, gid uint32) (*core.Fam, error) {
	o := core.DefaultOptions()
	home := filepath.Join(w.tmp, fmt.Sprintf("user-%d", uid))
	o.DataDir, o.ShmDir, o.BackupDir = filepath.Join(home, "data"), filepath.Join(home, "shm"), w.backupDir()
	o.Server, o.PEID, o.PECount = "", 0, 1
	o.UID, o.GID = int(uid), int(gid)
	return core.Initialize(o)
}

// strangerBackup: user uid makes a region of the given mode (region-level
// permissions) in its own store, an item of mode 0600 holding text, and
// backs it up as bk into the backend's archive.
func (w *world) strangerBackup(uid, group, bk, text, mode string) error {
	u, g, err := strangerIDs(uid, group)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	f, err := w.strangerStore(u, g)
	if err != nil {
		return err
	}
	defer f.Finalize()
	r, err := f.CreateRegion("own-"+bk, 1<<16, m, core.RegionAttr{})
	if err != nil {
		return err
	}
	it, err := r.Allocate("item", uint64(len(text)), 0o600)
	if err != nil {
		return err
	}
	if err := f.Default().Put([]byte(text), it, 0); err != nil {
		return err
	}
	wt, err := f.Backup(it, bk)
	if err != nil {
		return err
	}
	return wt.Wait()
}

// strangerBackupHolds: user uid restores its backup bk into a new item of
// its own and finds text there.
func (w *world) strangerBackupHolds(uid, group, bk, text string) error {
	u, g, err := strangerIDs(uid, group)
	if err != nil {
		return err
	}
	f, err := w.strangerStore(u, g)
	if err != nil {
		return err
	}
	defer f.Finalize()
	r, err := f.LookupRegion("own-" + bk)
	if err != nil {
		return err
	}
	wt, it, err := f.RestoreNew(bk, r, "", 0o600)
	if err != nil {
		return err
	}
	if err := wt.Wait(); err != nil {
		return err
	}
	defer it.Deallocate()
	buf := make([]byte, len(text))
	if err := f.Default().Get(buf, it, 0); err != nil {
		return err
	}
	if !bytes.Equal(buf, []byte(text)) {
		return fmt.Errorf("user %s's backup %q holds %q, want %q", uid, bk, buf, text)
	}
	return nil
}

// asStranger runs fn with an instance of user uid on this scenario's
// embedded store. The store serves one process-wide instance at a time, so
// the backend's instance is finalized around it and initialized again: use
// it before the scenario holds handles.
func (w *world) asStranger(uid, group string, fn func(f *core.Fam) error) error {
	u, g, err := strangerIDs(uid, group)
	if err != nil {
		return err
	}
	if w.famd != nil || os.Getenv("OPENFAM_SERVER") != "" {
		return errors.New("another user's region needs the embedded store (no famd)")
	}
	was := w.inited
	if was {
		if err := w.finalize(""); err != nil {
			return err
		}
	}
	o := core.DefaultOptions()
	o.PEID, o.PECount, o.UID, o.GID = 0, 1, int(u), int(g)
	f, err := core.Initialize(o)
	if err != nil {
		return err
	}
	if err := errors.Join(fn(f), f.Finalize()); err != nil {
		return err
	}
	if was {
		return w.initialize("")
	}
	return nil
}

// strangerRegion: user uid creates a region in this scenario's embedded
// store (see asStranger).
func (w *world) strangerRegion(uid, group, name, n, unit, mode string) error {
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	return w.asStranger(uid, group, func(f *core.Fam) error {
		_, err := f.CreateRegion(name, size, m, core.RegionAttr{})
		return err
	})
}

// strangerItem: user uid creates a region with data item-level
// permissions and one item in it (see asStranger).
func (w *world) strangerItem(uid, group, name, n, unit, mode, item, isize, iunit, imode string) error {
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	is, im, err := parseSizeMode(isize, iunit, imode)
	if err != nil {
		return err
	}
	return w.asStranger(uid, group, func(f *core.Fam) error {
		r, err := f.CreateRegion(name, size, m, core.RegionAttr{PermLevel: core.PermDataItem})
		if err != nil {
			return err
		}
		_, err = r.Allocate(item, is, im)
		return err
	})
}

func (w *world) registerIdentity(sc *godog.ScenarioContext) {
	sc.Step(`^user `+num+` of (my|another) group created region `+q+` of `+size+` with mode `+mode+` and item `+q+` of `+size+` with mode `+mode+`$`, w.strangerItem)
	sc.Step(`^user `+num+` of (my|another) group has a backup `+q+` of an item holding `+q+` in a region with mode `+mode+`$`, w.strangerBackup)
	sc.Step(`^user `+num+` of (my|another) group still finds `+q+` in backup `+q+`$`,
		func(uid, group, text, bk string) error { return w.strangerBackupHolds(uid, group, bk, text) })
	sc.Step(`^user `+num+` of (my|another) group created region `+q+` of `+size+` with mode `+mode+`$`, w.strangerRegion)
}

package features

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"
)

// ---- backup and restore ---------------------------------------------------------------

// waited runs a call returning a wait handle and then its wait: the step's
// code is the first failure of the two.
func (w *world) waited(try, what string, wt Handle, code int) error {
	if code == 0 {
		code = w.b.Wait(what, wt)
	}
	return w.outcome(try, "fam_"+what, code)
}

func (w *world) backup(try, name, bk string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	wt, c := w.b.Backup(d, bk)
	return w.waited(try, "backup", wt, c)
}

func (w *world) restore(try, bk, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	wt, c := w.b.Restore(bk, d)
	return w.waited(try, "restore", wt, c)
}

func (w *world) restoreNew(try, bk, name, mode, rname string) error {
	r, err := w.region(rname)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	wt, d, c := w.b.RestoreRegion(bk, r, name, m)
	if err := w.waited(try, "restore", wt, c); err != nil || w.code != 0 {
		return err
	}
	w.items[name] = d
	return nil
}

func (w *world) deleteBackup(try, bk string) error {
	wt, c := w.b.DeleteBackup(bk)
	return w.waited(try, "delete", wt, c)
}

func (w *world) listingCount(prefix, n string) error {
	s, c := w.b.ListBackup(prefix)
	if c != 0 {
		return fmt.Errorf("fam_list_backup: code %d: %s", c, w.b.LastError())
	}
	got := 0
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			got++
		}
	}
	if strconv.Itoa(got) != n {
		return fmt.Errorf("listing %q shows %d backups, want %s:\n%s", prefix, got, n, s)
	}
	return nil
}

func (w *world) listingLine(prefix, bk, size, mode string) error {
	s, c := w.b.ListBackup(prefix)
	if c != 0 {
		return fmt.Errorf("fam_list_backup: code %d: %s", c, w.b.LastError())
	}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && f[0] == bk {
			m, err := strconv.ParseUint(f[2], 0, 32)
			if err != nil {
				return fmt.Errorf("bad mode in %q", l)
			}
			want, _ := parseMode(mode)
			if f[1] != size || uint32(m) != want || f[3] != strconv.Itoa(os.Getuid()) {
				return fmt.Errorf("line %q: want size %s, mode %s, uid %d", l, size, mode, os.Getuid())
			}
			if _, err := time.Parse(time.RFC3339, f[5]); err != nil {
				return fmt.Errorf("line %q: bad time: %v", l, err)
			}
			return nil
		}
	}
	return fmt.Errorf("no line for backup %q in:\n%s", bk, s)
}

// registerBackup registers the backup and restore steps.
func (w *world) registerBackup(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`back up item `+q+` as `+q+`$`, w.backup)
	sc.Step(`^`+try+`restore backup `+q+` into item `+q+`$`, w.restore)
	sc.Step(`^`+try+`restore backup `+q+` as a new item `+q+` with mode `+mode+` in region `+q+`$`, w.restoreNew)
	sc.Step(`^`+try+`delete backup `+q+`$`, w.deleteBackup)
	sc.Step(`^listing the backups starting with `+q+` shows `+num+` backups?$`, w.listingCount)
	sc.Step(`^the backup listing for `+q+` has a line for `+q+` of `+num+` bytes with mode `+mode+`$`, w.listingLine)
}

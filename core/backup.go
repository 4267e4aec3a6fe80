package core

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/gofam/openfam/core/metadata"
)

// A backup is one file in the archive directory: the magic, a 4-byte
// length, a JSON header, then the item's bytes. It is written to a
// temporary name and linked into place, so a backup either exists whole or
// not at all, and a name that exists is never replaced. Files are created
// 0600 in a 0700 directory: only the service's own user reads them
// directly; everyone else goes through the checks below.
const backupMagic = "OFAMBAK1"

// backupVersion 2 headers record in Mode, UID and GID the permission that
// governed the source item when the backup was taken, and that governs the
// backup since. Version 1 headers (no version field) recorded the item's
// own mode, which with region-level permissions could be looser than what
// protected the item, so they are not trusted: see readBackupHeader.
const backupVersion = 2

// backupNameMax is the longest backup name: the file name, with the
// ".fambackup" suffix, must fit a file system's 255-byte name limit.
const backupNameMax = 255 - len(backupSuffix)

const backupSuffix = ".fambackup"

// legacyBackupMode is the mode a version 1 backup is treated as having,
// with the backup file's owner as its owner: readable and deletable only
// by that user (for famd, its own user), never by whoever the old header
// names.
const legacyBackupMode = 0o600

type backupHeader struct {
	Version int    `json:"version,omitempty"`
	Name    string `json:"name"`
	Size    uint64 `json:"size"`
	Mode    uint32 `json:"mode"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Item    string `json:"item"`
	Created int64  `json:"created"`
}

// backupMu serialises the permission check and the removal of
// DeleteBackup against each other within this process (famd serves every
// user from one), so that a delete removes the file it checked.
var backupMu sync.Mutex

func (f *Fam) backupPath(op, name string) (string, error) {
	if name == "" || len(name) > backupNameMax {
		return "", Errorf(CodeInvalid, op, "backup name %q must be 1-%d bytes", name, backupNameMax)
	}
	if p := nameProblem(name); p != "" {
		return "", Errorf(CodeInvalid, op, "backup name %q %s", name, p)
	}
	return filepath.Join(f.opts.BackupDir, name+backupSuffix), nil
}

// backupRights are the caller's rights on a backup: its recorded mode
// applied to the caller's class, as for regions and items.
func (f *Fam) backupRights(h backupHeader) Rights {
	return rightsFor(h.Mode, h.UID, h.GID, f.uid, f.gid)
}

// Backup starts writing a copy of the item to the archive directory under
// name and returns at once; the Wait reports the result. The caller needs
// read permission. The backup records the owner and mode that govern the
// item now (its region's with region-level permissions, its own with data
// item-level permissions), and those govern who may list, restore and
// delete it. Backup names are one namespace for every user: an existing
// backup of that name, whoever owns it, fails with CodeExists and is left
// as it is.
func (f *Fam) Backup(it *Item, name string) (*Wait, error) {
	const op = "fam_backup"
	if err := f.check(op); err != nil {
		return nil, err
	}
	path, err := f.backupPath(op, name)
	if err != nil {
		return nil, err
	}
	v, err := it.use(op, RightRead)
	if err != nil {
		return nil, err
	}
	return f.b.backup(f, op, it, v, name, path)
}

func writeBackup(path string, h backupHeader, data io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	// CreateTemp makes the file 0600.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-backup-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(hdr)))
	w.WriteString(backupMagic)
	w.Write(n[:])
	w.Write(hdr)
	if _, err := io.Copy(w, data); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// link(2), unlike rename(2), fails when the name exists: a backup
	// created meanwhile under this name, by anyone, is never replaced.
	return os.Link(tmp.Name(), path)
}

// readBackupHeader opens the backup file at path (never through a
// symbolic link) and reads its header. A version 1 header is given the
// file's owner and legacyBackupMode in place of what it recorded.
func readBackupHeader(path string) (*os.File, backupHeader, error) {
	var h backupHeader
	fl, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, h, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fl.Fd()), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		fl.Close()
		return nil, h, fmt.Errorf("%s is not a backup file", path)
	}
	var pre [12]byte
	if _, err := io.ReadFull(fl, pre[:]); err != nil || string(pre[:8]) != backupMagic {
		fl.Close()
		return nil, h, fmt.Errorf("%s is not a backup file", path)
	}
	n := binary.LittleEndian.Uint32(pre[8:])
	if n > 1<<20 {
		fl.Close()
		return nil, h, fmt.Errorf("%s has a corrupt header", path)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(fl, hdr); err != nil {
		fl.Close()
		return nil, h, err
	}
	if err := json.Unmarshal(hdr, &h); err != nil {
		fl.Close()
		return nil, h, fmt.Errorf("%s has a corrupt header: %v", path, err)
	}
	if h.Version < backupVersion {
		h.Mode, h.UID, h.GID = legacyBackupMode, st.Uid, st.Gid
	}
	return fl, h, nil
}

func (f *Fam) openBackup(op, name string) (*os.File, backupHeader, error) {
	path, err := f.backupPath(op, name)
	if err != nil {
		return nil, backupHeader{}, err
	}
	fl, h, err := readBackupHeader(path)
	switch {
	case err == nil:
		return fl, h, nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ELOOP):
		return nil, h, Errorf(CodeBackupNotFound, op, "no backup named %q in %s", name, f.opts.BackupDir)
	case errors.Is(err, os.ErrPermission):
		return nil, h, Errorf(CodeNoPerm, op, "backup %q: %v", name, err)
	}
	return nil, h, Errorf(CodeBackupNotFound, op, "%v", err)
}

// readableBackup opens backup name for a caller that needs read
// permission on it.
func (f *Fam) readableBackup(op, name string) (*os.File, backupHeader, error) {
	fl, h, err := f.openBackup(op, name)
	if err != nil {
		return nil, h, err
	}
	if f.backupRights(h)&RightRead == 0 {
		fl.Close()
		return nil, h, Errorf(CodeNoPerm, op, "no read permission on backup %q (owner uid %d gid %d, mode %#o)", name, h.UID, h.GID, h.Mode)
	}
	return fl, h, nil
}

// inBackground runs a famd's backup or restore (one RPC that returns when
// the copy is complete: seconds for a large item) as an operation of the
// default context, so that fam_backup and fam_restore return at once, as
// they do on the embedded store, and fam_progress counts the copy while it
// runs. Its error, the RPC's included, is the Wait's.
func (f *Fam) inBackground(call func() error) *Wait {
	return f.def.start(call)
}

// Restore starts copying backup name into dst, which must be at least as
// large as the backup. The caller needs read permission on the backup and
// write permission on dst. The Wait reports the result.
func (f *Fam) Restore(name string, dst *Item) (*Wait, error) {
	const op = "fam_restore"
	if err := f.check(op); err != nil {
		return nil, err
	}
	v, err := dst.use(op, RightWrite)
	if err != nil {
		return nil, err
	}
	return f.b.restore(f, op, name, dst, v)
}

// RestoreNew allocates a new item of the backup's size in r (named itemName,
// or unnamed for "") with the given mode and starts restoring into it. The
// caller needs read permission on the backup and write permission on r; a
// mode with bits outside 0777 fails with CodeInvalid. The item handle is
// returned at once; its contents are complete when the Wait succeeds.
func (f *Fam) RestoreNew(name string, r *Region, itemName string, mode uint32) (*Wait, *Item, error) {
	const op = "fam_restore_region"
	if err := f.check(op); err != nil {
		return nil, nil, err
	}
	if err := checkMode(op, mode); err != nil {
		return nil, nil, err
	}
	defer f.creation()()
	return f.b.restoreNew(f, op, name, r, itemName, mode)
}

// DeleteBackup starts deleting backup name; the Wait reports the result.
// The caller must own the backup or have write permission on it.
func (f *Fam) DeleteBackup(name string) (*Wait, error) {
	const op = "fam_delete_backup"
	if err := f.check(op); err != nil {
		return nil, err
	}
	path, err := f.backupPath(op, name)
	if err != nil {
		return nil, err
	}
	return f.b.deleteBackup(f, op, name, path)
}

// ListBackups describes the backups whose names start with prefix (all for
// "") and that the caller may read, one line each: "name size mode uid gid
// created-RFC3339".
func (f *Fam) ListBackups(prefix string) (string, error) {
	const op = "fam_list_backup"
	if err := f.check(op); err != nil {
		return "", err
	}
	return f.b.listBackups(f, op, prefix)
}

// placed reports whether the view's item lives on memory servers (this
// instance keeping its catalogue).
// The record is read under the region's lock, which a region-level chmod
// takes to replace it.
func (v *itemView) placed() bool {
	if v.rs == nil {
		return false
	}
	v.rs.mu.Lock()
	defer v.rs.mu.Unlock()
	return Placed(v.rs.rec)
}

// contents reads the whole item: its mapping, or, for an item on memory
// servers, its bytes fetched through the Placer chunk by chunk.
func (it *Item) contents(op string, v *itemView) (io.Reader, error) {
	switch {
	case v.mem != nil:
		return bytes.NewReader(v.mem), nil
	case v.placed():
		return &placedReader{f: it.f, rec: v.rs.rec, base: it.g.Offset, size: v.size}, nil
	}
	return nil, it.notHere("back up")
}

// fill writes n bytes read from r into the start of the item.
func (it *Item) fill(v *itemView, r io.Reader, n uint64) error {
	if v.mem != nil {
		_, err := io.ReadFull(r, v.mem[:n])
		return err
	}
	if !v.placed() {
		return it.notHere("restore")
	}
	buf := make([]byte, min(n, placedChunk))
	for done := uint64(0); done < n; {
		m := min(uint64(len(buf)), n-done)
		if _, err := io.ReadFull(r, buf[:m]); err != nil {
			return err
		}
		if err := it.f.opts.Placer.WriteAt(v.rs.rec, it.g.Offset+done, buf[:m]); err != nil {
			return err
		}
		done += m
	}
	return nil
}

// placedChunk bounds the buffer of a transfer between famd and memory
// servers.
const placedChunk = 4 << 20

// placedReader reads an item on memory servers in chunks.
type placedReader struct {
	f          *Fam
	rec        metadata.Region
	base, size uint64
	pos        uint64
}

func (r *placedReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	n := min(uint64(len(p)), r.size-r.pos, placedChunk)
	if err := r.f.opts.Placer.ReadAt(r.rec, r.base+r.pos, p[:n]); err != nil {
		return 0, err
	}
	r.pos += n
	return int(n), nil
}

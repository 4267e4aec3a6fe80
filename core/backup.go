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
	"sort"
	"strings"
	"time"

	"github.com/gofam/openfam/core/metadata"
)

// A backup is one file in the archive directory: the magic, a 4-byte
// length, a JSON header, then the item's bytes. It is written to a
// temporary name and renamed, so a backup either exists whole or not at all.
const backupMagic = "OFAMBAK1"

type backupHeader struct {
	Name    string `json:"name"`
	Size    uint64 `json:"size"`
	Mode    uint32 `json:"mode"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Item    string `json:"item"`
	Created int64  `json:"created"`
}

func (f *Fam) backupPath(op, name string) (string, error) {
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", Errorf(CodeInvalid, op, "backup name %q must be 1-255 bytes without '/' or NUL", name)
	}
	return filepath.Join(f.opts.BackupDir, name+".fambackup"), nil
}

// Backup starts writing a copy of the item to the archive directory under
// name and returns at once; the Wait reports the result. The caller needs
// read permission. An existing backup of that name fails with CodeExists.
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
	if f.remote != nil {
		return f.rBackup(op, it, name)
	}
	src, err := it.contents(op, v)
	if err != nil {
		return nil, err
	}
	rec, err := it.record(op)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, Errorf(CodeExists, op, "backup %q already exists", name)
	}
	h := backupHeader{Name: name, Size: rec.Size, Mode: rec.Mode, UID: rec.UID, GID: rec.GID, Item: rec.Name, Created: time.Now().UnixNano()}
	return f.def.start(func() error {
		if err := writeBackup(path, h, src); err != nil {
			return Errorf(CodeBackupNotCreated, op, "backup %q: %v", name, err)
		}
		return nil
	}), nil
}

func writeBackup(path string, h backupHeader, data io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
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
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("a backup of that name appeared meanwhile")
		}
		return err
	}
	return nil
}

func readBackupHeader(path string) (*os.File, backupHeader, error) {
	var h backupHeader
	fl, err := os.Open(path)
	if err != nil {
		return nil, h, err
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
	return fl, h, nil
}

func (f *Fam) openBackup(op, name string) (*os.File, backupHeader, error) {
	path, err := f.backupPath(op, name)
	if err != nil {
		return nil, backupHeader{}, err
	}
	fl, h, err := readBackupHeader(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, h, Errorf(CodeBackupNotFound, op, "no backup named %q in %s", name, f.opts.BackupDir)
	}
	if err != nil {
		return nil, h, Errorf(CodeBackupNotFound, op, "%v", err)
	}
	return fl, h, nil
}

// Restore starts copying backup name into dst, which must be at least as
// large as the backup and writable. The Wait reports the result.
func (f *Fam) Restore(name string, dst *Item) (*Wait, error) {
	const op = "fam_restore"
	if err := f.check(op); err != nil {
		return nil, err
	}
	v, err := dst.use(op, RightWrite)
	if err != nil {
		return nil, err
	}
	if f.remote != nil {
		return f.rRestore(op, name, dst)
	}
	if v.mem == nil && !v.placed() {
		return nil, dst.notHere("restore")
	}
	fl, h, err := f.openBackup(op, name)
	if err != nil {
		return nil, err
	}
	if h.Size > v.size {
		fl.Close()
		return nil, Errorf(CodeOutOfRange, op, "backup %q holds %d bytes; the data item has only %d", name, h.Size, v.size)
	}
	return f.def.start(func() error {
		defer fl.Close()
		if err := dst.fill(v, fl, h.Size); err != nil {
			return Errorf(CodeBackupNotFound, op, "reading backup %q: %v", name, err)
		}
		return nil
	}), nil
}

// RestoreNew allocates a new item of the backup's size in r (named itemName,
// or unnamed for "") and starts restoring into it. The item handle is
// returned at once; its contents are complete when the Wait succeeds.
func (f *Fam) RestoreNew(name string, r *Region, itemName string, mode uint32) (*Wait, *Item, error) {
	const op = "fam_restore_region"
	if err := f.check(op); err != nil {
		return nil, nil, err
	}
	if f.remote != nil {
		if _, err := f.backupPath(op, name); err != nil {
			return nil, nil, err
		}
		if _, err := r.record(op); err != nil {
			return nil, nil, err
		}
		return f.rRestoreNew(op, name, r, itemName, mode&0o777)
	}
	fl, h, err := f.openBackup(op, name)
	if err != nil {
		return nil, nil, err
	}
	fl.Close()
	it, err := r.Allocate(itemName, h.Size, mode)
	if err != nil {
		return nil, nil, err
	}
	if mode&0o200 == 0 {
		// The restore writes the bytes; a read-only item still gets them.
		v := it.view.Load()
		w := f.def.start(func() error {
			fl, _, err := f.openBackup(op, name)
			if err != nil {
				return err
			}
			defer fl.Close()
			return it.fill(v, fl, h.Size)
		})
		return w, it, nil
	}
	w, err := f.Restore(name, it)
	if err != nil {
		_ = it.Deallocate()
		return nil, nil, err
	}
	return w, it, nil
}

// DeleteBackup starts deleting backup name; the Wait reports the result.
func (f *Fam) DeleteBackup(name string) (*Wait, error) {
	const op = "fam_delete_backup"
	if err := f.check(op); err != nil {
		return nil, err
	}
	path, err := f.backupPath(op, name)
	if err != nil {
		return nil, err
	}
	if f.remote != nil {
		return f.rDeleteBackup(op, name)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, Errorf(CodeBackupNotFound, op, "no backup named %q in %s", name, f.opts.BackupDir)
	}
	return f.def.start(func() error {
		if err := os.Remove(path); err != nil {
			return Errorf(CodeBackupNotFound, op, "deleting backup %q: %v", name, err)
		}
		return nil
	}), nil
}

// ListBackups describes the backups whose names start with prefix (all for
// ""), one line each: "name size mode uid gid created-RFC3339".
func (f *Fam) ListBackups(prefix string) (string, error) {
	const op = "fam_list_backup"
	if err := f.check(op); err != nil {
		return "", err
	}
	if f.remote != nil {
		return f.rListBackups(op, prefix)
	}
	ents, err := os.ReadDir(f.opts.BackupDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", Errorf(CodeResource, op, "%v", err)
	}
	var lines []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".fambackup")
		if !ok || !strings.HasPrefix(n, prefix) {
			continue
		}
		fl, h, err := readBackupHeader(filepath.Join(f.opts.BackupDir, e.Name()))
		if err != nil {
			continue
		}
		fl.Close()
		lines = append(lines, fmt.Sprintf("%s %d %#o %d %d %s", h.Name, h.Size, h.Mode, h.UID, h.GID,
			time.Unix(0, h.Created).UTC().Format(time.RFC3339)))
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// placed reports whether the view's item lives on memory servers (this
// instance keeping its catalogue).
func (v *itemView) placed() bool { return v.rs != nil && Placed(v.rs.rec) }

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

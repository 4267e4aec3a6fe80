package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// offlineHelp is the part of famctl --help about --data-dir.
const offlineHelp = `Offline inspection: with --data-dir DIR (and no --server), famctl reads the
store in DIR (a famd's --data-dir, or the embedded store of programs that
run without a famd, $OPENFAM_DATA_DIR) itself, without a famd: regions,
items, stat and backups (list) only; it changes nothing in DIR. It needs
the store's lock: while a famd or a program using the embedded store has DIR
open, famctl says so and stops (ask that famd with --server instead).
--shm-dir DIR names where the store's volatile regions live (default
$OPENFAM_SHM_DIR, else /dev/shm/openfam-UID, as for famd): a volatile
region whose memory is not there is not listed, as a famd starting on DIR
would drop it. Backups are read from $OPENFAM_BACKUP_DIR, else DIR/backups.
`

// offlineCommands are the commands --data-dir allows: the ones that only
// read.
var offlineCommands = map[string]bool{"regions": true, "items": true, "stat": true, "backups": true}

// checkOffline refuses, before anything is opened, a command that would
// change the store.
func checkOffline(c *command, args []string) error {
	if !offlineCommands[c.name] || (c.name == "backups" && len(args) > 0 && args[0] != "list") {
		return usagef("%s: --data-dir inspects a store read-only (regions, items, stat, backups list); give --server to change it through its famd", c.name)
	}
	return nil
}

// openOffline serves a private copy of the metadata of the store in
// g.dataDir with an in-process famd on a Unix socket only this process can
// reach, and connects to it: every read-only command then runs exactly as
// against a famd, and the original store is never written (the core
// replays journals and drops lost volatile regions when it opens a store:
// here that happens to the copy). The store's locks are held while it is
// copied, so the copy is consistent, and a running program that holds
// them is named.
func openOffline(g *globals) (*session, error) {
	dir := g.dataDir
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--data-dir %s is not a directory", dir)
	}
	meta := filepath.Join(dir, "meta")
	db := filepath.Join(meta, "metadata.db")
	if _, err := os.Stat(db); err != nil {
		return nil, fmt.Errorf("--data-dir %s holds no OpenFAM store (no %s): %w", dir, db, err)
	}
	tmp, err := os.MkdirTemp("", "famctl-offline-")
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	copyDir := filepath.Join(tmp, "data")
	if err := copyStore(dir, copyDir); err != nil {
		cleanup()
		return nil, err
	}
	shm := g.shmDir
	if shm == "" {
		shm = os.Getenv("OPENFAM_SHM_DIR")
	}
	if shm == "" {
		base := "/dev/shm"
		if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
			base = os.TempDir()
		}
		shm = filepath.Join(base, "openfam-"+strconv.Itoa(os.Getuid()))
	}
	if fi, err := os.Stat(shm); err != nil || !fi.IsDir() {
		// Nothing to find there; do not create it on the host's tmpfs.
		shm = filepath.Join(tmp, "shm")
	}
	backups := os.Getenv("OPENFAM_BACKUP_DIR")
	if backups == "" {
		backups = filepath.Join(dir, "backups")
	}
	d, err := embed.Start(embed.Options{DataDir: copyDir, ShmDir: shm, BackupDir: backups})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("opening the copy of the store in %s: %w", dir, err)
	}
	conn, err := rpc.DialUnix(d.SocketPath(), g.timeout)
	if err != nil {
		d.Close()
		cleanup()
		return nil, fmt.Errorf("in-process famd for %s: %w", dir, err)
	}
	return &session{g: g, addr: "data dir " + dir, conn: conn, fam: pb.NewFamClient(conn), done: func() {
		conn.Close()
		d.Close()
		cleanup()
	}}, nil
}

// errStoreInUse is returned when a running program holds the store.
var errStoreInUse = errors.New("the store is in use")

// copyStore copies the metadata (meta/) and the store id of the store in
// dir to to, holding shared locks on famd's lock file and on the metadata
// database: a famd or a program with the embedded store open holds them
// exclusively, and while famctl holds them neither can start writing.
func copyStore(dir, to string) error {
	// famd's lock: famd holds it for as long as it serves dir.
	if f, err := os.Open(filepath.Join(dir, "famd.lock")); err == nil {
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
			pid, _ := os.ReadFile(filepath.Join(dir, "famd.lock"))
			return fmt.Errorf("%w: data directory %s is served by a running famd (pid %s): stop it, or ask it with --server", errStoreInUse, dir, trimNL(pid))
		}
	}
	// The metadata database's lock: any program with the store open.
	db, err := os.Open(filepath.Join(dir, "meta", "metadata.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := syscall.Flock(int(db.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("%w: the store in %s is open in a running program (a famd, or a program using the embedded store): stop it first, or ask its famd with --server", errStoreInUse, dir)
	}
	if err := os.MkdirAll(filepath.Join(to, "meta"), 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(dir, "meta"))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(dir, "meta", e.Name()), filepath.Join(to, "meta", e.Name())); err != nil {
				return err
			}
		}
	}
	// Persistent regions' bytes: the core opens a region's file to
	// describe it. famctl only reads (every command that writes is refused
	// before this), so the copy points at the originals.
	if fi, err := os.Stat(filepath.Join(dir, "regions")); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(filepath.Join(dir, "regions"))
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(to, "regions")); err != nil {
			return err
		}
	}
	// The store id names the volatile regions' files in the shm directory.
	if err := copyFile(filepath.Join(dir, "store-id"), filepath.Join(to, "store-id")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", from, err)
	}
	return out.Close()
}

func trimNL(b []byte) string {
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return "unknown"
	}
	return s
}

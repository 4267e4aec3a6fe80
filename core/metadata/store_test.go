package metadata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Crash tests re-execute the test binary as a child that writes to a store
// and is then killed with SIGKILL, which is a real crash of the writer.
const (
	childModeEnv = "METADATA_TEST_CHILD"
	childDirEnv  = "METADATA_TEST_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		runChild(mode, os.Getenv(childDirEnv))
		os.Exit(3) // runChild only returns by being killed
	}
	os.Exit(m.Run())
}

// quiet are options under which nothing is checkpointed unless asked.
var quiet = Options{CheckpointInterval: time.Hour, CheckpointBytes: 1 << 40}

func runChild(mode, dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	hookReached := make(chan struct{})
	block := func() { close(hookReached); select {} }
	switch mode {
	case "rotate":
		testHooks.afterRotate = block
	case "commit":
		testHooks.afterCommit = block
	case "fail":
		testHooks.commit = func() error { return errors.New("injected commit failure") }
	}
	s, err := Open(dir, quiet)
	if err != nil {
		fail(err)
	}
	switch mode {
	case "lock":
	case "crash":
		for _, phase := range phases {
			if err := phase(s); err != nil {
				fail(err)
			}
		}
	case "rotate", "commit":
		if err := phaseA(s); err != nil {
			fail(err)
		}
		go s.Checkpoint()
		<-hookReached
		if err := errors.Join(phaseB(s), phaseC(s)); err != nil {
			fail(err)
		}
	case "fail":
		// Two failed checkpoints: the second appends to the old journal.
		for i, phase := range phases {
			if err := phase(s); err != nil {
				fail(err)
			}
			if i == len(phases)-1 {
				break
			}
			if err := s.Checkpoint(); err == nil {
				fail(errors.New("checkpoint succeeded despite the injected failure"))
			}
		}
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// startChild runs the test binary in child mode and waits for its "ready".
// The child is killed at cleanup if the test has not done so.
func startChild(t *testing.T, mode, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if l != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %s: got %q, stderr: %s", mode, l, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("child %s: no ready after 60s", mode)
	}
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// The crash workload, in three phases, with fixed timestamps so two runs
// give identical records. It reuses freed names, renames, deletes a region
// with items still in the journal and reuses offsets.
var phases = []func(*Store) error{phaseA, phaseB, phaseC}

func phaseA(s *Store) error {
	for i, name := range []string{"r1", "r2", "r3"} {
		if _, err := s.CreateRegion(Region{Name: name, Size: 1 << 20, Mode: 0o700, Servers: []uint64{3, 1, uint64(i)}, Created: 42}); err != nil {
			return err
		}
	}
	for i := range 100 {
		if err := s.PutItem(Item{RegionID: 1, Offset: uint64(i) * 64, Size: 60, Name: "a" + strconv.Itoa(i), Mode: 0o600, UID: 1000, GID: 100, Created: 7}); err != nil {
			return err
		}
	}
	for i := range 20 {
		if err := s.PutItem(Item{RegionID: 2, Offset: uint64(i) * 8, Size: 8, Name: "x" + strconv.Itoa(i), Created: 7}); err != nil {
			return err
		}
	}
	return nil
}

func phaseB(s *Store) error {
	for i := 0; i < 100; i += 4 {
		if err := s.DeleteItem(1, uint64(i)*64); err != nil {
			return err
		}
		if err := s.UpdateItem(Item{RegionID: 1, Offset: uint64(i+1) * 64, Size: 61, Mode: 0o640, Name: "b" + strconv.Itoa(i+1)}); err != nil {
			return err
		}
		// The freed name goes to a new offset.
		if err := s.PutItem(Item{RegionID: 1, Offset: uint64(100+i) * 64, Size: 1, Name: "a" + strconv.Itoa(i), Created: 8}); err != nil {
			return err
		}
	}
	for i := range 10 {
		if err := s.PutItem(Item{RegionID: 3, Offset: uint64(i), Size: 1, Name: "z" + strconv.Itoa(i), Created: 7}); err != nil {
			return err
		}
	}
	return s.UpdateRegion(Region{ID: 3, Name: "r3-renamed", Size: 2 << 20, Mode: 0o750, Redundancy: 1, MemoryType: 2, Interleave: 1, PermLevel: 2, InterleaveSize: 4096, Servers: []uint64{9}})
}

func phaseC(s *Store) error {
	if err := s.DeleteRegion(2); err != nil {
		return err
	}
	for i := 2; i < 100; i += 4 {
		if err := s.DeleteItem(1, uint64(i)*64); err != nil {
			return err
		}
		if err := s.PutItem(Item{RegionID: 1, Offset: uint64(i) * 64, Size: 33, Name: "c" + strconv.Itoa(i), Created: 9}); err != nil {
			return err
		}
	}
	for i := range 5 {
		if err := s.PutItem(Item{RegionID: 3, Offset: uint64(100 + i), Size: 2, Created: 7}); err != nil {
			return err
		}
	}
	if _, err := s.CreateRegion(Region{Name: "r4", Created: 43}); err != nil {
		return err
	}
	return s.PutItem(Item{RegionID: 4, Offset: 0, Size: 5, Name: "only", Created: 7})
}

type dump struct {
	Regions []Region
	Items   map[uint64][]Item
	Names   map[string]Item // "region/name" -> ItemByName result
}

func dumpStore(t *testing.T, s *Store) dump {
	t.Helper()
	d := dump{Regions: s.Regions(), Items: map[uint64][]Item{}, Names: map[string]Item{}}
	for _, r := range d.Regions {
		items := s.Items(r.ID)
		d.Items[r.ID] = items
		for _, it := range items {
			if it.Name == "" {
				continue
			}
			got, err := s.ItemByName(r.ID, it.Name)
			if err != nil || got != it {
				t.Fatalf("ItemByName(%d, %q) = %+v, %v; want %+v", r.ID, it.Name, got, err, it)
			}
			d.Names[fmt.Sprintf("%d/%s", r.ID, it.Name)] = got
		}
	}
	return d
}

func dumpDir(t *testing.T, dir string) dump {
	t.Helper()
	s, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return dumpStore(t, s)
}

func mustOpen(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reference is the state the crash workload must leave, made by a clean run.
func reference(t *testing.T) dump {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, quiet)
	for _, phase := range phases {
		if err := phase(s); err != nil {
			t.Fatal(err)
		}
	}
	d := dumpStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if again := dumpDir(t, dir); !reflect.DeepEqual(again, d) {
		t.Fatalf("state changed across Close/Open:\nbefore %+v\nafter  %+v", d, again)
	}
	if len(d.Regions) != 3 || len(d.Items[1]) != 100 || len(d.Items[3]) != 15 {
		t.Fatalf("reference workload gave %d regions, %d+%d items", len(d.Regions), len(d.Items[1]), len(d.Items[3]))
	}
	return d
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func isErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func TestRegions(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, quiet)

	servers := []uint64{5, 6}
	r1, err := s.CreateRegion(Region{Name: "one", Size: 100, Mode: 0o644, UID: 1, GID: 2, Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	servers[0] = 99 // the store must hold its own copy
	if r1.ID != 1 || r1.Created == 0 || !reflect.DeepEqual(r1.Servers, []uint64{5, 6}) {
		t.Fatalf("created %+v", r1)
	}
	r2, err := s.CreateRegion(Region{Name: "two", Created: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r2.ID != 2 || r2.Created != 5 {
		t.Fatalf("created %+v", r2)
	}
	_, err = s.CreateRegion(Region{Name: "one"})
	isErr(t, err, ErrExists)
	if _, err := s.CreateRegion(Region{}); err == nil {
		t.Fatal("empty region name accepted")
	}

	got, err := s.RegionByName("one")
	if err != nil || !reflect.DeepEqual(got, r1) {
		t.Fatalf("RegionByName = %+v, %v; want %+v", got, err, r1)
	}
	got.Servers[0] = 77 // returned copies are the caller's
	if got, _ := s.RegionByID(1); got.Servers[0] != 5 {
		t.Fatalf("store shares Servers with a caller: %v", got.Servers)
	}
	_, err = s.RegionByID(3)
	isErr(t, err, ErrNotFound)
	_, err = s.RegionByName("three")
	isErr(t, err, ErrNotFound)

	// Rename, keeping Created; the old name is free afterwards.
	upd := r1
	upd.Name, upd.Size, upd.Created, upd.Servers = "uno", 200, 1, nil
	if err := s.UpdateRegion(upd); err != nil {
		t.Fatal(err)
	}
	got, err = s.RegionByName("uno")
	if err != nil || got.Size != 200 || got.Created != r1.Created || got.Servers != nil {
		t.Fatalf("after rename: %+v, %v", got, err)
	}
	_, err = s.RegionByName("one")
	isErr(t, err, ErrNotFound)
	upd.Name = "two"
	isErr(t, s.UpdateRegion(upd), ErrExists)
	upd.Name = "uno" // own name is not a clash
	if err := s.UpdateRegion(upd); err != nil {
		t.Fatal(err)
	}
	isErr(t, s.UpdateRegion(Region{ID: 9, Name: "nine"}), ErrNotFound)
	if err := s.UpdateRegion(Region{ID: 1}); err == nil {
		t.Fatal("empty region name accepted by UpdateRegion")
	}

	if err := s.PutItem(Item{RegionID: 2, Offset: 0, Name: "i"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRegion(2); err != nil {
		t.Fatal(err)
	}
	isErr(t, s.DeleteRegion(2), ErrNotFound)
	_, err = s.ItemAt(2, 0)
	isErr(t, err, ErrNotFound)
	if items := s.Items(2); items != nil {
		t.Fatalf("items of a deleted region: %v", items)
	}
	r3, err := s.CreateRegion(Region{Name: "two"})
	if err != nil || r3.ID != 3 {
		t.Fatalf("recreated name: %+v, %v (ID must not be reused)", r3, err)
	}
	if n := len(s.Items(3)); n != 0 {
		t.Fatalf("new region inherits %d items", n)
	}
	if got := s.Regions(); len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("Regions() = %+v", got)
	}

	// IDs stay unused across reopen, even when the newest was deleted.
	if err := s.DeleteRegion(3); err != nil {
		t.Fatal(err)
	}
	before := dumpStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, quiet)
	if after := dumpStore(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("reopen: %+v, want %+v", after, before)
	}
	r4, err := s.CreateRegion(Region{Name: "four"})
	if err != nil || r4.ID != 4 {
		t.Fatalf("after reopen: %+v, %v; want ID 4", r4, err)
	}
}

func TestItems(t *testing.T) {
	s := mustOpen(t, t.TempDir(), quiet)
	a, _ := s.CreateRegion(Region{Name: "a"})
	b, _ := s.CreateRegion(Region{Name: "b"})

	it := Item{RegionID: a.ID, Offset: 4096, Size: 10, Name: "x", Mode: 0o600, UID: 7, GID: 8}
	if err := s.PutItem(it); err != nil {
		t.Fatal(err)
	}
	isErr(t, s.PutItem(Item{RegionID: 99, Offset: 0}), ErrNotFound)
	isErr(t, s.PutItem(Item{RegionID: a.ID, Offset: 4096, Name: "other"}), ErrExists)
	isErr(t, s.PutItem(Item{RegionID: a.ID, Offset: 0, Name: "x"}), ErrExists)
	// Same name in another region, and several unnamed items, are fine.
	if err := errors.Join(
		s.PutItem(Item{RegionID: b.ID, Offset: 4096, Name: "x"}),
		s.PutItem(Item{RegionID: a.ID, Offset: 0}),
		s.PutItem(Item{RegionID: a.ID, Offset: 64}),
	); err != nil {
		t.Fatal(err)
	}

	got, err := s.ItemAt(a.ID, 4096)
	if err != nil || got.Created == 0 {
		t.Fatalf("ItemAt = %+v, %v", got, err)
	}
	it.Created = got.Created
	it.Gen = 1 // the store's first incarnation number
	if got != it {
		t.Fatalf("ItemAt = %+v, want %+v", got, it)
	}
	if got, err := s.ItemByName(a.ID, "x"); err != nil || got != it {
		t.Fatalf("ItemByName = %+v, %v", got, err)
	}
	_, err = s.ItemByName(a.ID, "")
	isErr(t, err, ErrNotFound)
	_, err = s.ItemByName(a.ID, "nope")
	isErr(t, err, ErrNotFound)
	_, err = s.ItemAt(a.ID, 1)
	isErr(t, err, ErrNotFound)
	unnamed := it
	unnamed.Name = ""
	if got, err := s.ItemAtUnnamed(a.ID, 4096); err != nil || got != unnamed {
		t.Fatalf("ItemAtUnnamed = %+v, %v; want %+v", got, err, unnamed)
	}
	_, err = s.ItemAtUnnamed(a.ID, 1)
	isErr(t, err, ErrNotFound)
	_, err = s.ItemAtUnnamed(99, 4096)
	isErr(t, err, ErrNotFound)
	// Copying a name allocates (one byte's would not); leaving it out not.
	if err := s.PutItem(Item{RegionID: b.ID, Offset: 0, Name: "a longer name"}); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = s.ItemAt(b.ID, 0) }); allocs == 0 {
		t.Fatal("ItemAt of a named item made no allocation: the check below proves nothing")
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = s.ItemAtUnnamed(b.ID, 0) }); allocs != 0 {
		t.Fatalf("ItemAtUnnamed made %.1f allocations, want none", allocs)
	}
	if items := s.Items(a.ID); len(items) != 3 || items[0].Offset != 0 || items[1].Offset != 64 || items[2].Offset != 4096 {
		t.Fatalf("Items = %+v", items)
	}

	// UpdateItem changes Mode, Name and Size only.
	if err := s.UpdateItem(Item{RegionID: a.ID, Offset: 4096, Size: 20, Mode: 0o400, Name: "y", UID: 1, Created: 1}); err != nil {
		t.Fatal(err)
	}
	want := it
	want.Size, want.Mode, want.Name = 20, 0o400, "y"
	if got, _ := s.ItemByName(a.ID, "y"); got != want {
		t.Fatalf("after update: %+v, want %+v", got, want)
	}
	_, err = s.ItemByName(a.ID, "x")
	isErr(t, err, ErrNotFound)
	if err := s.PutItem(Item{RegionID: a.ID, Offset: 128, Name: "x"}); err != nil {
		t.Fatalf("freed name not reusable: %v", err)
	}
	isErr(t, s.UpdateItem(Item{RegionID: a.ID, Offset: 4096, Name: "x"}), ErrExists)
	if err := s.UpdateItem(want); err != nil {
		t.Fatalf("update keeping own name: %v", err)
	}
	isErr(t, s.UpdateItem(Item{RegionID: a.ID, Offset: 1}), ErrNotFound)
	isErr(t, s.UpdateItem(Item{RegionID: 99, Offset: 0}), ErrNotFound)
	// Unnaming frees the name.
	if err := s.UpdateItem(Item{RegionID: a.ID, Offset: 4096}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ItemByName(a.ID, "y")
	isErr(t, err, ErrNotFound)

	if err := s.DeleteItem(a.ID, 128); err != nil {
		t.Fatal(err)
	}
	isErr(t, s.DeleteItem(a.ID, 128), ErrNotFound)
	isErr(t, s.DeleteItem(99, 0), ErrNotFound)
	_, err = s.ItemByName(a.ID, "x")
	isErr(t, err, ErrNotFound)
	if got, err := s.ItemByName(b.ID, "x"); err != nil || got.RegionID != b.ID {
		t.Fatalf("b/x = %+v, %v", got, err)
	}
}

func TestClosed(t *testing.T) {
	s, err := Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := s.CreateRegion(Region{Name: "r"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	isErr(t, s.Close(), ErrClosed)
	isErr(t, s.Checkpoint(), ErrClosed)
	_, err = s.CreateRegion(Region{Name: "s"})
	isErr(t, err, ErrClosed)
	isErr(t, s.UpdateRegion(r), ErrClosed)
	isErr(t, s.DeleteRegion(r.ID), ErrClosed)
	_, err = s.RegionByID(r.ID)
	isErr(t, err, ErrClosed)
	_, err = s.RegionByName("r")
	isErr(t, err, ErrClosed)
	isErr(t, s.PutItem(Item{RegionID: r.ID}), ErrClosed)
	isErr(t, s.UpdateItem(Item{RegionID: r.ID}), ErrClosed)
	isErr(t, s.DeleteItem(r.ID, 0), ErrClosed)
	_, err = s.ItemAt(r.ID, 0)
	isErr(t, err, ErrClosed)
	_, err = s.ItemByName(r.ID, "x")
	isErr(t, err, ErrClosed)
	if s.Regions() != nil || s.Items(r.ID) != nil {
		t.Fatal("lists from a closed store")
	}
}

func TestPersistence(t *testing.T) {
	want := reference(t) // runs the workload, closes, reopens and compares
	if want.Regions[1].Name != "r3-renamed" || want.Regions[1].InterleaveSize != 4096 {
		t.Fatalf("region update lost: %+v", want.Regions[1])
	}
}

func TestCheckpointEmptiesJournal(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, quiet)
	if err := phaseA(s); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, journalFile)
	if fileSize(t, jpath) == 0 {
		t.Fatal("item changes did not reach the journal")
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, jpath); n != 0 {
		t.Fatalf("journal holds %d bytes after a checkpoint", n)
	}
	if _, err := os.Stat(filepath.Join(dir, oldJournal)); !os.IsNotExist(err) {
		t.Fatalf("old journal left behind: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestBackgroundCheckpoint(t *testing.T) {
	journalBelow := func(dir string, n int64) func() bool {
		return func() bool {
			st, err := os.Stat(filepath.Join(dir, journalFile))
			return err == nil && st.Size() < n
		}
	}
	t.Run("interval", func(t *testing.T) {
		dir := t.TempDir()
		s := mustOpen(t, dir, Options{CheckpointInterval: 10 * time.Millisecond, CheckpointBytes: 1 << 40})
		if err := phaseA(s); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "interval checkpoint", journalBelow(dir, 1))
	})
	t.Run("size", func(t *testing.T) {
		dir := t.TempDir()
		s := mustOpen(t, dir, Options{CheckpointInterval: time.Hour, CheckpointBytes: 512})
		if _, err := s.CreateRegion(Region{Name: "r"}); err != nil {
			t.Fatal(err)
		}
		// Each record is about 60 bytes: ten of them pass 512, and the
		// journal can only shrink back below it by a checkpoint.
		for i := range 10 {
			if err := s.PutItem(Item{RegionID: 1, Offset: uint64(i), Name: "n" + strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "size-triggered checkpoint", journalBelow(dir, 512))
	})
}

// TestCrashReplay kills a writer that never checkpointed: everything must
// come back from the journal alone.
func TestCrashReplay(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	kill(t, startChild(t, "crash", dir))
	if fileSize(t, filepath.Join(dir, journalFile)) == 0 {
		t.Fatal("the child left an empty journal; nothing would be replayed")
	}
	if got := dumpDir(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("after crash:\n got %+v\nwant %+v", got, want)
	}
	if n := fileSize(t, filepath.Join(dir, journalFile)); n != 0 {
		t.Fatalf("journal not folded in on open: %d bytes", n)
	}
}

// TestCrashDuringCheckpoint kills the writer inside a checkpoint, after the
// journal rotation and after the commit, with more changes in the new
// journal; and after failed commits that left the old journal in place.
func TestCrashDuringCheckpoint(t *testing.T) {
	want := reference(t)
	for _, mode := range []string{"rotate", "commit", "fail"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			kill(t, startChild(t, mode, dir))
			if fileSize(t, filepath.Join(dir, oldJournal)) == 0 {
				t.Fatal("no old journal at the crash point")
			}
			if fileSize(t, filepath.Join(dir, journalFile)) == 0 {
				t.Fatal("no changes in the active journal at the crash point")
			}
			if got := dumpDir(t, dir); !reflect.DeepEqual(got, want) {
				t.Fatalf("after crash:\n got %+v\nwant %+v", got, want)
			}
			if _, err := os.Stat(filepath.Join(dir, oldJournal)); !os.IsNotExist(err) {
				t.Fatalf("old journal survives open: %v", err)
			}
		})
	}
}

// record returns the bytes of one framed journal record.
func record(t *testing.T, typ byte, payload []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec")
	j, err := openJournal(path, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.appendRecord(append(j.beginRecord(typ), payload...)); err != nil {
		t.Fatal(err)
	}
	j.close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestTornRecordAfterCrash(t *testing.T) {
	want := reference(t)
	extra := Item{RegionID: 1, Offset: 1 << 30, Size: 3, Name: "extra", Created: 1}
	rec := record(t, recPut, appendItem(nil, &extra))
	badCRC := bytes.Clone(rec)
	badCRC[len(badCRC)-1] ^= 0xff
	cases := []struct {
		name    string
		tail    []byte
		applied bool
	}{
		{"complete", rec, true}, // control: the same record, whole, is replayed
		{"cut", rec[:len(rec)-3], false},
		{"header only", rec[:3], false},
		{"bad crc", badCRC, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			kill(t, startChild(t, "crash", dir))
			appendTo(t, filepath.Join(dir, journalFile), c.tail)
			got := dumpDir(t, dir)
			_, has := got.Names["1/extra"]
			if has != c.applied {
				t.Fatalf("extra item present = %v, want %v", has, c.applied)
			}
			if has {
				got.Items[1] = got.Items[1][:len(got.Items[1])-1]
				delete(got.Names, "1/extra")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after torn tail:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestReadJournalTruncatesTornTail(t *testing.T) {
	it := Item{RegionID: 1, Offset: 8, Name: "n"}
	good := append(record(t, recPut, appendItem(nil, &it)), record(t, recDelete, append(u64key(0), u64key(0)...))...)
	huge := le.AppendUint32(nil, 1<<31)
	for name, tail := range map[string][]byte{
		"short":       {1, 2},
		"zero length": make([]byte, 16),
		"huge length": append(huge, make([]byte, 20)...),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			if err := os.WriteFile(path, append(bytes.Clone(good), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			var ops []journalOp
			if err := readJournal(path, func(op journalOp) { ops = append(ops, op) }); err != nil {
				t.Fatal(err)
			}
			if len(ops) != 2 || ops[0].del || ops[0].item != it || !ops[1].del {
				t.Fatalf("ops = %+v", ops)
			}
			if n := fileSize(t, path); n != int64(len(good)) {
				t.Fatalf("file is %d bytes, want the %d of the good records", n, len(good))
			}
		})
	}
}

func TestCorruptRecordFailsOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	appendTo(t, filepath.Join(dir, journalFile), record(t, 9, []byte{1, 2, 3}))
	_, err = Open(dir, quiet)
	isErr(t, err, ErrCorrupt)
}

func TestDeleteRegionDropsPendingItems(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, quiet)
	a, _ := s.CreateRegion(Region{Name: "a"})
	b, _ := s.CreateRegion(Region{Name: "b"})
	for i := range 10 {
		if err := errors.Join(
			s.PutItem(Item{RegionID: a.ID, Offset: uint64(i), Name: strconv.Itoa(i)}),
			s.PutItem(Item{RegionID: b.ID, Offset: uint64(i), Name: strconv.Itoa(i)}),
		); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRegion(a.ID); err != nil {
		t.Fatal(err)
	}
	// The journal still holds region a's records: the checkpoint (Close
	// makes one) must skip them, not fail on a missing bucket.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := dumpDir(t, dir)
	if len(got.Regions) != 1 || got.Regions[0].ID != b.ID || len(got.Items[b.ID]) != 10 || got.Items[a.ID] != nil {
		t.Fatalf("after reopen: %+v", got)
	}
}

// TestCommitFailure makes checkpoint commits fail: changes must stay
// readable, be retried, and the old journal must hold all of them until a
// commit works.
func TestCommitFailure(t *testing.T) {
	want := reference(t)
	var failing atomic.Bool
	failing.Store(true)
	testHooks.commit = func() error {
		if failing.Load() {
			return errors.New("injected")
		}
		return nil
	}
	defer func() { testHooks.commit = nil }()

	dir := t.TempDir()
	s := mustOpen(t, dir, quiet)
	for _, phase := range phases {
		if err := phase(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(); err == nil {
			t.Fatal("checkpoint succeeded despite the injected failure")
		}
	}
	if got := dumpStore(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("in memory after failed commits:\n got %+v\nwant %+v", got, want)
	}
	failing.Store(false)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, oldJournal)); !os.IsNotExist(err) {
		t.Fatalf("old journal left after a good checkpoint: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen from bbolt alone: no journal may help.
	if n := fileSize(t, filepath.Join(dir, journalFile)); n != 0 {
		t.Fatalf("journal holds %d bytes after Close", n)
	}
	if got := dumpDir(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", got, want)
	}
}

func TestLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	child := startChild(t, "lock", dir)
	start := time.Now()
	_, err := Open(dir, Options{Timeout: 300 * time.Millisecond})
	isErr(t, err, ErrLocked)
	if !strings.Contains(err.Error(), filepath.Join(dir, dbFile)) {
		t.Fatalf("error does not name the file: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about 300ms", d)
	}
	kill(t, child)
	s, err := Open(dir, Options{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("open after the holder died: %v", err)
	}
	s.Close()
}

// TestConcurrentItems races 8 writers on one region while checkpoints run
// every millisecond: every offset and every name has exactly one winner,
// and the result survives reopen.
func TestConcurrentItems(t *testing.T) {
	const writers, n = 8, 300
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{CheckpointInterval: time.Millisecond, CheckpointBytes: 4096})
	r, _ := s.CreateRegion(Region{Name: "r"})
	var (
		wg         sync.WaitGroup
		offWins    [n]atomic.Int32
		nameWins   [n]atomic.Int32
		mu         sync.Mutex
		wantAlive  = map[uint64]string{}
		unexpected []error
	)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				// Contended offset, unique name.
				off := uint64(i)
				name := fmt.Sprintf("g%d-%d", g, i)
				err := s.PutItem(Item{RegionID: r.ID, Offset: off, Name: name})
				switch {
				case err == nil:
					offWins[i].Add(1)
					if i%3 == 0 {
						err = s.DeleteItem(r.ID, off)
					} else {
						mu.Lock()
						wantAlive[off] = name
						mu.Unlock()
					}
				case errors.Is(err, ErrExists):
					err = nil
				}
				// Unique offset, contended name.
				off2 := uint64(1<<20 + g*n + i)
				name2 := "shared-" + strconv.Itoa(i)
				err2 := s.PutItem(Item{RegionID: r.ID, Offset: off2, Name: name2})
				switch {
				case err2 == nil:
					nameWins[i].Add(1)
					if i%2 == 0 {
						err2 = s.DeleteItem(r.ID, off2)
					} else {
						mu.Lock()
						wantAlive[off2] = name2
						mu.Unlock()
					}
				case errors.Is(err2, ErrExists):
					err2 = nil
				}
				if err := errors.Join(err, err2); err != nil {
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(unexpected) > 0 {
		t.Fatal(errors.Join(unexpected...))
	}
	// Every winner deletes offsets i%3 == 0 and names of even i, so a
	// later writer may win those again; the others have exactly one winner.
	for i := range n {
		if w := offWins[i].Load(); w < 1 || (i%3 != 0 && w != 1) {
			t.Fatalf("offset %d won %d times", i, w)
		}
		if w := nameWins[i].Load(); w < 1 || (i%2 == 1 && w != 1) {
			t.Fatalf("name shared-%d won %d times", i, w)
		}
	}
	check := func(d dump) {
		t.Helper()
		items := d.Items[r.ID]
		if len(items) != len(wantAlive) {
			t.Fatalf("%d items, want %d", len(items), len(wantAlive))
		}
		for _, it := range items {
			if wantAlive[it.Offset] != it.Name {
				t.Fatalf("item %+v, want name %q", it, wantAlive[it.Offset])
			}
		}
	}
	check(dumpStore(t, s))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(dumpDir(t, dir))
}

func BenchmarkPutDeleteItem(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r, err := s.CreateRegion(Region{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		it := Item{RegionID: r.ID, Offset: uint64(i) * 64, Size: 64, Name: "item-" + strconv.Itoa(i), Mode: 0o600}
		if err := s.PutItem(it); err != nil {
			b.Fatal(err)
		}
		if err := s.DeleteItem(r.ID, it.Offset); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIncarnationsAreNeverReused: every PutItem gets a number the store
// never gave before, including for an offset reused after DeleteItem,
// across a clean Close/Open, across a crash that leaves the numbers only in
// the journal, and after the items holding the highest numbers are gone.
// UpdateItem keeps an item's number.
func TestIncarnationsAreNeverReused(t *testing.T) {
	dir := t.TempDir()
	seen := map[uint64]bool{}
	put := func(s *Store, rid, off uint64) uint64 {
		t.Helper()
		if err := s.PutItem(Item{RegionID: rid, Offset: off, Size: 8, Gen: 1}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ItemAt(rid, off)
		if err != nil {
			t.Fatal(err)
		}
		if got.Gen == 0 || seen[got.Gen] {
			t.Fatalf("item at %d/%d got incarnation %d, already given or zero (given: %v)", rid, off, got.Gen, seen)
		}
		seen[got.Gen] = true
		return got.Gen
	}
	s, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRegion(Region{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	g1 := put(s, r.ID, 0)
	if err := s.UpdateItem(Item{RegionID: r.ID, Offset: 0, Size: 16, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ItemAt(r.ID, 0); got.Gen != g1 {
		t.Fatalf("UpdateItem changed the incarnation %d to %d", g1, got.Gen)
	}
	for range 3 {
		if err := s.DeleteItem(r.ID, 0); err != nil {
			t.Fatal(err)
		}
		put(s, r.ID, 0)
	}
	// The highest number is deleted before the clean close: only the
	// committed high-water mark remembers it.
	put(s, r.ID, 64)
	if err := s.DeleteItem(r.ID, 64); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	put(s, r.ID, 64)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A crash: the child's workload leaves its numbers in the journal
	// only. The next number must be the one a clean run of the same
	// workload gives next, not just one above the surviving items.
	next := func(s *Store) uint64 {
		t.Helper()
		if err := s.PutItem(Item{RegionID: 1, Offset: 1 << 40, Size: 1}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ItemAt(1, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		return got.Gen
	}
	clean := mustOpen(t, t.TempDir(), quiet)
	for _, phase := range phases {
		if err := phase(clean); err != nil {
			t.Fatal(err)
		}
	}
	want := next(clean)
	dir = t.TempDir()
	kill(t, startChild(t, "crash", dir))
	if got := next(mustOpen(t, dir, quiet)); got != want {
		t.Fatalf("after a crash the next incarnation is %d, want %d", got, want)
	}
}

// TestVersion1ItemRecords: records written before incarnations existed
// still decode, with incarnation 0.
func TestVersion1ItemRecords(t *testing.T) {
	it := Item{RegionID: 3, Offset: 128, Size: 9, Name: "old", Mode: 0o640, UID: 5, GID: 6, Created: 42}
	v2 := appendItem(nil, &it)
	// Version 1 is version 2 without the 8 bytes of Gen before the name.
	v1 := append([]byte{itemVersion1}, v2[1:itemFixed1]...)
	v1 = append(v1, it.Name...)
	got, err := decodeItem(v1)
	if err != nil || got != it {
		t.Fatalf("decode version 1 = %+v, %v; want %+v", got, err, it)
	}
	it.Gen = 77
	if got, err := decodeItem(appendItem(nil, &it)); err != nil || got != it {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, it)
	}
	if _, err := decodeItem(v1[:itemFixed1-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short version 1 record: %v", err)
	}
}

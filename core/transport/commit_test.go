package transport

import (
	"errors"
	"testing"

	"github.com/gofam/openfam/internal/smaps"
)

// A Commit makes the range durable before its reply: after it, no page of
// the served file is dirty in this process (which maps it, as the server).
func TestCommitMakesRangeDurable(t *testing.T) {
	dir := t.TempDir()
	m := newFileMem(t, dir, 1<<20)
	key := m.add(4096+100, 256<<10, RightRead|RightWrite)
	ro := m.add(0, 4096, RightRead)
	s := NewServer(m, ServerOptions{})
	c := dial(t, "tcp", serve(t, s, "tcp"), ClientOptions{})
	page := make([]byte, 4096)
	for i := range page {
		page[i] = byte(i)
	}
	for off := uint64(0); off < 256<<10; off += 3 * 4096 {
		if err := c.Put(key, off, page[:100]); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := smaps.DirtyKB(0, dir); err != nil || n == 0 {
		t.Fatalf("before commit: %d kB dirty (%v); the check could not fail", n, err)
	}
	if err := c.CommitAsync(key, 0, 256<<10).Wait(); err != nil {
		t.Fatal(err)
	}
	if n, err := smaps.DirtyKB(0, dir); err != nil || n != 0 {
		t.Fatalf("after commit: %d kB dirty (%v)", n, err)
	}
	// Any right will do: durability changes nothing anyone reads.
	if err := c.Commit(ro, 0, 4096); err != nil {
		t.Fatalf("commit with a read-only key: %v", err)
	}
	var e *Error
	if err := c.Commit(key, 0, 0); !errors.As(err, &e) || e.Code != codeInvalid {
		t.Fatalf("commit of 0 bytes: %v", err)
	}
	if err := c.Commit(key, 256<<10, 1); !errors.As(err, &e) || e.Code != codeOutOfRange {
		t.Fatalf("commit beyond the item: %v", err)
	}
	if err := c.Commit(Key{1}, 0, 1); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("commit with an unknown key: %v", err)
	}
}

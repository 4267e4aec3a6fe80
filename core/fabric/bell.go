package fabric

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Doorbells: how a polling progress goroutine (shm) sleeps while idle.
//
// shm's CQ has no wait object libfabric 1.17 can block on (fi_cq_open
// refuses FI_WAIT_FD; its FI_WAIT_YIELD spins), and a memory server's
// endpoint must call into its CQ for the target side of every RMA, which
// leaves nothing in that CQ. Polling with a backoff (progressPolled) cost
// an idle endpoint pair about 2% of a core; a longer backoff would make
// the first operation after an idle spell wait for it.
//
// So each shm endpoint owns a doorbell: one word in a page of shared
// memory (a file under /dev/shm named after the endpoint's fabric
// address, which is what its peers know of it). Once idle for parkAfter
// with nothing of its own in flight, its progress goroutine sleeps in
// futex(2) on the word, marked parked, and every initiator that posts an
// operation to it rings the bell (a load of the word, and a futex wake
// only where it reads parked), so the first operation after idleness is
// served at a thread wake-up's latency, and a stream, where the target
// never parks, pays one uncontended atomic and one load per operation.
// The same bell wakes the goroutine within its own process (a caller that
// parks, an asynchronous operation, Close). Before parkAfter the
// goroutine naps on timers as before: a transfer in several steps (shm's
// SAR protocol, where cross-memory attach is refused or
// FI_SHM_DISABLE_CMA is set) gives the target nothing it can see as work
// between steps, and waking it for each (or sleeping in futex(2) for
// 20 us naps) cost such transfers half their throughput or more here.
//
// The ordering that makes a ring never lost: the sleeper publishes parked
// (a sequentially consistent store) and then reads its CQ once more; the
// initiator posts (the provider writes the command into the target's
// queue) and then, after a full barrier, reads the word. Either the
// sleeper's last read finds the command, or the initiator's read finds
// parked and wakes it.
//
// A peer whose bell cannot be opened (a server of an older build, or a
// file this user cannot open) is not rung: its server polls as before or
// sleeps at most bellSweep, and the initiator's watchdog rings bells of
// operations still in flight as it looks at them.

const (
	bellAwake  = 0
	bellParked = 1

	bellSize  = 4096
	bellMagic = 0x6c6c6562_6d616673 // "sfambell", little-endian

	futexWait = 0 // FUTEX_WAIT (shared: the word is in a shared mapping)
	futexWake = 1 // FUTEX_WAKE
)

// bellSweep bounds one sleep on the bell, so that a peer that cannot ring
// is still served (late) and a lost wake-up cannot strand work (a variable
// so that tests can make a lost ring fail).
var bellSweep = time.Second

// bellDir is where doorbell files live (a variable for tests).
var bellDir = "/dev/shm"

// bellPrefix starts every doorbell file's name.
const bellPrefix = "gofam-fabric-bell-"

// bell is a doorbell word in a shared mapping: an endpoint's own (owner
// set, the file is removed at close) or a peer's.
type bell struct {
	mem   []byte
	word  *atomic.Uint32 // bellAwake or bellParked
	path  string
	owner bool
	woken atomic.Int64 // futex wakes this mapping issued (tests)
}

// Layout of a doorbell page: the word, then the owner's pid, then a magic.
const (
	bellWordOff  = 0
	bellPidOff   = 8
	bellMagicOff = 16
)

// bellPath is the doorbell file of the endpoint at fabric address addr.
func bellPath(addr []byte) string {
	sum := sha256.Sum256(addr)
	return filepath.Join(bellDir, bellPrefix+hex.EncodeToString(sum[:12]))
}

// createBell makes the doorbell of the endpoint at addr (removing those
// left behind by processes that are gone).
func createBell(addr []byte) (*bell, error) {
	sweepBells()
	path := bellPath(addr)
	// A file of this name is a dead endpoint's (shm's names hold the
	// process id): a new file, not the old one truncated, so that a peer
	// still mapping the old one never touches a page cut off under it
	// (SIGBUS). 0600 like shm's own regions: a peer that may map those may
	// ring.
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(bellSize); err != nil {
		os.Remove(path)
		return nil, err
	}
	b, err := mapBell(f, path)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	b.owner = true
	binary.LittleEndian.PutUint32(b.mem[bellPidOff:], uint32(os.Getpid()))
	(*atomic.Uint64)(unsafe.Pointer(&b.mem[bellMagicOff])).Store(bellMagic)
	return b, nil
}

// openBell maps the doorbell of the peer at addr, nil where it has none.
func openBell(addr []byte) *bell {
	path := bellPath(addr)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() < bellSize {
		return nil
	}
	b, err := mapBell(f, path)
	if err != nil {
		return nil
	}
	if (*atomic.Uint64)(unsafe.Pointer(&b.mem[bellMagicOff])).Load() != bellMagic {
		b.close() // being created, or not a doorbell: not rung
		return nil
	}
	return b
}

func mapBell(f *os.File, path string) (*bell, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, bellSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &bell{mem: mem, word: (*atomic.Uint32)(unsafe.Pointer(&mem[bellWordOff])), path: path}, nil
}

// close unmaps the bell, and removes the owner's file. Nobody may use it
// after (the endpoint's life lock orders that).
func (b *bell) close() {
	if b == nil || b.mem == nil {
		return
	}
	if b.owner {
		os.Remove(b.path)
	}
	unix.Munmap(b.mem)
	b.mem, b.word = nil, nil
}

// ring wakes the bell's sleeper, if it sleeps, and reports whether it
// did. It follows a post (see the
// top of the file): the atomic add is the full barrier between the
// provider's write of the command and the load of the word (an atomic
// read-modify-write is one on amd64 and arm64), so a stream pays an
// uncontended atomic on the stack and a load of a line the sleeper does
// not write while it works.
func (b *bell) ring() bool {
	var fence atomic.Uint32
	fence.Add(1)
	if b.word.Load() == bellParked && b.word.CompareAndSwap(bellParked, bellAwake) {
		b.woken.Add(1)
		unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(b.word)), futexWake, 1<<30, 0, 0, 0)
		return true
	}
	return false
}

// park marks the sleeper parked; the caller must then look for work once
// more and call sleep, or unpark, accordingly.
func (b *bell) park() { b.word.Store(bellParked) }

// unpark marks the sleeper awake; it reports whether someone rang since
// park (the word was set awake by a ring).
func (b *bell) unpark() bool { return b.word.Swap(bellAwake) == bellAwake }

// sleep sleeps while the word is parked, for at most d, and reports
// whether it was rung (rather than timed out or interrupted). The
// goroutine's thread blocks in the kernel (the runtime hands its P on).
func (b *bell) sleep(d time.Duration) bool {
	ts := unix.NsecToTimespec(int64(d))
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(b.word)), futexWait, bellParked, uintptr(unsafe.Pointer(&ts)), 0, 0)
	_ = errno // EAGAIN (rung before the wait), ETIMEDOUT, EINTR: the word says
	return b.unpark()
}

// sweepBells removes doorbell files whose owner process is gone (a famd
// or PE that was killed leaves its file behind).
func sweepBells() {
	ents, err := os.ReadDir(bellDir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if !strings.HasPrefix(ent.Name(), bellPrefix) {
			continue
		}
		path := filepath.Join(bellDir, ent.Name())
		b, err := os.ReadFile(path)
		if err != nil || len(b) < bellMagicOff+8 || binary.LittleEndian.Uint64(b[bellMagicOff:]) != bellMagic {
			continue // being created, or not ours to judge
		}
		pid := int(binary.LittleEndian.Uint32(b[bellPidOff:]))
		if pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			os.Remove(path)
		}
	}
}

package sigguard

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestKeep: handlers a call replaces (as libfabric's providers do) are put
// back, so that a SIGTERM still reaches the Go program's channel.
func TestKeep(t *testing.T) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	defer signal.Stop(c)
	var before action
	get(int(syscall.SIGTERM), &before)
	n := Keep(func() {
		// What a C library does: SIGTERM and SIGUSR2 ignored.
		ign := action{1} // SIG_IGN
		for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR2} {
			unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&ign)), 0, sigsetSize, 0, 0)
		}
	})
	var after action
	get(int(syscall.SIGTERM), &after)
	if n != 2 || after != before {
		t.Fatalf("restored %d handlers, SIGTERM's is %v, was %v", n, after, before)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case <-c:
	case <-time.After(60 * time.Second):
		t.Fatal("SIGTERM did not reach the program after Keep")
	}
	if Keep(func() {}) != 0 {
		t.Fatal("a call that changes nothing had handlers restored")
	}
}

//go:build race

package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Under the race detector the small frames go through syscall.Read and
// syscall.Write instead of raw system calls: those two tell the detector
// that what a goroutine did before writing to a socket happens before
// what another does after reading from one (the net package's reads and
// writes do the same). Raw calls hide that edge, so memory a server
// wrote for one request and read for the next (a put, then a get of the
// same bytes over another connection) was reported as a race that the
// round trip in between rules out.

// rawRead is read(2) on fd; p is not empty and fd is non-blocking.
func rawRead(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Read(int(fd), p)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// rawSend writes p on fd; p is not empty. Race builds are test binaries,
// where the Go runtime turns SIGPIPE on a socket into EPIPE.
func rawSend(fd uintptr, p []byte) (uintptr, unix.Errno) {
	n, err := syscall.Write(int(fd), p)
	if err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return 0, e
		}
		return 0, unix.EIO
	}
	return uintptr(n), 0
}

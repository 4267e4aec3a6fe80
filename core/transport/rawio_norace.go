//go:build !race

package transport

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawRead is read(2) on fd as a raw system call; p is not empty and fd
// is non-blocking (a RawConn callback's descriptor).
func rawRead(fd uintptr, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawSend is send(2) of p on fd as a raw system call, with MSG_NOSIGNAL;
// p is not empty.
func rawSend(fd uintptr, p []byte) (uintptr, unix.Errno) {
	m, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		unix.MSG_NOSIGNAL, 0, 0)
	return m, e
}

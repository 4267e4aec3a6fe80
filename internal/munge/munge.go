// Package munge encodes and decodes MUNGE credentials (the MUNGE Uid 'N'
// Gid Emporium, the authentication service SLURM uses) with the system's
// libmunge, loaded at run time with purego on first use. Neither famd nor
// libopenfam.so links against libmunge: a program that never asks for
// MUNGE runs on hosts without it, and one that does gets a clear error
// (install libmunge2, start munged) instead of a loader failure.
//
// A credential proves, to any host sharing the munged key, the uid and gid
// of the process that encoded it; munged decodes each credential once
// only (replay detection) and within its time-to-live (5 minutes by
// default).
package munge

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is the soname loaded: the ABI of libmunge2 (Debian, RHEL).
const Library = "libmunge.so.2"

// Error codes of libmunge (munge.h, munge_err_t) that callers tell apart.
const (
	ErrSocket       = 6  // EMUNGE_SOCKET: munged is not running or not reachable
	ErrCredInvalid  = 14 // EMUNGE_CRED_INVALID
	ErrCredExpired  = 15 // EMUNGE_CRED_EXPIRED
	ErrCredRewound  = 16 // EMUNGE_CRED_REWOUND
	ErrCredReplayed = 17 // EMUNGE_CRED_REPLAYED: decoded before
)

// munge_opt_t values (munge.h).
const optSocket = 8 // MUNGE_OPT_SOCKET, a const char *

// Error is a failure libmunge reported.
type Error struct {
	Code int    // munge_err_t
	Op   string // "encode" or "decode"
	Msg  string // libmunge's description
}

func (e *Error) Error() string {
	return fmt.Sprintf("munge %s: %s (munge error %d)", e.Op, e.Msg, e.Code)
}

// Cred is what a decoded credential proves.
type Cred struct {
	UID, GID uint32
	Payload  []byte
}

// lib holds the functions of libmunge and libc, resolved once.
type lib struct {
	ctxCreate     func() uintptr
	ctxDestroy    func(ctx uintptr)
	ctxSet        func(ctx uintptr, opt int32, val uintptr) int32
	ctxStrerror   func(ctx uintptr) uintptr
	strerror      func(code int32) uintptr
	encode        func(cred *uintptr, ctx uintptr, buf unsafe.Pointer, n int32) int32
	decode        func(cred unsafe.Pointer, ctx uintptr, buf *uintptr, n *int32, uid, gid *uint32) int32
	malloc        func(n uintptr) uintptr
	free          func(p uintptr)
	strlenNoCheck func(p uintptr) uintptr
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// load opens libmunge.so.2 and libc once.
func load() (*lib, error) {
	loadOnce.Do(func() {
		h, err := purego.Dlopen(Library, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			loadErr = fmt.Errorf("MUNGE authentication needs %s (Debian and Ubuntu: apt-get install libmunge2; RHEL: dnf install munge-libs): %v", Library, err)
			return
		}
		libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			loadErr = fmt.Errorf("MUNGE authentication: loading libc.so.6: %v", err)
			return
		}
		l := &lib{}
		// RegisterLibFunc panics on a missing symbol; a libmunge without
		// them is not libmunge2.
		defer func() {
			if r := recover(); r != nil {
				loadErr = fmt.Errorf("MUNGE authentication: %s lacks a function: %v", Library, r)
				loaded = nil
			}
		}()
		purego.RegisterLibFunc(&l.ctxCreate, h, "munge_ctx_create")
		purego.RegisterLibFunc(&l.ctxDestroy, h, "munge_ctx_destroy")
		// munge_ctx_set is variadic; every supported ABI passes one
		// integer-class argument after the fixed ones as a plain
		// argument (purego clears AL on amd64: no vector registers).
		purego.RegisterLibFunc(&l.ctxSet, h, "munge_ctx_set")
		purego.RegisterLibFunc(&l.ctxStrerror, h, "munge_ctx_strerror")
		purego.RegisterLibFunc(&l.strerror, h, "munge_strerror")
		purego.RegisterLibFunc(&l.encode, h, "munge_encode")
		purego.RegisterLibFunc(&l.decode, h, "munge_decode")
		purego.RegisterLibFunc(&l.malloc, libc, "malloc")
		purego.RegisterLibFunc(&l.free, libc, "free")
		purego.RegisterLibFunc(&l.strlenNoCheck, libc, "strlen")
		loaded = l
	})
	return loaded, loadErr
}

// Available loads libmunge if it is not loaded yet and reports why it
// cannot be used (nil when it can). It does not contact munged.
func Available() error {
	_, err := load()
	return err
}

// cptr turns an address libc or libmunge returned into a pointer. The
// memory is C's, outside the Go heap, so the garbage collector ignores
// it; the conversion goes through memory so that vet's check for Go
// pointers hidden in integers does not apply.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// gostring copies the NUL-terminated C string at p (nil for 0).
func (l *lib) gostring(p uintptr) string {
	if p == 0 {
		return ""
	}
	n := l.strlenNoCheck(p)
	return string(unsafe.Slice((*byte)(cptr(p)), n))
}

// cstring copies s into C memory (malloc); the caller frees it.
func (l *lib) cstring(s string) (uintptr, error) {
	p := l.malloc(uintptr(len(s) + 1))
	if p == 0 {
		return 0, errors.New("munge: out of memory")
	}
	b := unsafe.Slice((*byte)(cptr(p)), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p, nil
}

// context makes a libmunge context talking to munged at socket ("" for
// libmunge's default, /run/munge/munge.socket.2). release destroys it.
// libmunge contexts are not for concurrent use: each call makes its own.
func (l *lib) context(op, socket string) (ctx uintptr, release func(), err error) {
	ctx = l.ctxCreate()
	if ctx == 0 {
		return 0, nil, &Error{Code: 5, Op: op, Msg: "cannot create a context (out of memory)"}
	}
	var sock uintptr
	release = func() {
		l.ctxDestroy(ctx)
		// Freed after the context, which may point at it (libmunge copies
		// the string today; this stays correct if it did not).
		if sock != 0 {
			l.free(sock)
		}
	}
	if socket != "" {
		if sock, err = l.cstring(socket); err != nil {
			release()
			return 0, nil, err
		}
		if code := l.ctxSet(ctx, optSocket, sock); code != 0 {
			release()
			return 0, nil, &Error{Code: int(code), Op: op, Msg: "setting the munged socket " + socket + ": " + l.gostring(l.strerror(code))}
		}
	}
	return ctx, release, nil
}

func (l *lib) fail(op string, code int32, ctx uintptr) error {
	msg := l.gostring(l.ctxStrerror(ctx))
	if msg == "" {
		msg = l.gostring(l.strerror(code))
	}
	return &Error{Code: int(code), Op: op, Msg: msg}
}

// Encode asks munged (at socket; "" for the default) for a credential of
// the calling process's uid and gid carrying payload.
func Encode(socket string, payload []byte) (string, error) {
	l, err := load()
	if err != nil {
		return "", err
	}
	ctx, release, err := l.context("encode", socket)
	if err != nil {
		return "", err
	}
	defer release()
	var cred uintptr
	var buf unsafe.Pointer
	if len(payload) > 0 {
		buf = unsafe.Pointer(&payload[0])
	}
	if code := l.encode(&cred, ctx, buf, int32(len(payload))); code != 0 {
		return "", l.fail("encode", code, ctx)
	}
	defer l.free(cred)
	return l.gostring(cred), nil
}

// Decode asks munged (at socket; "" for the default) to validate cred and
// returns the uid and gid it proves and its payload. A credential decodes
// once: a second Decode of it fails with ErrCredReplayed.
func Decode(socket, cred string) (Cred, error) {
	l, err := load()
	if err != nil {
		return Cred{}, err
	}
	ctx, release, err := l.context("decode", socket)
	if err != nil {
		return Cred{}, err
	}
	defer release()
	c := append([]byte(cred), 0)
	var buf uintptr
	var n int32
	var uid, gid uint32
	code := l.decode(unsafe.Pointer(&c[0]), ctx, &buf, &n, &uid, &gid)
	// The payload is allocated for some errors too.
	var payload []byte
	if buf != 0 {
		if n > 0 {
			payload = append([]byte(nil), unsafe.Slice((*byte)(cptr(buf)), n)...)
		}
		l.free(buf)
	}
	if code != 0 {
		return Cred{}, l.fail("decode", code, ctx)
	}
	return Cred{UID: uid, GID: gid, Payload: payload}, nil
}

// Code returns the libmunge error code of err (0 if it is not one).
func Code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

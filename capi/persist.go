package capi

/*
#include "ofam.h"
*/
import "C"

import (
	"syscall"

	"github.com/gofam/openfam/core"
)

// Persistence (issue 20): the C fast path lists the persistent items it
// writes (persist.c); the core's flush (fam_quiet, the lazy timer) runs
// that list through the hook registered here, so a quiet covers Go and C
// writes alike.

// startPersist tells the fast path the instance's policy and hooks its
// flush into the core's. Called once fam_initialize has an instance.
func startPersist(f *core.Fam) {
	C.ofam_set_persist_policy(C.int(f.PersistPolicy()))
	f.SetPersistHook(func() error {
		if e := C.ofam_persist_flush(); e != 0 {
			return errf(core.CodeResource, "fam_quiet", "writing persistent data items to stable storage: %v", syscall.Errno(e))
		}
		return nil
	})
}

//export ofam_go_persist
func ofam_go_persist(ctx, h, off, n C.uint64_t) (r C.int) {
	op := ctxOp(ctx, "fam_persist", "fam_ctx_persist")
	defer recoverInt(op, &r)
	_, _, it, err := dataArgs(op, ctx, h)
	if err != nil {
		return setError(err)
	}
	return rc(it.Persist(uint64(off), uint64(n)))
}

package capi

/*
#include "ofam.h"
*/
import "C"

import "github.com/gofam/openfam/core"

// The C layer passes rights to the core as plain numbers. Each line fails
// to compile (constant index out of range) if a C enumerator and its Go
// counterpart ever differ. tables_gen.go checks the error codes, kinds and
// operations the same way.
var _ = [1]struct{}{}[C.OFAM_RIGHT_READ-int(core.RightRead)]
var _ = [1]struct{}{}[C.OFAM_RIGHT_WRITE-int(core.RightWrite)]

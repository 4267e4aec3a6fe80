package capi

/*
#include "ofam.h"
*/
import "C"

import (
	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// The C layer passes kinds, operations and rights to the core as plain
// numbers. Each line fails to compile (constant index out of range) if a C
// enumerator and its Go counterpart ever differ.
var _ = [1]struct{}{}[C.OFAM_K_INT32-int(amo.Int32)]
var _ = [1]struct{}{}[C.OFAM_K_INT64-int(amo.Int64)]
var _ = [1]struct{}{}[C.OFAM_K_UINT32-int(amo.Uint32)]
var _ = [1]struct{}{}[C.OFAM_K_UINT64-int(amo.Uint64)]
var _ = [1]struct{}{}[C.OFAM_K_FLOAT32-int(amo.Float32)]
var _ = [1]struct{}{}[C.OFAM_K_FLOAT64-int(amo.Float64)]
var _ = [1]struct{}{}[C.OFAM_K_INT128-int(amo.Int128)]
var _ = [1]struct{}{}[C.OFAM_OP_SET-int(amo.Set)]
var _ = [1]struct{}{}[C.OFAM_OP_FETCH-int(amo.Fetch)]
var _ = [1]struct{}{}[C.OFAM_OP_ADD-int(amo.Add)]
var _ = [1]struct{}{}[C.OFAM_OP_SUBTRACT-int(amo.Subtract)]
var _ = [1]struct{}{}[C.OFAM_OP_MIN-int(amo.Min)]
var _ = [1]struct{}{}[C.OFAM_OP_MAX-int(amo.Max)]
var _ = [1]struct{}{}[C.OFAM_OP_AND-int(amo.And)]
var _ = [1]struct{}{}[C.OFAM_OP_OR-int(amo.Or)]
var _ = [1]struct{}{}[C.OFAM_OP_XOR-int(amo.Xor)]
var _ = [1]struct{}{}[C.OFAM_OP_SWAP-int(amo.Swap)]
var _ = [1]struct{}{}[C.OFAM_OP_COMPARE_SWAP-int(amo.CompareSwap)]
var _ = [1]struct{}{}[C.OFAM_RIGHT_READ-int(core.RightRead)]
var _ = [1]struct{}{}[C.OFAM_RIGHT_WRITE-int(core.RightWrite)]
var _ = [1]struct{}{}[C.FAM_EINVAL-int(core.CodeInvalid)]
var _ = [1]struct{}{}[C.FAM_EUNKNOWN-int(core.CodeUnknown)]
var _ = [1]struct{}{}[C.FAM_ERANGE-int(core.CodeOutOfRange)]

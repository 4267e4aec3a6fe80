#include "textflag.h"

// func cas128(p unsafe.Pointer, oldLo, oldHi, newLo, newHi uint64) (prevLo, prevHi uint64, swapped bool)
TEXT ·cas128(SB), NOSPLIT, $0-57
	MOVQ p+0(FP), DI
	MOVQ oldLo+8(FP), AX
	MOVQ oldHi+16(FP), DX
	MOVQ newLo+24(FP), BX
	MOVQ newHi+32(FP), CX
	LOCK
	CMPXCHG16B (DI)
	// On success RDX:RAX still holds old, which equals the previous value;
	// on failure the instruction loaded the previous value into RDX:RAX.
	SETEQ swapped+56(FP)
	MOVQ AX, prevLo+40(FP)
	MOVQ DX, prevHi+48(FP)
	RET

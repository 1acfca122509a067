//go:build !race

#include "textflag.h"

// func Line(p uintptr)
TEXT ·Line(SB), NOSPLIT|NOFRAME, $0-8
	MOVD p+0(FP), R0
	PRFM (R0), PLDL1KEEP
	RET

// func Lines4(a, b, c, d uintptr)
TEXT ·Lines4(SB), NOSPLIT|NOFRAME, $0-32
	MOVD a+0(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD b+8(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD c+16(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD d+24(FP), R0
	PRFM (R0), PLDL1KEEP
	RET

#include "textflag.h"

// func dotFMA(a, b *float32, n int) float32
//
// Inner product of a[:n] and b[:n] with AVX2 FMA: four 8-lane accumulators
// over 32-sample blocks, then 8-sample blocks, then a scalar tail.
TEXT ·dotFMA(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

block32:
	CMPQ CX, $32
	JLT  block8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  block32

block8:
	CMPQ CX, $8
	JLT  reduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  block8

reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

tail:
	TESTQ CX, CX
	JEQ   done
	VMOVSS (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot3FMA(a0, a1, a2, b *float32, n int, out *[3]float32)
//
// Three inner products of a0, a1 and a2 with the same b, n a multiple of 8:
// b is loaded once per block for all three, which is what upsampling by 3
// or 6 needs (every phase of the filter against one input window).
TEXT ·dot3FMA(SB), NOSPLIT, $0-48
	MOVQ a0+0(FP), AX
	MOVQ a1+8(FP), BX
	MOVQ a2+16(FP), DX
	MOVQ b+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

block16:
	CMPQ CX, $16
	JLT  block8
	VMOVUPS (DI), Y6
	VMOVUPS 32(DI), Y7
	VFMADD231PS (AX), Y6, Y0
	VFMADD231PS (BX), Y6, Y1
	VFMADD231PS (DX), Y6, Y2
	VFMADD231PS 32(AX), Y7, Y3
	VFMADD231PS 32(BX), Y7, Y4
	VFMADD231PS 32(DX), Y7, Y5
	ADDQ $64, AX
	ADDQ $64, BX
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  block16

block8:
	CMPQ CX, $8
	JLT  reduce
	VMOVUPS (DI), Y6
	VFMADD231PS (AX), Y6, Y0
	VFMADD231PS (BX), Y6, Y1
	VFMADD231PS (DX), Y6, Y2

reduce:
	VADDPS Y3, Y0, Y0
	VADDPS Y4, Y1, Y1
	VADDPS Y5, Y2, Y2
	VEXTRACTF128 $1, Y0, X3
	VEXTRACTF128 $1, Y1, X4
	VEXTRACTF128 $1, Y2, X5
	VADDPS X3, X0, X0
	VADDPS X4, X1, X1
	VADDPS X5, X2, X2
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X1, X1, X1
	VHADDPS X1, X1, X1
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VMOVSS X0, (SI)
	VMOVSS X1, 4(SI)
	VMOVSS X2, 8(SI)
	VZEROUPPER
	RET

// func dot2FMA(a0, a1, b *float32, n int, out *[2]float32)
//
// Two inner products of a0 and a1 with the same b, n a multiple of 8: the
// upsampling-by-2 counterpart of dot3FMA.
TEXT ·dot2FMA(SB), NOSPLIT, $0-40
	MOVQ a0+0(FP), AX
	MOVQ a1+8(FP), BX
	MOVQ b+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

pair16:
	CMPQ CX, $16
	JLT  pair8
	VMOVUPS (DI), Y6
	VMOVUPS 32(DI), Y7
	VFMADD231PS (AX), Y6, Y0
	VFMADD231PS (BX), Y6, Y1
	VFMADD231PS 32(AX), Y7, Y2
	VFMADD231PS 32(BX), Y7, Y3
	ADDQ $64, AX
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  pair16

pair8:
	CMPQ CX, $8
	JLT  pairReduce
	VMOVUPS (DI), Y6
	VFMADD231PS (AX), Y6, Y0
	VFMADD231PS (BX), Y6, Y1

pairReduce:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VEXTRACTF128 $1, Y0, X2
	VEXTRACTF128 $1, Y1, X3
	VADDPS X2, X0, X0
	VADDPS X3, X1, X1
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X1, X1, X1
	VHADDPS X1, X1, X1
	VMOVSS X0, (SI)
	VMOVSS X1, 4(SI)
	VZEROUPPER
	RET

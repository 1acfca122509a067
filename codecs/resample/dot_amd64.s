#include "textflag.h"

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

// func polyFMA(out, coefs, x *float32, k, n, limit, up, stepBase, stepPhase int, pos *[2]int) int
//
// The whole polyphase loop of Resampler.run: while pos[0] (base) < n and
// fewer than limit outputs are written, out[i] is the inner product of phase
// pos[1] of coefs (k coefficients, k a multiple of 8) with x[base:base+k];
// then base and phase step by stepBase and stepPhase (phase wrapping at up
// into base). pos is updated; the count of outputs is returned. One call per
// chunk instead of one per output sample keeps the Go loop, the call and the
// bounds checks out of the per-sample cost.
TEXT ·polyFMA(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), R8
	MOVQ coefs+8(FP), R9
	MOVQ x+16(FP), R10
	MOVQ k+24(FP), R11
	MOVQ n+32(FP), R12
	MOVQ limit+40(FP), R13
	MOVQ pos+72(FP), BX
	MOVQ 0(BX), CX
	MOVQ 8(BX), DX
	MOVQ R11, R14
	SHLQ $2, R14
	XORQ AX, AX

polyNext:
	CMPQ CX, R12
	JGE  polyDone
	CMPQ AX, R13
	JGE  polyDone
	MOVQ DX, SI
	IMULQ R14, SI
	ADDQ R9, SI
	LEAQ (R10)(CX*4), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ R11, BX

poly16:
	CMPQ BX, $16
	JLT  poly8
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, BX
	JMP  poly16

poly8:
	TESTQ BX, BX
	JEQ   polyReduce
	VMOVUPS (SI), Y2
	VFMADD231PS (DI), Y2, Y0

polyReduce:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (R8)(AX*4)
	INCQ AX
	ADDQ stepBase+56(FP), CX
	ADDQ stepPhase+64(FP), DX
	CMPQ DX, up+48(FP)
	JLT  polyNext
	SUBQ up+48(FP), DX
	INCQ CX
	JMP  polyNext

polyDone:
	MOVQ pos+72(FP), BX
	MOVQ CX, 0(BX)
	MOVQ DX, 8(BX)
	MOVQ AX, ret+80(FP)
	VZEROUPPER
	RET

// func int16sToFloat(dst *float32, src *int16, n int)
//
// dst[i] = float32(src[i]) for n samples, n a multiple of 8.
TEXT ·int16sToFloat(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

i2fLoop:
	CMPQ CX, $8
	JLT  i2fDone
	VPMOVSXWD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  i2fLoop

i2fDone:
	VZEROUPPER
	RET

// func floatsToInt16(dst *int16, src *float32, n int)
//
// dst[i] = src[i] rounded to the nearest integer (ties to even, the CPU's
// default rounding) and saturated to int16, for n samples, n a multiple of
// 16. The values are clamped before the conversion so that nothing outside
// the int32 range reaches VCVTPS2DQ; VPACKSSDW saturates and VPERMQ undoes
// its lane interleaving.
TEXT ·floatsToInt16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x46fffe00, AX // 32767.0
	MOVQ AX, X4
	VBROADCASTSS X4, Y4
	MOVL $0xc7000000, AX // -32768.0
	MOVQ AX, X5
	VBROADCASTSS X5, Y5

f2iLoop:
	CMPQ CX, $16
	JLT  f2iDone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMINPS Y4, Y0, Y0
	VMINPS Y4, Y1, Y1
	VMAXPS Y5, Y0, Y0
	VMAXPS Y5, Y1, Y1
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VPACKSSDW Y1, Y0, Y0
	VPERMQ $0xd8, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JMP  f2iLoop

f2iDone:
	VZEROUPPER
	RET

// func interleaveFloats(dst, a, b *float32, n int)
//
// dst[2i] = a[i], dst[2i+1] = b[i] for i < n, n a multiple of 8: eight
// pairs per step with vector stores (scalar stores followed by the vector
// loads of floatsToInt16 would stall store forwarding).
TEXT ·interleaveFloats(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX

ilvLoop:
	CMPQ CX, $8
	JLT  ilvDone
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	VUNPCKLPS Y1, Y0, Y2 // a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS Y1, Y0, Y3 // a2 b2 a3 b3 | a6 b6 a7 b7
	VPERM2F128 $0x20, Y3, Y2, Y0
	VPERM2F128 $0x31, Y3, Y2, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  ilvLoop

ilvDone:
	VZEROUPPER
	RET

// func firFMA(out, coefs, x *float32, k, n int)
//
// out[i] is the inner product of coefs[:k] with x[i:i+k] for i < n (k > 0):
// a plain FIR vectorized across outputs (each coefficient broadcast and
// multiplied into 32 or 8 consecutive outputs), so no output needs a
// horizontal sum. It is the half-band filter's phase 1.
TEXT ·firFMA(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ coefs+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ k+24(FP), R8
	MOVQ n+32(FP), CX

fir32:
	CMPQ CX, $32
	JLT  fir8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R9
	MOVQ DX, R10
	MOVQ R8, R11

fir32Tap:
	VBROADCASTSS (R9), Y4
	VFMADD231PS (R10), Y4, Y0
	VFMADD231PS 32(R10), Y4, Y1
	VFMADD231PS 64(R10), Y4, Y2
	VFMADD231PS 96(R10), Y4, Y3
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ R11
	JNZ  fir32Tap
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP  fir32

fir8:
	CMPQ CX, $8
	JLT  fir1
	VXORPS Y0, Y0, Y0
	MOVQ SI, R9
	MOVQ DX, R10
	MOVQ R8, R11

fir8Tap:
	VBROADCASTSS (R9), Y4
	VFMADD231PS (R10), Y4, Y0
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ R11
	JNZ  fir8Tap
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  fir8

	// The last outputs one at a time, each the same chain of fused
	// multiply-adds as a vector lane above, so an output does not depend
	// on where a chunk ends.
fir1:
	TESTQ CX, CX
	JEQ   firDone
	VXORPS X0, X0, X0
	MOVQ SI, R9
	MOVQ DX, R10
	MOVQ R8, R11

fir1Tap:
	VMOVSS (R9), X4
	VFMADD231SS (R10), X4, X0
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ R11
	JNZ  fir1Tap
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JMP  fir1

firDone:
	VZEROUPPER
	RET

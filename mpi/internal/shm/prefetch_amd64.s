#include "textflag.h"

// func prefetch(addr unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetchWrite(addr unsafe.Pointer)
TEXT ·prefetchWrite(SB), NOSPLIT, $0-8
	MOVQ addr+0(FP), AX
	// PREFETCHW (AX), which the assembler does not know: 0F 0D /1.
	// A processor without it runs it as a NOP.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	RET

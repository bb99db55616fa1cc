// The kernel lab's stand-in for CUDA's cuda.h: nothing more is needed, as cuda_emu.h (included
// before the learner's source) declares what device code uses.
#pragma once

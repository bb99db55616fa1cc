// The kernel lab's stand-in for CUDA's mma.h: the warp matrix functions' types, so that a file
// that includes the header compiles (its other kernels trace), and a compile error at the
// learner's line naming any of the functions a kernel calls: the lab does not run the tensor
// cores' fragments on the CPU.
#pragma once
#include "cuda_bf16.h"
#include "cuda_fp16.h"
namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static constexpr int num_elements = 1;
    T x[num_elements];
};
template <class...> constexpr bool emu_emulated = false;
#define EMU_WMMA(name)                                                                                              \
    template <class... A> void name(A&&...) {                                                                       \
        static_assert(emu_emulated<A...>, "wmma::" #name " is not emulated: the kernel lab does not run the tensor " \
                                          "cores' warp matrix functions (mma.h) on the CPU");                       \
    }
EMU_WMMA(fill_fragment)
EMU_WMMA(load_matrix_sync)
EMU_WMMA(store_matrix_sync)
EMU_WMMA(mma_sync)
#undef EMU_WMMA
}  // namespace wmma
}  // namespace nvcuda

// The kernel lab's stand-in for cuda_bf16.h: __nv_bfloat16 is 16 bits (a sign, 8 exponent bits,
// 7 mantissa bits: float's top half), converted from float by rounding to the nearest even (NaN
// kept a NaN) and to float exactly; its arithmetic is float's, rounded back, as the GPU's bf16
// instructions round their exact result (a sum of two can differ in the last bit where float
// itself rounds first). The conversions, operators and intrinsics CUDA 12 declares for
// __nv_bfloat16 and __nv_bfloat162, by the same names; what it does not declare is left out,
// so code nvcc refuses is refused here too (mixing a __nv_bfloat16 and a float in one
// operator is ambiguous, as with CUDA's header).
#pragma once
#include <bit>
#include <cstdint>
#include "cuda_fp16.h"

struct alignas(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : __x(from_float(f)) {}
    __nv_bfloat16(double f) : __x(from_float((float)f)) {}
    __nv_bfloat16(int i) : __x(from_float((float)i)) {}
    __nv_bfloat16(unsigned i) : __x(from_float((float)i)) {}
    __nv_bfloat16(long long i) : __x(from_float((float)i)) {}
    __nv_bfloat16(unsigned long long i) : __x(from_float((float)i)) {}
    __nv_bfloat16(__half h) : __x(from_float((float)h)) {}
    operator float() const { return std::bit_cast<float>((uint32_t)__x << 16); }
    static unsigned short from_float(float f) {
        uint32_t bits = std::bit_cast<uint32_t>(f);
        if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40);  // a quiet NaN
        bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
        return (unsigned short)(bits >> 16);
    }
    __nv_bfloat16& operator+=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this + (float)o); }
    __nv_bfloat16& operator-=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this - (float)o); }
    __nv_bfloat16& operator*=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this * (float)o); }
    __nv_bfloat16& operator/=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this / (float)o); }
};
using nv_bfloat16 = __nv_bfloat16;
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
using nv_bfloat162 = __nv_bfloat162;

inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a + (float)b; }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a - (float)b; }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a * (float)b; }
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a / (float)b; }
inline __nv_bfloat16 operator-(__nv_bfloat16 a) { __nv_bfloat16 r = a; r.__x ^= 0x8000; return r; }
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a == (float)b; }
inline bool operator!=(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a != (float)b; }
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a < (float)b; }
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a > (float)b; }
inline bool operator<=(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a <= (float)b; }
inline bool operator>=(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a >= (float)b; }

inline __nv_bfloat16 __float2bfloat16(float f) { return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return f; }
inline float __bfloat162float(__nv_bfloat16 b) { return b; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) { __nv_bfloat16 b; b.__x = x; return b; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) { return std::fma((float)a, (float)b, (float)c); }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return a > b ? a : b; }
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return a < b ? a : b; }
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) { __nv_bfloat16 r = a; r.__x &= 0x7fff; return r; }

inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {a, b}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {a, a}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return {f.x, f.y}; }
inline float2 __bfloat1622float2(__nv_bfloat162 b) { return {(float)b.x, (float)b.y}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return {a, a}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 b) { return b.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 b) { return b.y; }
inline float __low2float(__nv_bfloat162 b) { return b.x; }
inline float __high2float(__nv_bfloat162 b) { return b.y; }
// bf162 arithmetic: each half as the bf16 intrinsic of the same name.
#define EMU_BF162(NAME, ONE) \
    inline __nv_bfloat162 NAME(__nv_bfloat162 a, __nv_bfloat162 b) { return {ONE(a.x, b.x), ONE(a.y, b.y)}; }
EMU_BF162(__hadd2, __hadd)
EMU_BF162(__hsub2, __hsub)
EMU_BF162(__hmul2, __hmul)
EMU_BF162(__h2div, __hdiv)
EMU_BF162(__hmax2, __hmax)
EMU_BF162(__hmin2, __hmin)
#undef EMU_BF162
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __nv_bfloat162 operator+(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }
inline __nv_bfloat162 operator-(__nv_bfloat162 a, __nv_bfloat162 b) { return __hsub2(a, b); }
inline __nv_bfloat162 operator*(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmul2(a, b); }
inline __nv_bfloat162 operator/(__nv_bfloat162 a, __nv_bfloat162 b) { return __h2div(a, b); }

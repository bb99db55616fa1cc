// The kernel lab's stand-in for cuda_fp8.h: the two 8-bit floats of Hopper and Blackwell,
// __nv_fp8_e4m3 (4 exponent bits, bias 7, 3 mantissa bits; largest 448; no infinity, one NaN
// pattern) and __nv_fp8_e5m2 (5 exponent bits, bias 15, 2 mantissa bits; largest 57344; IEEE
// infinities and NaNs). From float they round to the nearest even and saturate to the largest
// finite value (__NV_SATFINITE, what CUDA's constructors use); to float they convert exactly.
// No arithmetic: CUDA declares none for them (a kernel converts to half or float first).
#pragma once
#include <cmath>
#include <cstdint>
#include "cuda_fp16.h"

typedef unsigned char __nv_fp8_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

// The float of an 8-bit pattern with `man` mantissa bits and exponent bias `bias`; `ieee`: the
// all-ones exponent holds infinities and NaNs (e5m2), else only 0x7f/0xff is NaN (e4m3).
inline float emu_fp8_to_float(unsigned char x, int man, int bias, bool ieee) {
    const int exp_bits = 7 - man, e = (x >> man) & ((1 << exp_bits) - 1), m = x & ((1 << man) - 1);
    const float sign = x & 0x80 ? -1.0f : 1.0f;
    if (ieee && e == (1 << exp_bits) - 1) return m ? NAN : sign * INFINITY;
    if (!ieee && (x & 0x7f) == 0x7f) return NAN;
    if (e == 0) return sign * std::ldexp((float)m, 1 - bias - man);
    return sign * std::ldexp((float)(m + (1 << man)), e - bias - man);
}

// The 8-bit pattern nearest `f` (ties to even), saturated to `largest` (a NaN stays a NaN).
inline unsigned char emu_fp8_from_float(float f, int man, int bias, bool ieee, float largest) {
    const unsigned char sign = std::signbit(f) ? 0x80 : 0;
    if (std::isnan(f)) return 0x7f;
    float a = std::fabs(f);
    if (a >= largest) a = largest;
    const int emin = 1 - bias;
    int e = a > 0 ? std::ilogb(a) : emin;
    if (e < emin) e = emin;
    float q = std::nearbyint(std::ldexp(a, man - e));  // mantissa units at this exponent, rounded to even
    if (q >= (float)(2 << man)) { q /= 2; ++e; }  // rounding carried into the next binade
    if (std::ldexp(q, e - man) > largest) return sign | emu_fp8_from_float(largest, man, bias, ieee, largest);
    const int m = (int)q;
    if (m < (1 << man)) return sign | (unsigned char)m;  // a subnormal (exponent field 0)
    return sign | (unsigned char)(((e + bias) << man) | (m - (1 << man)));
}

#define EMU_FP8(TYPE, MAN, BIAS, IEEE, LARGEST) \
    struct alignas(1) TYPE { \
        __nv_fp8_storage_t __x; \
        TYPE() = default; \
        TYPE(float f) : __x(emu_fp8_from_float(f, MAN, BIAS, IEEE, LARGEST)) {} \
        TYPE(double f) : TYPE((float)f) {} \
        TYPE(__half h) : TYPE((float)h) {} \
        TYPE(int i) : TYPE((float)i) {} \
        operator float() const { return emu_fp8_to_float(__x, MAN, BIAS, IEEE); } \
        operator __half() const { return (__half)(float)*this; } \
    };
EMU_FP8(__nv_fp8_e4m3, 3, 7, false, 448.0f)
EMU_FP8(__nv_fp8_e5m2, 2, 15, true, 57344.0f)
#undef EMU_FP8

// Without saturation a value past the largest (by more than half a step) is e4m3's NaN or e5m2's infinity.
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float f, __nv_saturation_t sat, __nv_fp8_interpretation_t kind) {
    const bool e4m3 = kind == __NV_E4M3;
    const float past = e4m3 ? 464.0f : 61440.0f;
    if (sat == __NV_NOSAT && std::fabs(f) >= past && !std::isnan(f))
        return (std::signbit(f) ? 0x80 : 0) | (e4m3 ? 0x7f : 0x7c);
    return e4m3 ? __nv_fp8_e4m3(f).__x : __nv_fp8_e5m2(f).__x;
}

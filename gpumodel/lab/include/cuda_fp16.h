// The kernel lab's stand-in for cuda_fp16.h: half is g++'s _Float16 (IEEE binary16, as a GPU's),
// its arithmetic C++'s; the conversions and the common intrinsics, of half and of half2 (both halves at once).
#pragma once
using __half = _Float16;
using half = __half;
struct alignas(4) __half2 { __half x, y; };
using half2 = __half2;
inline __half __float2half(float x) { return (__half)x; }
inline __half __float2half_rn(float x) { return (__half)x; }
inline float __half2float(__half x) { return (float)x; }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hfma(__half a, __half b, __half c) { return (__half)((float)a * (float)b + (float)c); }
inline __half __hmax(__half a, __half b) { return a > b ? a : b; }
inline __half __hmin(__half a, __half b) { return a < b ? a : b; }
inline __half2 __floats2half2_rn(float a, float b) { return {(__half)a, (__half)b}; }
inline __half2 __float2half2_rn(float a) { return {(__half)a, (__half)a}; }
inline float2 __half22float2(__half2 h) { return {(float)h.x, (float)h.y}; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __half2 __float22half2_rn(float2 f) { return {(__half)f.x, (__half)f.y}; }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) { return a < 0 ? -a : a; }
// half2 arithmetic: each half as the half intrinsic of the same name.
#define EMU_HALF2(NAME, HALF) \
    inline __half2 NAME(__half2 a, __half2 b) { return {HALF(a.x, b.x), HALF(a.y, b.y)}; }
EMU_HALF2(__hadd2, __hadd)
EMU_HALF2(__hsub2, __hsub)
EMU_HALF2(__hmul2, __hmul)
EMU_HALF2(__h2div, __hdiv)
EMU_HALF2(__hmax2, __hmax)
EMU_HALF2(__hmin2, __hmin)
#undef EMU_HALF2
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __half2 __hneg2(__half2 a) { return {-a.x, -a.y}; }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
inline __half2 operator/(__half2 a, __half2 b) { return __h2div(a, b); }
inline __half2& operator+=(__half2& a, __half2 b) { return a = a + b; }
inline __half2& operator-=(__half2& a, __half2 b) { return a = a - b; }
inline __half2& operator*=(__half2& a, __half2 b) { return a = a * b; }
inline __half2& operator/=(__half2& a, __half2 b) { return a = a / b; }
inline __half2 make_half2(__half x, __half y) { return {x, y}; }

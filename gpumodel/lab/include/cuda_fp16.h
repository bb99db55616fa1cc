// The kernel lab's stand-in for cuda_fp16.h: half is g++'s _Float16 (IEEE binary16, as a GPU's),
// its arithmetic C++'s; the conversions and the common intrinsics.
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

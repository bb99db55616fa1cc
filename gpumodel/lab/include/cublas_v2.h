// The kernel lab's stand-in for cublas_v2.h: a kernel file may include it for its host code; the
// lab runs device code only, so the handle and status types are all there is.
#pragma once
typedef struct cublasContext* cublasHandle_t;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };

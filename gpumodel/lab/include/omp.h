// The kernel lab's stand-in for OpenMP's omp.h: a program's host code runs on one thread (the lab
// compiles it without -fopenmp, so a `#pragma omp` is ignored and a parallel region runs once, as
// with OMP_NUM_THREADS=1), and these calls answer for that one thread.
#pragma once
#include <chrono>
inline int omp_get_thread_num() { return 0; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_procs() { return 1; }
inline int omp_in_parallel() { return 0; }
inline void omp_set_num_threads(int) {}
inline double omp_get_wtime() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

"""The kernel lab's rules one at a time, each test naming the rule it guards: how a site's
sectors, ideal and wavefronts are counted, which site is the worst, which source line an access
is charged to, what the traced workload holds, how large the build folder may grow, and the
faults the lab names as what they are (a barrier not every thread of the block reaches, an
allocation that fails, a stack overflow). Each count is derived by hand in its test.

tests/lab_mutants.py applies the hand-made mutants of issue 37 (to the lab's Python and
trace_runtime.cpp) one at a time and runs the test here that must kill each."""

import os
import pathlib
import time

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.hardware import REGISTER_BYTES_PER_FLOP
from gpumodel.lab import LabError, trace


def site(t, line: int, write: bool = False):
    """The one site of trace `t` on source line `line` that loads (or stores, `write`)."""
    (found,) = [s for s in t.sites if s.line == line and s.write == write]
    return found


WORST = r"""__global__ void k(const float4* a, const float* b, const float2* c, float* y) {
    const int t = threadIdx.x;
    const float4 wide = a[t];
    const float strided = b[2 * t];
    const float2 half = c[t < 16 ? t : 2 * t - 16];
    y[t] = wide.x + strided + half.x;
}"""


def test_the_worst_site_wastes_the_most_sectors_over_its_ideal_not_the_most_sectors():
    """Rule: `Trace.hottest` ranks sites by sectors over the ideal (the waste), not by sectors.
    Line 3, a coalesced float4 load: 32 x 16 B = 512 B in 16 sectors, the ideal, no waste.
    Line 4, floats two apart: 128 B asked for over 256 B, 8 sectors where 4 would do."""
    t = trace(WORST, "k", 1, 32, [np.ones((32, 4), np.float32), np.ones(64, np.float32),
                                  np.ones((48, 2), np.float32), np.zeros(32, np.float32)])
    wide, strided = site(t, 3), site(t, 4)
    assert (wide.sectors, wide.ideal_sectors) == (16, 16) and (strided.sectors, strided.ideal_sectors) == (8, 4)
    assert t.hottest(("global",)).line != 3 and t.hottest().line != 3


def test_between_sites_that_waste_as_much_the_worst_is_the_one_with_more_sectors():
    """Rule: a tie in waste goes to the site with more sectors (the larger share of traffic).
    Line 4 wastes 4 sectors of 8 (see above). Line 5, float2 loads: lanes 0 to 15 read elements
    0 to 15 (128 B, 4 sectors), lanes 16 to 31 elements 16, 18, ..., 46 (8 B every 16 B: 8
    sectors); 32 x 8 B = 256 B asked for, ideally 8 sectors, 12 touched: 4 wasted too."""
    t = trace(WORST, "k", 1, 32, [np.ones((32, 4), np.float32), np.ones(64, np.float32),
                                  np.ones((48, 2), np.float32), np.zeros(32, np.float32)])
    strided, half = site(t, 4), site(t, 5)
    assert (half.sectors, half.ideal_sectors) == (12, 8)
    assert half.sectors - half.ideal_sectors == strided.sectors - strided.ideal_sectors
    assert t.hottest().line == 5 and "worst: line 5" in t.report(gpus=["A100-40GB"])


def test_an_access_that_straddles_two_sectors_counts_both():
    """Rule: an access counts every sector from its first byte to its last. A struct of six
    floats copied whole is read in 16-byte pieces (one access each, as 128-bit loads): element 1
    starts at byte 24, so its first piece, bytes 24 to 39, spans sectors 0 and 1, and its second,
    bytes 40 to 47, sector 1: 3 sectors, where 16 B and 8 B need 1 each (ideal 2)."""
    source = r"""struct six { float v[6]; };
__global__ void k(const float* x, float* y) {
    reinterpret_cast<six*>(y)[0] = reinterpret_cast<const six*>(x)[1];
}"""
    t = trace(source, "k", 1, 1, [np.arange(12, dtype=np.float32), np.zeros(6, np.float32)])
    load = site(t, 3)
    assert (load.instructions, load.sectors, load.ideal_sectors) == (2, 3, 2)


def test_the_ideal_rounds_a_partial_sector_up():
    """Rule: the ideal is the bytes a warp instruction asks for, in whole sectors, rounded up
    (ceil): 12 lanes reading 12 consecutive floats ask for 48 B, which take 2 sectors at best
    (not 1, which holds only 32 B); a lone lane's 4 B take 1 (not 0)."""
    source = r"""__global__ void k(const float* x, float* y) {
    const int t = threadIdx.x;
    if (t < 12) y[t] = x[t];
    if (t == 0) y[12] = x[12];
}"""
    t = trace(source, "k", 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])
    assert [(s.lanes, s.sectors, s.ideal_sectors) for s in (site(t, 3), site(t, 4))] == [(12, 2, 2), (1, 1, 1)]
    assert t.counts()["global loads"]["ideal"] == 3


def test_a_warp_uniform_128_bit_shared_load_takes_the_return_paths_two_wavefronts():
    """Rule: a shared-memory access takes at least its ideal wavefronts, the registers it
    returns at 32 per wavefront (`gm.simulate.wavefronts`), even when no bank is asked for more
    than one word. Every lane reading the same float4: one word per bank, but 32 x 4 registers,
    packed two per slot (lanes n and n^1 match): 64, so 2 wavefronts, the ideal too."""
    source = r"""__global__ void k(const float4* x, float4* y) {
    __shared__ float4 tile[32];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = tile[0];
}"""
    t = trace(source, "k", 1, 32, [np.ones((32, 4), np.float32), np.zeros((32, 4), np.float32)])
    (load,) = [s for s in t.sites if s.space == "shared" and not s.write]
    by_model = gm.simulate.wavefronts(np.tile(np.arange(4), (32, 1)))
    assert by_model == 2 and (load.instructions, load.wavefronts, load.ideal_wavefronts) == (1, by_model, by_model)


def test_an_access_in_an_inlined_device_function_is_charged_to_its_own_line():
    """Rule: a site's line is the innermost frame in the learner's source (where the access is
    written), not the kernel's line that calls the inlined device function."""
    source = r"""__device__ inline float get(const float* x, int i) {
    return 2.0f * x[i];
}
__global__ void k(const float* x, float* y) {
    y[threadIdx.x] = get(x, threadIdx.x);
}"""
    t = trace(source, "k", 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])
    assert [(s.line, s.write) for s in sorted(t.sites, key=lambda s: s.line)] == [(2, False), (5, True)]


def test_the_traced_workload_carries_the_register_bytes_of_the_flops_stated():
    """Rule: `Trace.workload(flops)` charges the register file 12 B per FMA (three 4-byte
    operands per 2 flops), as the model's analytic workloads do: 6,000 B for 1,000 flops."""
    source = r"""__global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }"""
    t = trace(source, "k", 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])
    assert REGISTER_BYTES_PER_FLOP == 6 and t.workload(flops=1000).bytes["registers"] == 6000
    assert t.workload().bytes["registers"] == 0


@pytest.mark.slow
def test_the_build_folder_holds_at_most_64_traced_executables(monkeypatch, tmp_path):
    """Rule: the build folder stays bounded: building one more executable removes the least
    recently used beyond 64 (about 50 KB each, so a few MB in all), manifest and file, whatever
    was there before."""
    from gpumodel.lab import builder

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(builder, "cache_folder", lambda: folder)
    for i in range(70):  # older ones, oldest first
        builder.cached(folder, f"trace-{i:064x}", lambda out, i=i: out.write_bytes(str(i).encode()))
        os.utime(folder / f"trace-{i:064x}.{builder.HASH}", ns=(10**9 * (i + 1),) * 2)
    exe = builder.build(r"""__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }""")
    kept = {p.name.removesuffix(f".{builder.HASH}") for p in folder.glob(f"trace-*.{builder.HASH}")}
    assert kept == {f"trace-{i:064x}" for i in range(7, 70)} | {exe.name.rsplit(".", 1)[0]}  # 71 built: the 7 oldest removed
    blobs = [p for p in folder.glob("trace-*") if not p.name.endswith(f".{builder.HASH}")]
    assert len(blobs) == 64 and exe in blobs


# Faults the lab names.

def barrier_fault(source: str, threads: int, args: list) -> str:
    with pytest.raises(LabError, match="barrier not reached by every thread of the block") as raised:
        trace(source, "k", 1, threads, args)
    return str(raised.value)


def test_a_barrier_inside_a_condition_some_threads_skip_is_a_fault():
    """Rule: a __syncthreads() that some threads of the block never reach (they return
    instead) is undefined in CUDA (the programming guide: only where the condition evaluates
    identically across the block), reported with the barrier's line and how many waited, whether
    the threads that wait run first or last."""
    lower = r"""__global__ void k(float* x) {
    if (threadIdx.x < 16) {
        x[threadIdx.x] = 1.0f;
        __syncthreads();
    }
}"""
    message = barrier_fault(lower, 32, [np.zeros(32, np.float32)])
    assert "16 of 32 threads of block (0, 0, 0) waited at the __syncthreads() at line 4" in message
    assert "the other 16 returned without reaching it" in message and "guard the work" in message
    upper = "__global__ void k(float* x) {\n    if (threadIdx.x >= 24) __syncthreads();\n}"
    assert "8 of 32 threads of block (0, 0, 0) waited at the __syncthreads() at line 2" in barrier_fault(
        upper, 32, [np.zeros(32, np.float32)])


def test_an_early_return_before_a_barrier_is_a_fault_only_where_it_splits_the_block():
    """Rule: `if (i >= n) return;` before a __syncthreads() is the same fault where the guard
    takes some threads of a block and not others (block 1 of 2 here: 40 of its 64 threads are
    in range), and none where every thread of each block is in range; threads may return after
    the block's last barrier."""
    source = r"""__global__ void k(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __shared__ float tile[64];
    tile[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = tile[threadIdx.x ^ 1];
    if (threadIdx.x % 2) return;
    y[i] += 1.0f;
}"""
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(LabError, match=r"40 of 64 threads of block \(1, 0, 0\) waited at the __syncthreads\(\) at line 6"):
        trace(source, "k", 2, 64, [x, np.zeros(128, np.float32), 104])
    y = np.zeros(128, np.float32)
    trace(source, "k", 2, 64, [x, y, 128])
    np.testing.assert_array_equal(y, x.reshape(-1, 2)[:, ::-1].ravel() + (np.arange(128) % 2 == 0))


def test_threads_waiting_at_two_different_barriers_are_a_fault():
    """Rule: every thread of the block must wait at the same __syncthreads() call: two calls in
    the two branches of an if are two barriers (undefined in CUDA), both lines named."""
    source = r"""__global__ void k(float* x) {
    if (threadIdx.x < 8) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    x[threadIdx.x] = 1.0f;
}"""
    message = barrier_fault(source, 32, [np.zeros(32, np.float32)])
    assert "8 of 32 threads of block (0, 0, 0) waited at the __syncthreads() at line 3" in message
    assert "the other 24 at line 5" in message


def test_an_allocation_that_fails_is_named_as_running_out_of_memory():
    """Rule: std::bad_alloc (a `new` of 2^40 floats, 4 TiB) is reported as running out of
    memory, with the thread that asked, not as an access far outside the arrays."""
    source = r"""__global__ void k(float* x) {
    float* big = new float[(size_t)x[1] << 40];
    big[threadIdx.x] = 1.0f;
    x[threadIdx.x] = big[(int)x[0]];
    delete[] big;
}"""
    with pytest.raises(LabError, match=r"k ran out of memory: .* thread \(0, 0, 0\) of block \(0, 0, 0\)") as raised:
        trace(source, "k", 1, 32, [np.ones(32, np.float32)])
    assert "outside its arrays" not in str(raised.value)


@pytest.mark.parametrize("body", [
    # deep recursion: a million frames
    """__device__ int depth(int n) {
    volatile float pad[8];
    pad[0] = n;
    return n == 0 ? 0 : 1 + depth(n - 1) + (int)pad[0] * 0;
}
__global__ void k(float* x) { x[threadIdx.x] = depth(1 << 20); }""",
    # a local array of 1 MiB, past the 256 kB stack (and past the guard page below it)
    """__global__ void k(float* x) {
    float big[1 << 18];
    for (int j = 0; j < (1 << 18); j += 1024) big[j] = x[0];
    x[threadIdx.x] = big[1024 * threadIdx.x];
}"""], ids=["recursion", "local-array"])
def test_a_stack_overflow_is_named_as_such(body):
    """Rule: a thread that runs past its fiber's 256 kB stack (into the guard page below it) is
    reported as a stack overflow, not as an access far outside the arrays."""
    with pytest.raises(LabError, match=r"k overflowed its thread's stack \(256 kB per thread in the lab\): "
                                       r"thread \(0, 0, 0\) of block \(0, 0, 0\)"):
        trace(body, "k", 1, 32, [np.ones(32, np.float32)])


def test_the_benchmarks_templated_sgemm_is_right_and_traced_in_full():
    """The 2D-blocktiling SGEMM `make bench` times (tests/lab_kernels/): C = A B at 128^3, and
    its global loads the ideal (a float4 of A and one of B per thread and step: 16 sectors a
    request), as a hand count gives."""
    source = (pathlib.Path(__file__).parent / "lab_kernels" / "sgemm_2d_blocktiling.cu").read_text()
    n = 128
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    t = trace(source, "sgemm_2d<128, 128, 8, 8, 8>", (1, 1), 256, [n, n, n, a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    loads = t.counts()["global loads"]
    assert loads["requests"] == 2 * 8 * n // 8 and loads["sectors"] == loads["ideal"] == 16 * loads["requests"]


# Races, the cache's safety and the time limit (issue 51).

RACES = r"""__global__ void k(float* y) {
    __shared__ float a[1], b[32];
    if (threadIdx.x % 32 == 0) a[0] = threadIdx.x;
    b[threadIdx.x % 32] = threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = a[0] + b[threadIdx.x % 32];
}"""


def test_races_are_listed_most_frequent_first():
    """Rule: `Trace.races` puts the hazard seen most often first. Two warps: line 3, lanes 0 of
    each warp write a[0], one write-after-write; line 4, each of b's 32 words written by warp 0
    then warp 1: 32 of them. Line 4's race first, though line 3 comes first in the source."""
    t = trace(RACES, "k", 1, 64, [np.zeros(64, np.float32)])
    assert [(r.hazard, r.first[0], r.count) for r in t.races] == [("write-after-write", 4, 32),
                                                                  ("write-after-write", 3, 1)]
    assert not any(r.one_warp for r in t.races)  # between two warps: __syncthreads()


UNINIT_ONE_WARP = r"""__global__ void k(const float* x, float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = x[threadIdx.x];
    y[threadIdx.x] = s[(threadIdx.x + 1) % 32] + s[threadIdx.x + 32];
}"""


def test_an_uninitialised_read_is_never_one_warps_race():
    """Rule: `one_warp` (the fix a __syncwarp()) is for races between lanes of one warp, never an
    uninitialised read. One warp of 32: line 4 reads s[t + 1] a lane writes at line 3 with no
    sync (the lab runs lane after lane: lane 0 reads s[1] before lane 1 writes it, lane 31 s[0]
    after lane 0 wrote it: write-after-read and read-after-write within the warp, one_warp), and
    s[t + 32], which no thread writes (an uninitialised read, 32 words: not one_warp)."""
    t = trace(UNINIT_ONE_WARP, "k", 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])
    kinds = {r.hazard: r for r in t.races}
    assert set(kinds) == {"read-after-write", "write-after-read", "uninitialized read"}
    assert kinds["read-after-write"].one_warp and "__syncwarp()" in kinds["read-after-write"].message
    assert kinds["uninitialized read"].count == 32 and not kinds["uninitialized read"].one_warp


ATOMIC_FIRST = r"""__global__ void k(float* y) {
    __shared__ unsigned int c[64];
    atomicExch(&c[threadIdx.x], threadIdx.x + 1u);
    __syncthreads();
    y[threadIdx.x] = c[63 - threadIdx.x];
}"""


def test_an_atomic_is_the_words_first_write():
    """Rule: an atomic initialises the word it touches (initcheck): 64 threads each atomicExch
    their word, then after the barrier read another's: no uninitialised read, no race."""
    y = np.zeros(64, np.float32)
    t = trace(ATOMIC_FIRST, "k", 1, 64, [y])
    assert t.races == [] and y.tolist() == list(range(64, 0, -1))


def test_pruning_keeps_exactly_the_most_recently_used(tmp_path):
    """Rule: `prune(folder, prefix, keep)` keeps the `keep` entries used last (manifest mtime),
    manifest and content, and removes the rest with their contents; other prefixes untouched.
    Five entries used at t = 1 .. 5 s, keep 3: entries 2, 3, 4 (the newest three) remain."""
    from gpumodel.lab import builder

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    for i in range(5):
        builder.cached(folder, f"x-{i}", lambda out, i=i: out.write_bytes(str(i).encode()))
        os.utime(folder / f"x-{i}.{builder.HASH}", ns=(10**9 * (i + 1),) * 2)
    other = builder.cached(folder, "y-0", lambda out: out.write_bytes(b"y"))
    builder.prune(folder, "x-", 3)
    names = sorted(p.name.split(".")[0] for p in folder.iterdir())
    assert names == ["x-2", "x-2", "x-3", "x-3", "x-4", "x-4", "y-0", "y-0"] and other.exists()
    assert builder.CACHE_KEEP == 64 and builder.RUNTIME_KEEP == 4 and builder.HEADER_KEEP == 4


def test_a_cache_folder_whose_parent_another_user_owns_is_refused(tmp_path, monkeypatch):
    """Rule: the cache's parent (each folder above it) must be owned by root or by you: its
    owner could swap the folder for another. As root, the parent given to uid 4242; otherwise as
    if you were another user (your own parent is then someone else's)."""
    from gpumodel.lab import builder

    parent = tmp_path / "parent"
    lab = parent / "lab"
    lab.mkdir(parents=True, mode=0o700)
    parent.chmod(0o755)
    if os.getuid() == 0:
        os.chown(parent, 4242, 4242)
        owner = 4242
    else:
        owner = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(builder.UnsafeCache, match=f"its parent {parent} is owned by uid {owner}, who could replace it"):
        builder.private(lab)


def test_the_time_limit_kills_the_whole_process_group():
    """Rule: past its time, `limits.run` kills the process's whole group, not only the process
    it started: a child in the background that would write a file a second later never does."""
    import tempfile
    import time

    from gpumodel.lab import limits

    with tempfile.TemporaryDirectory() as tmp:
        late = pathlib.Path(tmp) / "late"
        done = limits.run(["sh", "-c", f"(sleep 1; touch {late}) & wait"], 0.3, 10**9)
        assert done.stopped == "time"
        time.sleep(1.5)
        assert not late.exists()


def test_a_copy_two_processes_built_at_once_is_pruned_once_it_is_old(tmp_path):
    """Rule: of an entry pruning keeps, a file its manifest no longer records (two traces built
    the same header at once; the other's record won) is removed once `ORPHAN_SECONDS` old, and
    kept while younger (its builder may be compiling with it)."""
    from gpumodel.lab import builder

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    kept = builder.cached(folder, "header-k.h.gch", lambda out: out.write_bytes(b"the winner"))
    old, young = (builder._blob(folder, "header-k.h.gch", builder.digest(text)) for text in (b"old", b"young"))
    old.write_bytes(b"old")
    young.write_bytes(b"young")
    now = time.time_ns()
    os.utime(old, ns=(now - (builder.ORPHAN_SECONDS + 5) * 10**9,) * 2)
    os.utime(young, ns=(now - (builder.ORPHAN_SECONDS - 5) * 10**9,) * 2)
    builder.prune(folder, "header-", 4)
    assert kept.exists() and young.exists() and not old.exists()
    assert builder.ORPHAN_SECONDS == 600


def test_traces_building_one_file_at_once_share_the_first_recorded(tmp_path):
    """Rule: where another process records the file while this one builds it, this one uses
    the other's and drops its own copy: four traces started together leave one header, not four."""
    from gpumodel.lab import builder

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)

    def build(out):
        out.write_bytes(b"mine")  # meanwhile another process finishes first:
        theirs = builder._blob(folder, "h.gch", builder.digest(b"theirs"))
        theirs.write_bytes(b"theirs")
        builder._write_atomic(builder._manifest(folder, "h.gch"), f"{builder.HASH}\n{builder.digest(b'theirs')}")
    got = builder.cached(folder, "h.gch", build)
    assert got.read_bytes() == b"theirs"
    assert sorted(p.name for p in folder.iterdir()) == sorted([got.name, f"h.gch.{builder.HASH}"])


def test_every_hand_made_mutant_still_finds_the_text_it_mutates():
    """tests/lab_mutants.py applies each mutant by replacing a text that must occur once in its
    file: a change to the lab that moves that text leaves the mutant unapplied (make mutation
    stops), so it is caught here, at every test run."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lab_mutants", pathlib.Path(__file__).with_name("lab_mutants.py"))
    mutants = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutants)
    root = pathlib.Path(__file__).resolve().parent.parent
    counts = {name: (root / path).read_text().count(original) for name, (path, original, _, _) in mutants.MUTANTS.items()}
    assert counts == {name: 1 for name in mutants.MUTANTS}

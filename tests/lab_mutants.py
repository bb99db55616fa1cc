"""The hand-made mutants of the kernel lab (issue 37) that once survived the suite, each with
the test that must now kill it: of tests/test_lab_rules.py, or of another file named as
"test_lab_safety.py::test_name" (mutmut, `make mutation`, mutates only the core Python modules;
these mutate the lab's reader, builder, limits, reporter, its C++ runtime and gpumodel/folders.py).

For each mutant: a copy of gpumodel/ and tests/ in a temporary folder, the one change applied
(its text must occur exactly once), the guarding test run there with its own build folder.
First the same tests on an unmutated copy, which must pass (else a "kill" means nothing).
Prints killed or SURVIVED per mutant, then the score per mutated file (mutmut does not run
over the lab's modules: their tests build C++ or run Triton's interpreter, seconds a mutant);
exits 1 if any survived.

    python tests/lab_mutants.py [name ...]      # default: every mutant
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
READER, BUILDER, REPORTER = "gpumodel/lab/reader.py", "gpumodel/lab/builder.py", "gpumodel/lab/reporter.py"
RUNTIME = "gpumodel/lab/trace_runtime.cpp"
LIMITS, FOLDERS = "gpumodel/lab/limits.py", "gpumodel/folders.py"
TRITON, TRITON_ADAPTER = "gpumodel/lab/triton_trace.py", "gpumodel/lab/triton_adapter.py"
RUNNER = "gpumodel/lab/runner.py"

MUTANTS = {
    # name: (file, original text, mutated text, the test that kills it)
    "worst-by-sectors": (REPORTER, "return (size * (got - ideal), size * got)", "return (size * got, size * (got - ideal))",
                         "test_the_worst_site_wastes_the_most_sectors_over_its_ideal_not_the_most_sectors"),
    "worst-ties-fewest": (REPORTER, "return (size * (got - ideal), size * got)", "return (size * (got - ideal), -size * got)",
                          "test_between_sites_that_waste_as_much_the_worst_is_the_one_with_more_sectors"),
    "straddle-last-sector-dropped": (RUNTIME, "touched.push_back((x->addr + x->size - 1) / SECTOR);", "",
                                     "test_an_access_that_straddles_two_sectors_counts_both"),
    "ideal-floored": (RUNTIME, "s.ideal_sectors += (distinct_bytes(lanes) + SECTOR - 1) / SECTOR;",
                      "s.ideal_sectors += distinct_bytes(lanes) / SECTOR;", "test_the_ideal_rounds_a_partial_sector_up"),
    "wavefront-ideal-ignored": (RUNTIME, "return {std::max(worst, ideal), ideal};", "return {worst, ideal};",
                                "test_a_warp_uniform_128_bit_shared_load_takes_the_return_paths_two_wavefronts"),
    "outermost-frame": (READER, "line, *outer = frames.get(o) or [0]", "*outer, line = frames.get(o) or [0]",
                        "test_an_access_in_an_inlined_device_function_is_charged_to_its_own_line"),
    "registers-dropped": (REPORTER, '{"registers": REGISTER_BYTES_PER_FLOP * flops, ', '{"registers": 0.0, ',
                          "test_the_traced_workload_carries_the_register_bytes_of_the_flops_stated"),
    "cache-bound-a-million": (BUILDER, "\nCACHE_KEEP = 64\n", "\nCACHE_KEEP = 10**6\n",
                              "test_the_build_folder_holds_at_most_64_traced_executables"),
    # issue 51: the race rules, the cache's safety and the time limit
    "races-least-frequent-first": (REPORTER, "(race.hazard == \"uninitialized read\", -race.count, race.first",
                                   "(race.hazard == \"uninitialized read\", race.count, race.first",
                                   "test_races_are_listed_most_frequent_first"),
    "uninitialised-read-one-warp": (REPORTER, "count, one_warp and hazard != uninitialized, bool(between and l1 and l2),",
                                    "count, one_warp, bool(between and l1 and l2),",
                                    "test_an_uninitialised_read_is_never_one_warps_race"),
    "atomic-not-a-first-write": (RUNTIME, "written.insert(key);\n            continue;", "continue;",
                                 "test_an_atomic_is_the_words_first_write"),
    "parent-owner-unchecked": (FOLDERS, "if above.st_uid not in (0, os.getuid()):", "if False:",
                               "test_a_cache_folder_whose_parent_another_user_owns_is_refused"),
    "time-limit-kills-the-leader-only": (LIMITS, "os.killpg(proc.pid, signal.SIGKILL)", "os.kill(proc.pid, signal.SIGKILL)",
                                         "test_the_time_limit_kills_the_whole_process_group"),
    "prune-keeps-one-more": (BUILDER, "key=used, reverse=True)\n", "key=used, reverse=True)[1:]\n",
                             "test_pruning_keeps_exactly_the_most_recently_used"),
    "failed-compile-not-cached": (BUILDER, "_write_atomic(_manifest(folder, name), f\"error\\n{err}\")", "pass",
                                  "test_lab_safety.py::test_a_failed_build_is_cached_and_fails_again_at_once_with_the_same_message"),
    # issue 72: the Triton lab (triton_trace, triton_adapter), the whole program's runner, the reader's launches
    "triton-arrays-unaligned": (TRITON, "start += -(-(end - first) // ALIGN) * ALIGN", "start += end - first",
                                "test_lab_triton_layout.py::test_each_array_starts_at_a_256_byte_boundary"),
    "triton-straddle-first-sector-only": (
        TRITON, "np.concatenate([gpu_like // SECTOR_BYTES, (gpu_like + size - 1) // SECTOR_BYTES])",
        "gpu_like // SECTOR_BYTES", "test_lab_triton_layout.py::test_an_element_that_straddles_two_sectors_is_charged_both"),
    "triton-fp32-dot-as-fp32": (TRITON, '"fp32": "tf32"', '"fp32": "fp32"',
                                "test_lab_triton_layout.py::test_an_fp32_dot_runs_on_the_tf32_tensor_cores"),
    "triton-grid-y-fastest": (TRITON, "return x + dims[0] * (y + dims[1] * z)", "return y + dims[1] * (x + dims[0] * z)",
                              "test_lab_triton_layout.py::test_a_2d_grids_programs_are_numbered_in_launch_order_x_fastest"),
    "triton-programs-per-sm-ignored": (
        TRITON, 'wave = int(g.sms.value) * _check.one("programs_per_sm", programs_per_sm)', "wave = int(g.sms.value)",
        "test_lab_triton_layout.py::test_programs_per_sm_sets_the_waves_size"),
    "triton-wave-keeps-all-in-l2": (
        TRITON, "kept = min(1.0, l2 / (distinct * SECTOR_BYTES)) if distinct else 1.0", "kept = 1.0",
        "test_lab_triton_layout.py::test_a_wave_that_reads_more_than_l2_holds_rereads_what_it_could_not_keep"),
    "triton-time-limit-names-no-line": (
        TRITON, '(f", at line {line}" if line else "")', '""',
        "test_lab_triton.py::test_an_endless_kernel_is_stopped_at_its_time_limit_naming_its_line"),
    "triton-interpret-left-set": (
        TRITON_ADAPTER, 'os.environ.pop("TRITON_INTERPRET", None)', "pass",
        "test_lab_triton.py::test_bad_input_is_refused_by_name_and_the_interpreter_is_left_as_found"),
    "runner-traced-launches-uncapped": (RUNNER, 'f"max_launches {MAX_TRACED_LAUNCHES}"', 'f"max_launches {10**6}"',
                                        "test_lab_program.py::test_launches_past_the_hundredth_run_untraced"),
    "runner-grid-sync-taken-as-cooperative": (
        RUNNER, "        if not blocks:\n", "        if False:\n",
        "test_lab_sources.py::test_the_grid_group_gives_its_ranks_and_its_sync_outside_a_cooperative_launch_is_named_at_its_line"),
    "runner-program-shared-mem-dropped": (
        RUNNER, "one = Launch(tuple(dims[:3]), tuple(dims[3:6]), dims[6], timeout, max_threads)",
        "one = Launch(tuple(dims[:3]), tuple(dims[3:6]), 0, timeout, max_threads)",
        "test_lab_program.py::test_a_programs_launch_past_its_dynamic_shared_memory_names_what_the_launch_asked_for"),
    "runner-time-limit-names-no-launch": (
        RUNNER, """(f", in its launch of {running['kernel']} at line {running['line']}" if running else "")""", '""',
        "test_lab_program.py::test_a_program_stopped_at_its_limit_in_a_launch_names_the_launch"),
    "reader-short-launch-traced": (
        READER, "and len(_split(code[opening + 1:end - 1])) == len(k.params))", "and True)",
        "test_lab_sources.py::test_a_launch_over_two_lines_is_run_and_one_short_of_arguments_runs_untraced"),
    "reader-launch-on-one-line-only": (
        READER, '_LAUNCH = re.compile(r"<<<(?:[^;<>]|<(?!<<)|>(?!>>))*>>>")',
        '_LAUNCH = re.compile(r"<<<(?:[^;<>\\n]|<(?!<<)|>(?!>>))*>>>")',
        "test_lab_sources.py::test_a_launch_over_two_lines_is_run_and_one_short_of_arguments_runs_untraced"),
    "reader-main-not-host-code": (READER, r"\bint\s+main\s*\(|", "",
                                  "test_lab_sources.py::test_host_code_is_named_at_main_before_any_launch"),
}


def run(name: str | None, tests: list) -> bool:
    """Whether `tests` (of tests/test_lab_rules.py, or "FILE::name" of tests/FILE) fail on a copy
    with mutant `name` (None: none)."""
    with tempfile.TemporaryDirectory(prefix=f"gm-mutant-{name}-") as tmp:
        copy = pathlib.Path(tmp)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for folder in ("gpumodel", "tests"):
            shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
        if name:
            path, original, mutated, _ = MUTANTS[name]
            target = copy / path
            text = target.read_text()
            if text.count(original) != 1:
                raise SystemExit(f"{name}: {original!r} occurs {text.count(original)} times in {path}, not once: "
                                 "update MUTANTS")
            target.write_text(text.replace(original, mutated))
        (copy / "build").mkdir()
        env = {**os.environ, "PYTHONPATH": str(copy), "TMPDIR": str(copy / "build"), "GPUMODEL_CACHE": str(copy / "cache")}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                               *(f"tests/{test}" if "::" in test else f"tests/test_lab_rules.py::{test}"
                                 for test in tests)], cwd=copy, env=env,
                              capture_output=True, text=True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{name}: pytest exited with {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done.returncode == 1


def main(names) -> int:
    unknown = set(names) - MUTANTS.keys()
    if unknown:
        raise SystemExit(f"no such mutant: {', '.join(sorted(unknown))}; the mutants: {', '.join(MUTANTS)}")
    names = names or list(MUTANTS)
    if run(None, [MUTANTS[name][3] for name in names]):
        raise SystemExit("the guarding tests fail on the unmutated lab: fix them first")
    survived = []
    for name in names:
        killed = run(name, [MUTANTS[name][3]])
        print(f"{name:<30} {'killed' if killed else 'SURVIVED'}   ({MUTANTS[name][3]})", flush=True)
        survived += [] if killed else [name]
    print(f"{len(names) - len(survived)} of {len(names)} lab mutants killed")
    for path in sorted({MUTANTS[name][0] for name in names}):  # a score per module, as tests/mutation_report.py's
        mine = [name for name in names if MUTANTS[name][0] == path]
        killed = sum(name not in survived for name in mine)
        print(f"  {path:<32} {killed:>3} of {len(mine):>3} killed  {100 * killed / len(mine):5.1f}%")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

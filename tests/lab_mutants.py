"""The hand-made mutants of the kernel lab (issue 37) that once survived the suite, each with
the test that must now kill it: of tests/test_lab_rules.py, or of another file named as
"test_lab_safety.py::test_name" (mutmut, `make mutation`, mutates only the core Python modules;
these mutate the lab's reader, builder, limits, reporter, its C++ runtime and gpumodel/folders.py).

For each mutant: a copy of gpumodel/ and tests/ in a temporary folder, the one change applied
(its text must occur exactly once), the guarding test run there with its own build folder.
First the same tests on an unmutated copy, which must pass (else a "kill" means nothing).
Prints killed or SURVIVED per mutant; exits 1 if any survived.

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
    "uninitialised-read-one-warp": (REPORTER, "count, one_warp and hazard != uninitialized, between))", "count, one_warp, between))",
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
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

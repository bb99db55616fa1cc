"""The score per module of the last `make mutation` run (mutmut's results in mutants/).

score = (killed + equivalent) / mutants, where a mutant is equivalent only when
tests/equivalent_mutants.txt names it with a one-line reason. A timeout counts as killed
(the mutant hung the tests); a mutant no test reaches counts as survived.

    python tests/mutation_report.py [module ...]      # default: every module mutmut ran
                                                      # a module in a subfolder by its dotted name: course.capstone
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KILLED = {1, 3, 24, -24, 152, 255, 36}  # test failure, pytest internal error, timeouts
SURVIVED = {0, 5, 33}  # the tests passed, or no test reaches the mutated function


def equivalents(path=ROOT / "tests" / "equivalent_mutants.txt") -> dict:
    """{mutant name: reason} from the committed list: `name  reason` a line, # comments."""
    found = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, reason = line.strip().partition(" ")
        if not reason.strip():
            raise ValueError(f"{path.name}:{number}: {name} has no reason")
        found[name] = reason.strip()
    return found


def module_name(relative: pathlib.Path) -> str:
    """The module's dotted name under gpumodel/ of its meta file's path there: course/capstone.py.meta
    -> course.capstone."""
    return ".".join(relative.parts).removesuffix(".py.meta")


def main(modules) -> int:
    equivalent = equivalents()
    base = ROOT / "mutants" / "gpumodel"
    metas = sorted(base.rglob("*.py.meta"))
    modules = modules or [module_name(m.relative_to(base)) for m in metas]
    print(f"{'module':<16} {'mutants':>7} {'killed':>7} {'survived':>8} {'equivalent':>10} {'score':>7}")
    stale = []
    for module in modules:
        meta = base / f"{module.replace('.', '/')}.py.meta"  # course.capstone: mutants/gpumodel/course/capstone.py.meta
        if not meta.exists():
            print(f"{module:<16} not run")
            continue
        every = json.loads(meta.read_text())["exit_code_by_key"]
        codes = {name: code for name, code in every.items() if code is not None}  # None: not run this time
        if not codes:
            print(f"{module:<16} not run")
            continue
        killed = sum(code in KILLED for code in codes.values())
        survivors = {name for name, code in codes.items() if code not in KILLED}
        equal = survivors & equivalent.keys()
        stale += [name for name in equivalent if name.startswith(f"gpumodel.{module}.")
                  and (name not in every or codes.get(name) in KILLED)]
        score = 100 * (killed + len(equal)) / len(codes)
        print(f"{module:<16} {len(codes):>7} {killed:>7} {len(survivors) - len(equal):>8} {len(equal):>10} "
              f"{score:>6.1f}%")
        for name in sorted(survivors - equal):
            print(f"    survived: {name}   (mutmut show {name})")
    for name in stale:
        print(f"note: {name} is listed as equivalent but was killed (or no longer exists): re-check the list")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

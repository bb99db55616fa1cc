"""The preset GPUs: one reviewed data file per GPU in `gpumodel/data/gpus/`, loaded and
checked here. Introduced in chapter 1; the appendix "GPU presets" prints them all.

A GPU file states each fact as its source does (value, unit, kind, a `references.bib` key,
where in that document, a note), plus the GPU's compute capability; the per-capability facts
(FP32 units, register file, shared memory, occupancy limits) come from
`data/capabilities.toml`. Derived figures are computed by `GPU`, never stored. A file with a
missing or unknown key, an unknown unit or an unknown source, or figures that contradict each
other (`BELOW`), is refused, naming the file and the key. Adding a GPU is adding one file.
"""

from __future__ import annotations

import collections
import difflib
import functools
import math
import pathlib
import re
import string
import sys

from .hardware import GPU, KIB, KINDS, PLAUSIBLE, WARP, Capability, Fact

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

DATA = pathlib.Path(__file__).resolve().parent / "data"
GPU_DIR = DATA / "gpus"
BIB = DATA / "references.bib"

UNITS = {
    # unit as written in a file -> (SI unit, factor)
    "SM": ("SM", 1), "cycle": ("cycle", 1), "B/clk": ("B/clk", 1),
    "MHz": ("Hz", 1e6), "GHz": ("Hz", 1e9),
    "GB/s": ("B/s", 1e9), "TB/s": ("B/s", 1e12),
    "KiB": ("B", KIB), "MiB": ("B", KIB**2), "GB": ("B", 1e9),
    "TFLOP/s": ("FLOP/s", 1e12), "W": ("W", 1), "us": ("s", 1e-6),
}
"""The units a GPU file may use. Capacities on chip are binary (KiB, MiB), memory sizes decimal
(GB), as the datasheets state them; rates are decimal."""
FACTS = {
    # fact -> the SI units it may be stated in
    "sms": ("SM",), "clock": ("Hz",), "l2_bandwidth": ("B/clk", "B/s"), "hbm_bandwidth": ("B/s",),
    "l2_capacity": ("B",), "hbm_capacity": ("B",),
}
"""The facts every GPU file states. `l2_bandwidth` is per clock or per second, as its source states it."""
OPTIONAL_FACTS = {"tensor_clock": ("Hz",), "max_clock": ("Hz",), "power": ("W",), "die_link": ("B/s",)}
"""Facts a GPU file states where its source does: the clock the tensor peaks are rated at,
when it is not the boost clock; the highest SM clock the part is shown to reach, when it is
above the boost clock (a bound's clock, `GPU.bound`); the board's power limit (W); for a GPU
of two dies, the rate of the link between them (B/s)."""
BELOW = (("tensor_clock", "clock"), ("clock", "max_clock"), ("l2_capacity", "hbm_capacity"))
"""Pairs of facts of a GPU file of which the first must be below the second, where both are stated:
the tensor peaks' clock below the boost clock, the boost clock below the highest one reached, the
L2 smaller than the memory."""
TABLES = {"tensor": (("tf32", "fp16", "bf16", "fp8", "fp4"), ("FLOP/s",)), "latency": (("smem", "l2", "hbm"), ("cycle",))}
"""Optional tables of facts: dense tensor-core peaks by input type, measured latencies by level."""
FACT_KEYS = {"value", "unit", "kind", "source", "where", "note"}
CAPABILITY_KEYS = {
    # key in capabilities.toml -> bytes per unit (0: a plain count)
    "fp32_lanes_per_sm": 0, "special_functions_per_sm": 0, "max_threads_per_sm": 0, "max_warps_per_sm": 0, "max_blocks_per_sm": 0,
    "registers_per_sm": 0, "max_registers_per_thread": 0, "max_threads_per_block": 0,
    "smem_per_sm_kib": KIB, "max_smem_per_block_kib": KIB, "reserved_smem_per_block_kib": KIB, "l1_per_sm_kib": KIB,
}


class DataError(ValueError):
    """A data file that does not hold what the loader needs; the message names file and key."""


def _read(path: pathlib.Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise DataError(f"{path.name}: not valid TOML ({err})") from None


@functools.cache
def bib_keys() -> frozenset:
    """The citation keys of `references.bib`."""
    return frozenset(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), re.M))


@functools.cache
def bibliography() -> dict:
    """key -> (label, title, address) from references.bib: the label "Author Year" (one
    author's surname, "A and B", or "A et al."), with a letter after the year where labels
    would repeat ("2025a", "2025b" in the order of their titles); the title without braces;
    the entry's own address (its url, its doi, or the \\url of its howpublished; None where
    it has none). The site's reference list and citations use the same labels."""
    out = {}
    for key, body in re.findall(r"^@\w+\{([^,\s]+),(.*?)^\}", BIB.read_text(), re.M | re.S):
        field = lambda name: (m := re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", body, re.M)) and m.group(1)
        author, year = field("author"), re.search(r"year\s*=\s*\{(\d{4})\}", body).group(1)
        if author.startswith("{"):  # an organisation, {{NVIDIA Corporation}}
            names = [author.strip("{}")]
        else:
            names = [re.sub(r"[{}\\']", "", a).split()[-1] for a in author.split(" and ")]
        who = (names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2 and names[1] != "others"
               else f"{names[0]} et al.")  # "A and others" is BibTeX for "A et al."
        doi, elsewhere = field("doi"), re.search(r"\\url\{([^}]*)\}", field("howpublished") or "")
        address = field("url") or (doi and f"https://doi.org/{doi}") or (elsewhere and elsewhere.group(1))
        title = re.sub(r"\\([_&%$#])", r"\1", re.sub(r"[{}]", "", field("title")))
        out[key] = (f"{who} {year}", title, address or None)
    alike = collections.defaultdict(list)
    for key, (label, title, _) in out.items():
        alike[label].append((title.lower(), key))
    for label, entries in alike.items():
        if len(entries) > len(string.ascii_lowercase):
            raise DataError(f"references.bib: {len(entries)} entries labelled {label!r}, more than letters to tell them apart")
        if len(entries) > 1:
            for letter, (_, key) in zip(string.ascii_lowercase, sorted(entries)):
                out[key] = (label + letter, *out[key][1:])
    return out


def _no_gaps(where: str, missing: set, unknown: set) -> None:
    """Refuse a table with a key missing or a key the loader does not know."""
    if missing:
        raise DataError(f"{where}: missing {sorted(missing)}")
    if unknown:
        raise DataError(f"{where}: unknown keys {sorted(unknown)}")


def _number(where: str, value, most: float, what: str = "a number") -> float:
    """`value` of the table at `where` as a float: a number (not a bool or a string), > 0 and at
    most `most`; else a DataError naming `where.value`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
        raise DataError(f"{where}.value must be {what} > 0 and <= {most:g}, got {value!r}")
    return float(value)


def _fact(where: str, entry, si_units: tuple) -> Fact:
    """One fact table of a GPU file as a `Fact` in SI units."""
    if not isinstance(entry, dict):
        raise DataError(f"{where} must be a table with value, unit, kind and source")
    missing, unknown = {"value", "unit", "kind", "source"} - set(entry), set(entry) - FACT_KEYS
    _no_gaps(where, missing, unknown)
    if entry["unit"] not in UNITS or UNITS[entry["unit"]][0] not in si_units:
        accepted = sorted(u for u, (si, _) in UNITS.items() if si in si_units)
        raise DataError(f"{where}.unit must be one of {accepted}, got {entry['unit']!r}")
    if entry["kind"] not in KINDS:
        raise DataError(f"{where}.kind must be one of {KINDS}, got {entry['kind']!r}")
    if entry["source"] not in bib_keys():
        raise DataError(f"{where}.source {entry['source']!r} is not a key of references.bib")
    if entry["kind"] == "estimate" and not entry.get("note"):
        raise DataError(f"{where}.note must say how an estimate was made")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise DataError(f"{where}.value must be a finite positive number, got {value!r}")
    si, factor = UNITS[entry["unit"]]
    least, most = PLAUSIBLE[si]
    if not least <= value * factor <= most:
        raise DataError(f"{where}.value must be from {least / factor:g} to {most / factor:g} {entry['unit']}, "
                        f"got {value!r}")
    if si == "SM" and value != int(value):
        raise DataError(f"{where}.value must be a whole number of SMs, got {value!r}")
    return Fact(float(value) * factor, si, entry["kind"], entry["source"], entry.get("where", ""), entry.get("note", ""))


@functools.cache
def capabilities() -> dict:
    """Every compute capability of `data/capabilities.toml`, by version tuple ((9, 0): ...)."""
    out = {}
    for name, entry in _read(DATA / "capabilities.toml").items():
        where = f"capabilities.toml [{name}]"
        if not re.fullmatch(r"\d+\.\d+", name):
            raise DataError(f"{where}: a capability is named like \"9.0\"")
        missing, unknown = set(CAPABILITY_KEYS) - set(entry), set(entry) - set(CAPABILITY_KEYS)
        _no_gaps(where, missing, unknown)
        for key, value in entry.items():
            least = 0 if key == "reserved_smem_per_block_kib" else 1  # every count but the reserve is positive
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise DataError(f"{where}.{key} must be a whole number >= {least}, got {value!r}")
        if entry["max_threads_per_sm"] != entry["max_warps_per_sm"] * WARP:
            raise DataError(f"{where}.max_threads_per_sm must be max_warps_per_sm x {WARP} = "
                            f"{entry['max_warps_per_sm'] * WARP}, got {entry['max_threads_per_sm']}")
        if entry["l1_per_sm_kib"] < entry["smem_per_sm_kib"]:
            raise DataError(f"{where}.l1_per_sm_kib holds the shared memory too, so it is at least smem_per_sm_kib "
                            f"({entry['smem_per_sm_kib']}), got {entry['l1_per_sm_kib']}")
        version = tuple(int(v) for v in name.split("."))
        fields = {key.removesuffix("_kib"): value * (CAPABILITY_KEYS[key] or 1) for key, value in entry.items()}
        out[version] = Capability(version, **fields)
    return out


def capability(version) -> Capability:
    """The facts of compute capability `version` ((9, 0) or "9.0")."""
    by_name = {c.name: c for c in capabilities().values()}
    name = ".".join(map(str, version)) if isinstance(version, tuple) else version
    if not isinstance(name, str) or name not in by_name:
        raise ValueError(f"capability version must be one of {list(by_name)} (\"9.0\" or (9, 0)), got {version!r}")
    return by_name[name]


MEMORY_KINDS = ("HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X", "GDDR7")
"""The kinds of device memory a GPU file may name (`memory`)."""


def load_gpu(path) -> GPU:
    """The `GPU` a data file describes (see the module doc); raises `DataError` naming the
    file and key when the file is incomplete or wrong."""
    path = pathlib.Path(path)
    data = _read(path)
    top = {"name", "capability", "memory", "devices", "family"} | set(FACTS) | set(OPTIONAL_FACTS) | set(TABLES)
    _no_gaps(path.name, ({"name", "capability", "memory"} | set(FACTS)) - set(data), set(data) - top)
    try:
        cap = capability(str(data["capability"]))
    except ValueError as err:
        raise DataError(f"{path.name}.{err}") from None
    facts = {key: _fact(f"{path.name}.{key}", data[key], units) for key, units in FACTS.items()}
    facts |= {key: _fact(f"{path.name}.{key}", data[key], units) for key, units in OPTIONAL_FACTS.items() if key in data}
    for table, (names, units) in TABLES.items():
        entries = data.get(table, {})
        if not isinstance(entries, dict) or set(entries) - set(names):
            raise DataError(f"{path.name}.{table} may hold only {names}, got {sorted(entries)}")
        facts[table] = {n: _fact(f"{path.name}.{table}.{n}", e, units) for n, e in entries.items()}
    for low, high in BELOW:
        if low in facts and high in facts and not facts[low].value < facts[high].value:
            raise DataError(f"{path.name}.{low} must be below {high} ({facts[high].value:g} {facts[high].unit}), "
                            f"got {facts[low].value:g} {facts[low].unit}")
    devices = data.get("devices", [])
    if not isinstance(devices, list) or not all(isinstance(d, str) and d.strip() for d in devices):
        raise DataError(f"{path.name}.devices must be a list of the device names the driver reports, got {devices!r}")
    family = data.get("family", False)
    if not isinstance(family, bool):
        raise DataError(f"{path.name}.family must be true or false, got {family!r}")
    if data["memory"] not in MEMORY_KINDS:
        raise DataError(f"{path.name}.memory must be one of {list(MEMORY_KINDS)}, got {data['memory']!r}")
    return GPU(name=str(data["name"]), capability=cap, **facts, memory=data["memory"], devices=tuple(devices),
               family=family)


@functools.cache
def _presets() -> dict:
    gpus = [load_gpu(path) for path in sorted(GPU_DIR.glob("*.toml"))]
    by_name = {g.name: g for g in gpus}
    if len(by_name) != len(gpus):
        raise DataError(f"two files in {GPU_DIR.name}/ name the same GPU")
    claimed, families = {}, {}
    for g in gpus:
        for device in g.devices:
            other = claimed.setdefault(_device_key(device), g.name)
            if other != g.name:
                raise DataError(f"{GPU_DIR.name}/: {other} and {g.name} both list the device {device!r}")
        if g.family and families.setdefault(g.capability.version, g.name) != g.name:
            raise DataError(f"{GPU_DIR.name}/: {families[g.capability.version]} and {g.name} both stand for the "
                            f"family of capability {g.capability.name}; mark one")
    return by_name


def _device_key(device_name: str) -> str:
    """A device name as matched: case and runs of spaces aside."""
    return " ".join(device_name.upper().split())


def match_device(device_name: str, version) -> tuple[str, str]:
    """The preset a live device stands for, and how it was chosen: the preset whose file lists
    the device's whole name (`devices`); else the preset marked `family` for its compute
    capability `version` ((9, 0) or "9.0"); else the family of the newest capability below it. Never a part of a name
    ("NVIDIA L40S" is not an "L4"). Chapter 1's GPU path."""
    if not isinstance(device_name, str):
        raise TypeError(f"device_name must be the name the driver reports, a str, got {type(device_name).__name__}")
    cap = capability(version)
    key = _device_key(device_name)
    for g in _presets().values():
        if key in {_device_key(d) for d in g.devices}:
            return g.name, f"{device_name} is listed by the {g.name} preset"
    families = {g.capability.version: g.name for g in _presets().values() if g.family}
    if cap.version in families:
        return families[cap.version], (f"no preset lists {device_name}; {families[cap.version]} stands for compute "
                                        f"capability {cap.name}")
    below = [v for v in families if v < cap.version]
    if not below:
        raise ValueError(f"capability {cap.name} is older than every preset's ({sorted(families)})")
    chosen = families[max(below)]
    return chosen, (f"no preset lists {device_name} or stands for compute capability {cap.name}; "
                    f"{chosen} stands for the newest capability below it")


def preset_names() -> list[str]:
    """The names `gpu()` accepts, oldest architecture first (by compute capability; within
    one, fastest FP32 first)."""
    return [g.name for g in sorted(_presets().values(), key=lambda g: (g.capability.version, -g.peak_flops, g.name))]


def _closest(name) -> str:
    """The preset whose name contains `name` (case aside), else the most similar one."""
    query = str(name).lower()
    lower = {n.lower(): n for n in preset_names()}
    containing = [n for low, n in lower.items() if query and query in low]
    if containing:
        return containing[0]
    return lower[difflib.get_close_matches(query, lower, n=1, cutoff=0.0)[0]]


def gpu(gpu) -> GPU:
    """`gpu` itself if it is a `GPU` record (a preset or the live device), else the preset
    of that name (see `preset_names()`). Every analysis resolves its `gpu` argument here.
    Chapter 1."""
    if isinstance(gpu, GPU):
        return gpu
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU record or a preset name, got {type(gpu).__name__}")
    if gpu not in _presets():
        raise ValueError(f"gpu must be one of {preset_names()}; got {gpu!r} (closest: {_closest(gpu)!r})")
    return _presets()[gpu]

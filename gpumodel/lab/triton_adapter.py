"""Everything of Triton's that is not its public language, in one place: the interpreter's builder
methods the lab records through, its function and tensor classes, and the host tensor
descriptor. `triton_trace` reaches Triton only through here (ARCHITECTURE.md, "The kernel lab"),
so a Triton release that moves one of them is met in this file; chapter 4's Triton lab.

`SUPPORTED` names the Triton versions whose interpreter this file was written against and
tested with; requirements.txt and pyproject.toml pin the same range, and a test holds the
three equal. Outside it the lab still tries, and a failure inside the interpreter says which
Triton is installed and which the lab knows."""

from __future__ import annotations

import contextlib
import os
import sys
from types import SimpleNamespace

import numpy as np

from .limits import LabError

SUPPORTED = ((3, 4), (3, 9))
"""The oldest and the newest Triton (major, minor) the interpreter hooks below were written
against; the pins in requirements.txt and pyproject.toml are `>=3.4,<3.10`."""
RECORDED = ("create_masked_load", "create_masked_store", "create_dot", "create_atomic_rmw", "create_atomic_cas")
"""The interpreter builder's methods the lab wraps to record a program's accesses and dots (a
tensor descriptor's load and store reach the first two)."""


def version() -> tuple:
    """The installed Triton's (major, minor)."""
    import triton

    parts = [int(p) if p.isdigit() else 0 for p in triton.__version__.split("+")[0].split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts)))


def supported() -> bool:
    """Whether the installed Triton is within `SUPPORTED`."""
    return SUPPORTED[0] <= version() <= SUPPORTED[1]


def unsupported_note() -> str:
    """A sentence to add to an interpreter failure when the installed Triton is outside `SUPPORTED` (else "")."""
    if supported():
        return ""
    import triton

    low, high = (".".join(map(str, v)) for v in SUPPORTED)
    return (f" (Triton {triton.__version__} is installed; the lab knows the interpreter of Triton {low} to {high}: "
            f"pip install 'triton>={low},<{SUPPORTED[1][0]}.{SUPPORTED[1][1] + 1}')")


def descriptor_class():
    """Triton's host tensor descriptor class (`triton.tools.tensor_descriptor.TensorDescriptor`), or None."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


def is_descriptor(value) -> bool:
    """Whether `value` is a host tensor descriptor."""
    cls = descriptor_class()
    return cls is not None and isinstance(value, cls)


def make_descriptor(base, shape, strides, block_shape, padding: str):
    """A host tensor descriptor over `base` (a pointer-like object with `data_ptr` and `dtype`)."""
    return descriptor_class()(base, list(shape), list(strides), list(block_shape), padding)


def scalar(value, np_type, triton_type: str):
    """`value` as a Triton scalar tensor of `triton_type` ("fp32" ...), as Triton's launcher hands a
    number to a kernel."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    ty = tl.str_to_ty(triton_type, None)
    return tl.tensor(TensorHandle(np.array([value], dtype=np_type), ty), ty)


def element_bytes(ptrs) -> int:
    """The bytes of one element a block of pointers (an interpreter TensorHandle) points to."""
    return max(1, ptrs.get_element_ty().primitive_bitwidth // 8)


def grid_index(builder) -> tuple:
    """The (x, y, z) program the interpreter's builder is running."""
    return tuple(int(v) for v in builder.grid_idx)


@contextlib.contextmanager
def recording(fn, record_access, record_dot):
    """Within the block, Triton's interpreter records through `record_access(builder, ptrs, mask,
    write, size=None)` and `record_dot(a, b)` (interpreter TensorHandles); the @jit functions the
    kernel `fn` reaches (its own helpers and triton.language's) run interpreted, as they would had
    TRITON_INTERPRET been set before triton was imported. Everything is put back after. Yields
    `run(fn, grid, args, meta)`, which runs `fn` over `grid` in the interpreter."""
    import triton.language  # noqa: F401  (the modules whose @jit functions are swapped)
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    builder = interpreter.InterpreterBuilder
    missing = [name for name in RECORDED if name not in builder.__dict__]
    if missing:
        raise LabError(f"Triton's interpreter has no {', '.join(missing)}, which the lab records through"
                       f"{unsupported_note() or ' (a change of Triton this file, gpumodel/lab/triton_adapter.py, must meet)'}")
    kept = {name: builder.__dict__[name] for name in RECORDED}

    def load(self, ptrs, mask, *rest, **kw):
        record_access(self, ptrs, mask, False)
        return kept["create_masked_load"](self, ptrs, mask, *rest, **kw)

    def store(self, ptrs, value, mask, *rest, **kw):
        record_access(self, ptrs, mask, True)
        return kept["create_masked_store"](self, ptrs, value, mask, *rest, **kw)

    def dot(self, a, b, *rest, **kw):
        record_dot(a, b)
        return kept["create_dot"](self, a, b, *rest, **kw)

    def atomic_rmw(self, op, ptrs, value, mask, *rest, **kw):  # an atomic's element: its value's (a bare pointer has no type)
        record_access(self, ptrs, mask, True, np.asarray(value.data).itemsize)
        return kept["create_atomic_rmw"](self, op, ptrs, value, mask, *rest, **kw)

    def atomic_cas(self, ptrs, compare, value, *rest, **kw):
        every = SimpleNamespace(data=np.ones_like(ptrs.data, dtype=bool))  # a compare-and-swap has no mask
        record_access(self, ptrs, every, True, np.asarray(value.data).itemsize)
        return kept["create_atomic_cas"](self, ptrs, compare, value, *rest, **kw)

    spaces = [fn.__globals__] + [m.__dict__ for name, m in list(sys.modules.items())
                                 if m is not None and name.split(".")[:2] == ["triton", "language"]]
    swapped, seen, interpreted = [], set(), {}
    while spaces:
        space = spaces.pop()
        if id(space) in seen:
            continue
        seen.add(id(space))
        for key, value in list(space.items()):
            if isinstance(value, JITFunction):
                if id(value) not in interpreted:
                    interpreted[id(value)] = interpreter.InterpretedFunction(value.fn)
                    spaces.append(value.fn.__globals__)
                swapped.append((space, key, value))
    before = os.environ.get("TRITON_INTERPRET")

    def run(function, grid, args, meta):
        interpreter.InterpretedFunction(function)[grid](*args, **meta)

    try:
        os.environ["TRITON_INTERPRET"] = "1"
        for space, key, value in swapped:
            space[key] = interpreted[id(value)]
        for name, method in zip(RECORDED, (load, store, dot, atomic_rmw, atomic_cas)):
            setattr(builder, name, method)
        yield run
    finally:
        for name, method in kept.items():
            setattr(builder, name, method)
        for space, key, value in swapped:
            space[key] = value
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


def decorators(kernel) -> tuple:
    """(the Python function behind `kernel`, its decorators from the outermost in) where `kernel`
    is a `@triton.jit` function, perhaps inside `@triton.autotune` and `@triton.heuristics` in
    any order: each decorator ("autotune", (its configurations, its `early_config_prune` or
    None)) or ("heuristics", {name: function of the arguments by name}), in the order Triton's
    launcher applies them. TypeError where it is none of these."""
    fn, layers = kernel, []
    for _ in range(8):
        if callable(fn) and hasattr(fn, "__code__"):
            return fn, layers
        if type(fn).__name__ == "Autotuner" and getattr(fn, "configs", None):
            layers.append(("autotune", (list(fn.configs), getattr(fn, "early_config_prune", None))))
        elif type(fn).__name__ == "Heuristics" and isinstance(getattr(fn, "values", None), dict):
            layers.append(("heuristics", dict(fn.values)))
        fn = getattr(fn, "fn", None)
    raise TypeError(f"kernel must be a @triton.jit function, got {type(kernel).__name__}")


def config_parts(config) -> tuple:
    """(meta-parameters, num_warps, pre_hook) of an autotuner's configuration."""
    return dict(config.kwargs), config.num_warps, getattr(config, "pre_hook", None)

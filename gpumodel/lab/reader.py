"""The lab's first room, the reader: a learner's CUDA C source read as CUDA C++ before anything
compiles, and the built executable read back into the source's lines. ARCHITECTURE.md, "The
kernel lab" (reader -> builder -> runner -> reporter); chapter 2's lab.

What it reads: each `__global__` function's template, parameters and namespaces (`declarations`,
through comments, `__launch_bounds__(...)`, a templated return type and default arguments), a
kernel named as CuPy's `name_expressions` name it, with or without its namespaces (`instantiate`,
`qualified`), the C type of each argument (`element_type`, `arguments`: a struct by value as a
NumPy structured scalar or a ctypes.Structure), the source's `extern __shared__` arrays rewritten
for the launch and its host launches left out or, in a whole program, run (`for_gxx`; never a
`<<<` in a string or comment), the code a library's file writes against PyTorch left out
(`without_framework`), and the line table (`lines`: a code offset to its line and column,
`dwarf.py` reading the columns; `shared_gaps`: the stretches past each `__shared__` array)."""

from __future__ import annotations

import collections
import ctypes
import math
import numbers
import pathlib
import re
import subprocess
from dataclasses import dataclass

import numpy as np

from .dwarf import line_table, locate

ARCH = "sm_80"
"""The architecture device code is compiled for unless the caller names another: `__CUDA_ARCH__` 800."""
MAX_DYNAMIC_SHARED = 227 * 1024
"""The most dynamic shared memory a launch may ask for (bytes; H100's opt-in limit per block),
as `EMU_DYNAMIC_SHARED_MAX` in cuda_emu.h."""
SUPPORTED = "chapter 8 (chapters/08_capstone.md, \"Your kernel\") lists what the lab's CUDA stand-in supports"
"""Where a compile error that names something unsupported sends the reader."""


ML_DTYPES = {"__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__nv_fp8_e4m3": "float8_e4m3fn",
             "__nv_fp8_e5m2": "float8_e5m2"}
"""CUDA's bf16 and fp8 scalar types -> the name of their dtype in ml_dtypes, which is imported only
when one is asked for (`element_type`): its import takes most of a second, which every chapter
would otherwise pay on `import gpumodel.course`."""


def _ml_dtypes():
    import ml_dtypes

    return ml_dtypes


def _scalar_types() -> dict:
    """C scalar type (as written, words separated by one space) -> NumPy dtype (for bf16 and fp8
    the name of ml_dtypes' dtype, `ML_DTYPES`)."""
    types = {"float": np.float32, "double": np.float64, "half": np.float16, "__half": np.float16, "bool": np.bool_,
             "char": np.int8, "size_t": np.uint64, "ptrdiff_t": np.int64, "ssize_t": np.int64, "intptr_t": np.int64,
             "uintptr_t": np.uint64, "uint": np.uint32, "ushort": np.uint16, "ulong": np.uint64, "uchar": np.uint8,
             **ML_DTYPES}
    for bits, names in ((8, ["char"]), (16, ["short", "short int"]), (32, ["int", ""]),
                        (64, ["long", "long int", "long long", "long long int"])):
        signed, unsigned = np.dtype(f"int{bits}").type, np.dtype(f"uint{bits}").type
        types.update({f"int{bits}_t": signed, f"uint{bits}_t": unsigned})
        for name in names:
            types.update({name: signed, f"signed {name}".strip(): signed, f"unsigned {name}".strip(): unsigned})
    return {name: types[name] for name in types if name}


SCALAR_TYPES = _scalar_types()
VECTOR_TYPE = re.compile(r"(?P<unsigned>u?)(?P<base>char|short|int|longlong|long|float|double)(?P<n>[1-4])|"
                         r"(?:__)?(?P<half>half)(?P<half_n>2)|(?:__)?(?P<bf>nv_bfloat16)2")
"""CUDA's vector types (`float4`, `uint2`, `double2` ..., `half2`, `__nv_bfloat162`): a pointer to
one takes an array of its component, one by value a tuple of its components."""


def _vector(ctype: str):
    """(component C type, components) of a vector type, None for any other type."""
    match = VECTOR_TYPE.fullmatch(base_type(ctype))
    if match is None:
        return None
    if match["half"] or match["bf"]:
        return ("half" if match["half"] else "__nv_bfloat16"), 2
    return ("unsigned " if match["unsigned"] else "") + match["base"].replace("longlong", "long long"), int(match["n"])
QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "typename"}
SOURCE_NAME = "kernel.cu"
"""The learner's source as g++'s messages and addr2line name it."""


@dataclass(frozen=True)
class Kernel:
    """A `__global__` function of a source: its `name`, its `template` parameters ((name, default
    or None) each; empty when it is not a template), its `params` ((type, name) each), their
    `defaults` (each parameter's default argument as written, or None) and the namespaces it is
    declared in (`scope`: "vllm::", "a::b::", "" at file scope; an unnamed one adds nothing)."""

    name: str
    template: tuple
    params: tuple
    defaults: tuple = ()
    scope: str = ""


_COMMENT_OR_STRING = re.compile(r"//[^\n]*|/\*[\s\S]*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'")
_DIRECTIVE = re.compile(r"^[ \t]*#(?:\\\n|[^\n])*", re.M)
_TOKEN = re.compile(r"\s*(\w+|::|\S)")
_ATTRIBUTES = {"__launch_bounds__", "__attribute__", "alignas", "__align__", "__maxnreg__", "__cluster_dims__"}
_OPEN, _CLOSE = "(<[{", ")>]}"


def _blank(match) -> str:
    """A comment or directive as spaces, its newlines kept; a string literal as it is."""
    text = match.group(0)
    return text if text[0] in "\"'" else re.sub(r"[^\n]", " ", text)


def _code(source: str) -> str:
    """`source` with its comments and preprocessor lines blanked, each newline kept."""
    return _DIRECTIVE.sub(_blank, _COMMENT_OR_STRING.sub(_blank, source))


def _unquoted(match) -> str:
    """A comment as spaces, a string or character literal as its quotes around spaces; newlines kept."""
    text = match.group(0)
    return text[0] + " " * (len(text) - 2) + text[-1] if text[0] in "\"'" else re.sub(r"[^\n]", " ", text)


def _bare(source: str, directives: bool = False) -> str:
    """`source` with its comments and the contents of its string literals blanked (and its
    preprocessor lines, where `directives`), each character where it was: where a `<<<` is a
    launch and not a `printf("<<<%d, %d>>>\\n", ...)`."""
    text = _COMMENT_OR_STRING.sub(_unquoted, source)
    return _DIRECTIVE.sub(_blank, text) if directives else text


def _closing(text: str, at: int) -> int:
    """The index just past the bracket that closes the one at `text[at]` (the end: none does,
    and g++ will say so)."""
    depth = 0
    for i in range(at, len(text)):
        depth += (text[i] == text[at]) - (text[i] == _CLOSE[_OPEN.index(text[at])])
        if depth == 0:
            return i + 1
    return len(text) + 1


def _angle_closing(text: str, at: int) -> int:
    """The index just past the `>` that closes the `<` at `text[at]`: brackets inside parentheses
    (`(width > 0)`) not counted; the end where none does."""
    depth = parens = 0
    for i in range(at, len(text)):
        c = text[i]
        parens += (c in "([{") - (c in ")]}")
        if parens == 0:
            depth += (c == "<") - (c == ">")
            if depth == 0:
                return i + 1
        if parens < 0 or c == ";":
            break
    return len(text)


def _split(text: str, separator: str = ",") -> list:
    """`text` split at each `separator` outside brackets, the parts stripped, empty ones left out."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in _OPEN) - (c in _CLOSE)
        if c == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in [*parts, text[start:]] if p.strip()]


def _declared(text: str) -> tuple:
    """(type, name) of one declaration, its default value left out: `const float* __restrict__ x`,
    `float x[]` (a pointer), `int n = 16`."""
    text = _split(text, "=")[0]
    match = re.fullmatch(r"(.*?)(\w+)\s*((?:\[[^\]]*\]\s*)*)", text, re.S)
    if match is None:  # unnamed, and not ending in a word: `std::bool_constant<Atomic>`, `const float*`
        return _spaced(text), ""
    ctype = _spaced(match.group(1)) + " *" * match.group(3).count("[")
    return (ctype, match.group(2)) if ctype.strip() else (match.group(2), "")


def _spaced(ctype: str) -> str:
    """A C type written with one space between its words, `*` and `&`: `const float *`."""
    return " ".join(ctype.replace("*", " * ").replace("&", " & ").split())


_FUNCTION_NAME = re.compile(r"\b(?!return\b)\w+[\s*&>]+(\w+)\s*\(")
"""The name a function's declaration or definition gives (and a call's after a type or a cast)."""


def _globals(code: str):
    """(where `__global__` starts, the function's name, the index of its parameter list's opening
    bracket) for each `__global__` function of `code` (`_code`'s)."""
    for match in re.finditer(r"\b__global__\b", code):
        at, word = match.end(), None
        while (token := _TOKEN.match(code, at)) is not None:
            tok, at = token.group(1), token.end()
            if tok == "(" and word in _ATTRIBUTES | {"decltype"}:  # __launch_bounds__((BM * BN) / (TM * TN), 1)
                at, word = _closing(code, token.start(1)), None
            elif tok == "<" and word is not None:  # a return type's template arguments: std::enable_if_t<(w > 0)>
                at, word = _angle_closing(code, token.start(1)), None
            elif tok == "(":
                yield match.start(), word, token.start(1)
                break
            elif re.fullmatch(r"\w+", tok):
                word = tok
            elif tok not in ("*", "&", "::"):
                break  # not a function


_NAMESPACE = re.compile(r"\b(?:inline\s+)?namespace\s+((?:\w+|::|inline|\s)*?)\s*(?:\[\[[^\]]*\]\]\s*)?\{")
"""A namespace's opening, `namespace vllm {`, `namespace a::b {`, `inline namespace v1 {`, `namespace {`."""


def _namespaces(code: str) -> list:
    """(where its `{` is, where its `}` ends, its name as a prefix: "vllm::", "" unnamed) of each
    namespace body of `code` (`_code`'s), outer ones first."""
    return [(m.end() - 1, _closing(code, m.end() - 1),
             "".join(f"{part}::" for part in re.findall(r"\w+", m.group(1)) if part != "inline"))
            for m in _NAMESPACE.finditer(code)]


def _scope(namespaces: list, at: int) -> str:
    """The namespaces (`_namespaces`) that enclose `code[at]`, as a prefix: "vllm::detail::"."""
    return "".join(name for opening, closing, name in namespaces if opening < at < closing)


def declarations(source: str) -> list:
    """The `__global__` functions `source` defines or declares, as `Kernel`s, each once (the first
    of a name, whatever its namespace), in order."""
    code, found = _code(source), {}
    namespaces = _namespaces(code)
    for start, word, opening in _globals(code):
        inside = code[opening + 1:_closing(code, opening) - 1]
        parts = [p for p in _split(inside) if _declared(p) != ("void", "")]
        defaults = tuple((_split(p, "=")[1:] or [None])[0] for p in parts)
        found.setdefault(word, Kernel(word, _template(code, start), tuple(map(_declared, parts)), defaults,
                                      _scope(namespaces, start)))
    return list(found.values())


def opened(source: str, kernel: str) -> str:
    """`using namespace` directives for each namespace `source` declares `kernel` in (outer
    first), so that a name expression's template arguments may name that namespace's types and
    functions as the kernel's own code does ("act<float, silu<float>>" for vllm::silu)."""
    prefix = qualified(source, kernel)[:-len(kernel.strip())] if _EXPRESSION.fullmatch(kernel) else ""
    parts = [p for p in prefix.split("::") if p]
    return "".join(f"using namespace {'::'.join(parts[:i + 1])}; " for i in range(len(parts)))


def qualified(source: str, kernel: str) -> str:
    """`kernel` (a name or name expression) with the namespaces `source` declares it in, where it
    names none itself: "append_kernel" -> "vllm::append_kernel", as C++ names it at file scope
    (CuPy's name_expressions, the lab's own call of it)."""
    match = _EXPRESSION.fullmatch(kernel)
    if match is None or match.group(1):
        return kernel
    scope = next((k.scope for k in declarations(source) if k.name == match.group(2)), "")
    return scope + kernel.strip()


def _registered(source: str) -> str:
    """`source` with each kernel that is no template and has a name of its own registered by its
    address after its body, on the body's last line (include/cuda_runtime.h's `emu_register_kernel`),
    so that cudaLaunchKernel and a graph's kernel node, which name it by a `void*`, launch it."""
    code = _code(source)
    names = collections.Counter(_FUNCTION_NAME.findall(code))
    namespaces = _namespaces(code)
    ends = []
    for start, word, opening in _globals(code):
        body = re.compile(r"\s*\{").match(code, _closing(code, opening))
        if body and names[word] <= 1 and not _template(code, start):
            ends.append((_closing(code, body.end() - 1), word, _scope(namespaces, start)))
    for end, word, scope in reversed(ends):  # named as C++ names it at file scope: "vllm::append_kernel"
        source = (f"{source[:end]} static const bool emu_registered_{word} = emu_register_kernel<&{word}>"
                  f"(\"{scope}{word}\");{source[end:]}")
    return source


def _template(code: str, at: int) -> tuple:
    """The template parameters ((name, default or None) each) of the declaration at `at`."""
    start = max(code.rfind(c, 0, at) for c in ";{}") + 1
    match = re.search(r"\btemplate\s*<", code[start:at])
    if match is None:
        return ()
    opening = start + match.end() - 1
    params = []
    for part in _split(code[opening + 1:_closing(code, opening) - 1]):
        head, *default = _split(part, "=")
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", head)  # a function pointer: T (*NAME)(args)
        params.append((pointer[1] if pointer else re.findall(r"\w+", head)[-1], default[0] if default else None))
    return tuple(params)


def kernels(source: str) -> list:
    """The names of the `__global__` functions `source` defines (C or C++ linkage), in order."""
    return [k.name for k in declarations(source)]


_EXPRESSION = re.compile(r"\s*((?:\w+\s*::\s*)*)(\w+)\s*(?:<(.*)>)?\s*", re.S)


def instantiate(source: str, kernel: str, defines: dict | None = None, folders: tuple = ()) -> tuple:
    """The `Kernel` that `kernel` names in `source` (a name, or a C++ name expression as CuPy's
    `name_expressions` take it: "reduce<float>", "sgemm<128, 128, 8>") and its parameters
    ((type, name) each) with the template's arguments in place of its parameters and the
    source's type aliases resolved (`aliases`, under `defines`, the headers it includes from
    `folders` read too). ValueError where it names no
    kernel of the source, or a template without its arguments."""
    match = _EXPRESSION.fullmatch(kernel) if isinstance(kernel, str) else None
    found = {k.name: k for k in declarations(with_headers(source, folders))}  # a kernel may be in a header of its own
    if match is None or match.group(2) not in found:
        raise ValueError(f"kernel must name a kernel defined in source ({', '.join(found) or 'none found'}), or an "
                         f"instantiation of one as a C++ name expression (\"reduce<float>\"); got {kernel!r}")
    problem = _template_arguments(match.group(3), source) if match.group(3) is not None else ""
    if problem:
        raise ValueError(f"kernel must be a C++ name expression as CuPy's name_expressions take it "
                         f"(\"{match.group(2)}<128, float>\"): {problem}; got {kernel!r}")
    k, given = found[match.group(2)], _split(match.group(3) or "")
    names = [name for name, _ in k.template]
    if k.template and match.group(3) is None or len(given) > len(names):
        raise ValueError(f"{k.name} is a template (template <{', '.join(names)}>): name an instantiation, as CuPy's "
                         f"name_expressions do, like \"{k.name}<{', '.join(names)}>\" with their values")
    values = dict(zip(names, given + [default for _, default in k.template[len(given):]]))
    if None in values.values():
        raise ValueError(f"{kernel} leaves out {', '.join(n for n, v in values.items() if v is None)}, which have no default")
    values |= aliases(with_headers(source, folders), defines or {})
    return k, [(_resolved(t, values), n) for t, n in k.params]


def _resolved(ctype: str, names: dict) -> str:
    """`ctype` with each word `names` holds replaced by its value, again while any is left (an
    alias of an alias), at most 8 deep."""
    word = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    for _ in range(8):
        if word is None or not word.search(ctype):
            break
        ctype = " ".join(word.sub(lambda m: f" {names[m.group(1)]} ", ctype).replace("*", " * ").split())
    return ctype


_DIRECTIVE_LINE = re.compile(r"^[ \t]*#[ \t]*(\w+)[ \t]*(.*?)[ \t]*$")


def _condition(text: str, defines: dict) -> bool | None:
    """The value of an #if's condition under `defines` (name -> value), None where the lab cannot
    read it (a macro call, a comparison of a type): then both branches count."""
    text = re.sub(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))", lambda m: " 1 " if (m[1] or m[2]) in defines else " 0 ", text)
    text = re.sub(r"[A-Za-z_]\w*", lambda m: f" {defines.get(m[0], '0')} ", text)
    text = text.replace("&&", " and ").replace("||", " or ").replace("!=", " != ")
    text = re.sub(r"!(?!=)", " not ", text)
    if re.fullmatch(r"(?:\s|\d+|[()<>=!+\-*/%]|\band\b|\bor\b|\bnot\b)*", text) is None or re.search(r"\d\s*\(", text):
        return None  # a name called as a function-like macro, or anything but numbers and operators
    try:
        return bool(eval(text, {"__builtins__": {}}, {}))  # digits, operators, and/or/not only (checked above)
    except (SyntaxError, ZeroDivisionError, TypeError):
        return None


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">]', re.M)
MOST_HEADERS = 32
"""The most headers `with_headers` reads into a source."""


def with_headers(source: str, folders) -> str:
    """`source` with each `#include` of a header found in `folders` replaced by the header's
    text (and its own includes, each header once, at most `MOST_HEADERS`): what the preprocessor
    reads, for the type aliases."""
    seen = set()

    def expand(match):
        found = next((f / match[1] for f in folders if (f / match[1]).is_file()), None)
        if found is None or found.resolve() in seen or len(seen) >= MOST_HEADERS:
            return match[0]
        seen.add(found.resolve())
        return _INCLUDE.sub(expand, found.read_text(errors="replace"))
    return _INCLUDE.sub(expand, source) if folders else source


_INCLUDED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(["<])([^">]+)[">]', re.M)


def own_headers(source: str, folders) -> dict:
    """The headers `source` includes that are found in `folders` (a quoted name looked for beside
    the header that includes it first, as the preprocessor does), and theirs, each once, at most
    `MOST_HEADERS`: its path inside the folder that holds it -> its path."""
    folders = [pathlib.Path(f).resolve() for f in folders]
    found, queue = {}, [(source, None)]
    while queue and len(found) < MOST_HEADERS:
        text, beside = queue.pop()
        for bracket, name in _INCLUDED.findall(text):
            places = ([beside] if beside and bracket == '"' else []) + folders
            path = next(((f / name).resolve() for f in places if (f / name).is_file()), None)
            inside = next((f for f in folders if path is not None and path.is_relative_to(f)), None)
            if inside is not None and path not in found.values() and len(found) < MOST_HEADERS:
                found.setdefault(path.relative_to(inside).as_posix(), path)
                queue.append((path.read_text(errors="replace"), path.parent))
    return found


def active(source: str, defines: dict) -> tuple:
    """(`source` with its comments and the lines the preprocessor would skip under `defines`
    blanked, each newline kept; the macros defined in the lines kept: name -> value). A branch
    of #if / #ifdef / #ifndef / #elif / #else whose condition the lab cannot read is kept."""
    kept, defined, stack = [], dict(defines), []  # stack: [this branch on (None: unknown), a branch taken]
    for line in _COMMENT_OR_STRING.sub(_blank, source).split("\n"):
        on = all(s[0] is not False for s in stack)
        directive = _DIRECTIVE_LINE.match(line)
        word, rest = (directive[1], directive[2]) if directive else ("", "")
        if word in ("if", "ifdef", "ifndef"):
            value = (_condition(rest, defined) if word == "if" else (rest.split()[0] in defined) == (word == "ifdef")
                     if rest else None)
            stack.append([value, value is True])
        elif word == "elif" and stack:
            value = False if stack[-1][1] else _condition(rest, defined)
            stack[-1] = [value, stack[-1][1] or value is True]
        elif word == "else" and stack:
            stack[-1] = [None if stack[-1][0] is None else not stack[-1][1], True]
        elif word == "endif" and stack:
            stack.pop()
        elif word == "define" and on and (m := re.fullmatch(r"(\w+)(?:\s+(.*))?", rest)):
            defined[m[1]] = (m[2] or "1").strip()
        kept.append(line if on or directive else "")
    return "\n".join(kept), defined


def aliases(source: str, defines: dict) -> dict:
    """The type aliases `source` declares where the preprocessor would keep them under `defines`
    (the -D options; `active`): `typedef T name;`, `using name = T;`, `#define name T` (a type
    of words, :: and *). An alias given two meanings is left out (g++ decides)."""
    code, _ = active(source, defines)
    found = {}
    for line in code.splitlines():
        directive = _DIRECTIVE_LINE.match(line)
        if directive and directive[1] == "define":
            m = re.fullmatch(r"(\w+)\s+([\w\s:*]+)", directive[2])
            if m and not re.fullmatch(r"[\d\s]+", m[2]):
                found.setdefault(m[1], set()).add(" ".join(m[2].split()))
            continue
        for m in re.finditer(r"\btypedef\s+([\w\s:*]+?)\s*\b(\w+)\s*;|\busing\s+(\w+)\s*=\s*([\w\s:*]+?)\s*;", line):
            name, target = (m[2], m[1]) if m[2] else (m[3], m[4])
            found.setdefault(name, set()).add(" ".join(target.replace("*", " * ").split()))
    return {name: targets.pop() for name, targets in found.items() if len(targets) == 1}


CPP_WORDS = {"int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "void", "const",
             "volatile", "true", "false", "sizeof", "alignof", "std", "size_t", "half", "__half", "nv_bfloat16",
             "__nv_bfloat16"}
"""Words a template argument may hold beside the source's own: C++'s types and constants."""


def _template_arguments(text: str, source: str) -> str:
    """What is wrong with `text`, a name expression's template arguments (between its outer
    angle brackets), before g++ sees it: a bracket that does not close or closes nothing, an
    empty argument, a name neither the source nor C++ declares; "" where nothing is."""
    closing, stack = {")": "(", "]": "[", "}": "{", ">": "<"}, []
    for c in text:
        if c in "([{" or c == "<" and "(" not in stack:
            stack.append(c)
        elif c in ")]}" or c == ">" and "(" not in stack:
            if not stack or stack.pop() != closing[c]:
                return f"a '{c}' closes nothing (the arguments are {text!r})"
    if stack:
        return f"a '{stack[-1]}' is never closed (the arguments are {text!r})"
    if text.strip() and any(not part.strip() for part in re.split(r",(?![^<(\[{]*[>)\]}])", text)):
        return "an argument is empty"
    words = declared_names(source) | CPP_WORDS | set(" ".join(SCALAR_TYPES).split())
    for name in re.findall(r"(?<![\w.])[A-Za-z_]\w*", text):
        if name not in words and VECTOR_TYPE.fullmatch(name) is None:
            return f"{name} is declared neither in the source (a type, a constant, a macro) nor by C++ or CUDA"
    return ""


_DECLARING = [re.compile(p, re.M) for p in (
    r"\b(?:struct|class|union|enum(?:\s+class)?|namespace)\s+(\w+)", r"^[ \t]*#[ \t]*define[ \t]+(\w+)",
    r"\busing\s+(\w+)\s*=", r"\btypedef\b[^;]*?(\w+)\s*(?:\[[^\]]*\]\s*)*;",
    r"\b(?:constexpr|const)\b[^;=(){}]*?(\w+)\s*(?:=|\{)", r"\b(?:__device__|__host__)\b[^;{}()=]*?\b(\w+)\s*\(")]


def declared_names(source: str) -> set:
    """The names `source` declares that a template argument may use: its types (struct, class,
    union, enum and their members, typedef, using), namespaces, macros, constants and device
    functions."""
    code = _COMMENT_OR_STRING.sub(" ", source)
    names = {m for pattern in _DECLARING for m in pattern.findall(code)}
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        names |= {part.split("=")[0].strip() for part in body.split(",") if part.strip()}
    return names


def parameters(source: str, kernel: str) -> list:
    """(type, name) of each parameter of `kernel` (a name or a name expression) in `source`."""
    return instantiate(source, kernel)[1]


def kernel_pointer(source: str, kernel: str) -> str:
    """The C++ expression of a pointer to `kernel` (a name or name expression) of `source`:
    `&name`, or, where the source defines another function of that name (a host launcher named as
    its kernel: legal overloading), `&name` cast to the kernel's own signature."""
    base, named = _EXPRESSION.fullmatch(kernel)[2], qualified(source, kernel)
    definitions = re.findall(rf"[\w>*&]\s+{re.escape(base)}\s*\([^;{{}}]*\)\s*\{{", _code(source))
    if len(definitions) < 2:
        return f"&{named}"
    return f"static_cast<void (*)({', '.join(t for t, _ in instantiate(source, kernel)[1])})>(&{named})"


def entries(source: str, kernel: str | None = None, defines: dict | None = None) -> list:
    """The kernels a build of `source` can launch: every one that is not a template and that the
    preprocessor keeps under `defines` (`active`: not one in an `#ifdef` left out), and `kernel`
    (a name expression) if it is not among them."""
    names = [k.name for k in declarations(active(source, defines or {})[0]) if not k.template]
    return names + [kernel] if kernel is not None and kernel not in names else names


def base_type(ctype: str) -> str:
    """A parameter's type without qualifiers or pointer: "const float* __restrict__" -> "float"."""
    words = ctype.replace("*", " ").replace("std::", "").split()
    return " ".join(w for w in words if w not in QUALIFIERS)


def element_type(ctype: str):
    """The NumPy dtype of a scalar of C type `ctype` (qualifiers and pointer aside), a vector
    type's component's (float4 -> float32), None for void; TypeError for a type the lab cannot
    pass."""
    vector = _vector(ctype)
    base = vector[0] if vector else base_type(ctype)
    if base in SCALAR_TYPES or base == "void":
        found = SCALAR_TYPES.get(base)
        return getattr(_ml_dtypes(), found) if isinstance(found, str) else found
    raise TypeError(f"{ctype} is not a type the lab passes: it passes NumPy arrays to pointers to C's scalar "
                    "types, CUDA's vector types (float4, int2, half2 ...) and void, those by value, and a struct "
                    f"by value; the scalar types: {', '.join(sorted(SCALAR_TYPES))}")


def _by_value(ctype: str) -> bool:
    """Whether a parameter of `ctype` is a struct, class or enum passed by value: no pointer, and
    no scalar, vector or void type."""
    return "*" not in ctype and _vector(ctype) is None and base_type(ctype) not in (*SCALAR_TYPES, "void")


def _struct(ctype: str, name: str, arg):
    """`arg` as the bytes a launch passes for parameter `name`, a struct (or enum) of `ctype` by value:
    a NumPy structured scalar (or a structured array of one element), its fields in the struct's order
    and C layout, as CuPy passes a struct; a ctypes.Structure or Union; an int for an enum (as a
    32-bit int). The traced run checks its size against the type's sizeof."""
    if isinstance(arg, (ctypes.Structure, ctypes.Union)):
        return np.void(bytes(arg))
    if isinstance(arg, np.ndarray) and arg.dtype.names and arg.size == 1:
        return arg.reshape(-1)[0]
    if isinstance(arg, np.void) and arg.dtype.names:
        return arg
    if isinstance(arg, numbers.Integral) and not isinstance(arg, (bool, np.bool_)):
        return _scalar(ctype, name, np.dtype(np.int32), arg)
    raise TypeError(f"args: {name} is {base_type(ctype)} passed by value (a struct, or an enum), which takes a NumPy "
                    "structured scalar of its fields in their C order and types (np.zeros((), np.dtype([(field, type), "
                    "...], align=True))[()], each field then set), a ctypes.Structure, or an int for an enum; got "
                    f"{type(arg).__name__}" + (": a dict's fields have no C layout" if isinstance(arg, dict) else ""))


def arguments(params: list, args, defaults: tuple = ()) -> list:
    """Each of `args` as a launch passes it to `params` ((type, name) each): a pointer's C-contiguous
    NumPy array of the pointee's dtype itself (writeable unless the pointee is const), or None for
    NULL; a scalar as a NumPy scalar of its parameter's C type: an integer (not a bool) within the
    type's range for an integer type, a real number within its range for a floating-point one, a
    bool for bool; a struct by value as `_struct` takes it; TypeError or ValueError naming the
    parameter otherwise, never a value converted. Parameters left out at the end take their `defaults` (`default_value`), as C++
    applies them."""
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"args must be a list of the kernel's arguments, got {type(args).__name__}")
    defaults = tuple(defaults) + (None,) * (len(params) - len(defaults))
    optional = len(params) - next((i + 1 for i in reversed(range(len(params))) if defaults[i] is None), 0)
    if not len(params) - optional <= len(args) <= len(params):
        given = f" (the last {optional} have defaults)" if optional else ""
        raise ValueError(f"args must hold one value per parameter ({', '.join(n for _, n in params)}){given}, "
                         f"got {len(args)}")
    args = [*args, *(default_value(*params[i], defaults[i]) for i in range(len(args), len(params)))]
    converted = []
    for (ctype, name), arg in zip(params, args):
        if _by_value(ctype):
            converted.append(_struct(ctype, name, arg))
            continue
        want, vector = element_type(ctype), _vector(ctype)
        if "*" in ctype and arg is None:
            converted.append(None)  # NULL
        elif "*" in ctype:
            if isinstance(arg, np.ma.MaskedArray) or isinstance(arg, np.ndarray) and (arg.dtype.hasobject
                                                                                      or not arg.dtype.isnative):
                what = (f"a masked array: pass its data ({name}.filled(0)) or only the unmasked values"
                        if isinstance(arg, np.ma.MaskedArray) else f"an array of {arg.dtype.str}, which is "
                        + ("Python objects, not numbers" if arg.dtype.hasobject else "not in this machine's byte order: "
                           f"pass {name}.astype({name}.dtype.newbyteorder('='))"))
                raise TypeError(f"args: {name} ({ctype}) must be a plain C-contiguous NumPy array, got {what}")
            if not isinstance(arg, np.ndarray) or not arg.flags.c_contiguous or want not in (None, arg.dtype):
                raise TypeError(f"args: {name} ({ctype}) must be a C-contiguous NumPy array of "
                                f"{np.dtype(want).name if want else 'any dtype'}, got {type(arg).__name__}"
                                f"{' of ' + str(arg.dtype) if isinstance(arg, np.ndarray) else ''}")
            if not arg.flags.writeable and "const" not in ctype.rsplit("*", 1)[0].split():
                raise ValueError(f"args: {name} ({ctype}) is an array the kernel may write, and the one given is "
                                 "read-only (writeable=False): pass a writeable copy, or declare the pointee const")
            converted.append(arg)
        elif vector:
            if not isinstance(arg, (tuple, list)) or len(arg) != vector[1]:
                raise TypeError(f"args: {name} is {ctype}, which takes a tuple of its {vector[1]} components "
                                f"({', '.join('xyzw'[:vector[1]])}), got {arg!r}")
            axes = "xyzw"[:vector[1]]
            parts = tuple(_scalar(vector[0], f"{name}.{axis}", np.dtype(want), v) for axis, v in zip(axes, arg))
            converted.append(np.array(parts, [(axis, want) for axis in axes])[()])  # a struct, as CuPy passes one
        elif want is None or isinstance(arg, np.ndarray):
            raise TypeError(f"args: {name} is {ctype}, which takes a number, not {type(arg).__name__}")
        else:
            converted.append(_scalar(ctype, name, np.dtype(want), arg))
    return converted


_LITERAL = re.compile(r"([+-]?(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))([fFlLuU]*)")


def default_value(ctype: str, name: str, text: str):
    """The value C++ gives parameter `name` of `ctype` from its default argument `text`: None
    for a pointer's NULL, nullptr or 0; a number or bool for a literal; a tuple of those for a
    vector's `make_uint3(...)`. ValueError where the
    lab cannot evaluate it (an expression: pass the value)."""
    text = text.strip()
    if "*" in ctype and text in ("NULL", "nullptr", "0"):
        return None
    match = _LITERAL.fullmatch(text)
    if text in ("true", "false"):
        return text == "true"
    vector = re.fullmatch(r"make_[a-z]+[1-4]\s*\((.*)\)", text, re.S)  # make_uint3(0, 0, 0): a tuple, as args take one
    if vector and "*" not in ctype:
        return tuple(default_value(base_type(ctype), name, part) for part in _split(vector[1]))
    if match and "*" not in ctype:
        number = match[1]
        if number.lower().startswith(("0x", "-0x", "+0x")):
            return int(number, 16)
        return float(number) if re.search(r"[.eE]", number) or "f" in match[2].lower() else int(number)
    raise ValueError(f"args: {name} ({ctype}) has the default {text}, which the lab does not evaluate: pass its "
                     "value in args")


def _scalar(ctype: str, name: str, dtype: np.dtype, arg):
    """`arg` as a NumPy scalar of `dtype`, the type of parameter `name` (`arguments`' rules)."""
    is_bool = isinstance(arg, (bool, np.bool_))
    if dtype.kind == "b":
        if not is_bool:
            raise TypeError(f"args: {name} is {ctype}, which takes True or False, got {arg!r}")
        return dtype.type(arg)
    if dtype.kind in "iu":
        if is_bool or not isinstance(arg, numbers.Integral):
            raise TypeError(f"args: {name} is {ctype}, which takes an integer (not a bool, str or float), got {arg!r}")
        info = np.iinfo(dtype)
        if not info.min <= arg <= info.max:
            raise ValueError(f"args: {name} is {ctype}, which holds integers from {info.min:,} to {info.max:,}, "
                             f"got {arg:,}")
        return dtype.type(arg)
    if is_bool or not isinstance(arg, numbers.Real):
        raise TypeError(f"args: {name} is {ctype}, which takes a real number (not a bool or str), got {arg!r}")
    most = float((np.finfo if dtype.kind == "f" else _ml_dtypes().finfo)(dtype).max)  # bf16, fp8: ml_dtypes'
    if (isinstance(arg, numbers.Integral) or math.isfinite(arg)) and not -most <= arg <= most:  # inf and nan pass
        raise ValueError(f"args: {name} is {ctype}, which holds numbers up to {most:.6g} in magnitude, got {arg!r}")
    return dtype.type(arg)


def arch_number(arch: str) -> int:
    """`__CUDA_ARCH__` for an architecture named as nvcc names it: "sm_80" -> 800, "sm_90a" -> 900."""
    match = re.fullmatch(r"sm_(\d{2,3})[af]?", arch) if isinstance(arch, str) else None
    if match is None:
        raise ValueError(f"arch must name an architecture like \"sm_80\" or \"sm_90\", got {arch!r}")
    return int(match.group(1)) * 10


def where(line: int, column: int = 0) -> str:
    """"line 12, column 5", or "line 12" where the column is unknown."""
    return f"line {line}, column {column}" if column else f"line {line}"


_OPTION = re.compile(r"(?:-I|--include-path=)(?P<dir>.+)|(?:-D|--define-macro=)(?P<name>[A-Za-z_]\w*)(?:=(?P<value>.*))?")


def compile_options(options) -> tuple:
    """(g++'s flags, the macros defined: name -> value, the include folders) of NVRTC- and
    CuPy-style `options`: each
    "-I<folder>" (or "--include-path=<folder>", an existing folder, its headers found as
    `#include "..."` finds them) or "-D<name>[=value]" (or "--define-macro=..."). TypeError or
    ValueError naming `options` otherwise."""
    if isinstance(options, str) or not isinstance(options, (list, tuple)):
        raise TypeError(f"options must be a tuple of compiler options (\"-I<folder>\", \"-DNAME=value\"), got {options!r}")
    flags, defines, folders = [], {}, []
    for option in options:
        match = _OPTION.fullmatch(option) if isinstance(option, str) else None
        if match is None:
            raise ValueError(f"options may hold \"-I<folder>\" and \"-D<name>[=value]\" (as NVRTC takes them), got {option!r}")
        if match["dir"] is not None:
            folder = pathlib.Path(match["dir"]).expanduser()
            if not folder.is_dir():
                raise ValueError(f"options: {option!r} names no folder ({folder} is not one)")
            folders.append(folder.resolve())
            flags.append(f"-I{folders[-1]}")
        else:
            defines[match["name"]] = match["value"] if match["value"] is not None else "1"
            flags.append(f"-D{match['name']}={defines[match['name']]}")
    return flags, defines, folders


def source_line(source: str, line: int) -> str:
    """Line `line` (from 1) of `source`, stripped; "" where there is none."""
    rows = source.splitlines()
    return rows[line - 1].strip() if 0 < line <= len(rows) else ""


def launched(source: str, kernel: str, args, defines: dict | None = None, folders: tuple = ()) -> tuple:
    """(the kernels a build must hold to launch `kernel` of `source`: `entries`; `args` as the
    launch passes them, defaults applied: `arguments`; the kernel's parameters), the source
    read under `defines` with the headers it includes from `folders`."""
    k, params = instantiate(source, kernel, defines, folders)
    return entries(source, kernel, defines), arguments(params, args, k.defaults), params


_ALIGNMENT = r"(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)"
_DECLARATOR = r"((?:[^;\[\]{}()]|" + _ALIGNMENT + r")*?)"
_EXTERN_SHARED = re.compile(r"\bextern\s+" + _DECLARATOR + r"\b__shared__\s+" + _DECLARATOR + r"\b(\w+)\s*\[\s*\]\s*;")
"""`extern __shared__ T name[];`, the type before or after `__shared__` (`extern float __shared__ s[];`)."""


_STATIC_SHARED = re.compile(r"\bstatic(?=\s+(?:(?:volatile|const)\s+)*__shared__\b)")
_SHARED_ALIGNAS = re.compile(r"\b__shared__\s+(alignas\s*\((?:[^()]|\([^()]*\))*\))")
"""`__shared__ alignas(16) T a[n];`, as nvcc takes it: g++ takes the standard attribute only before
cuda_emu.h's `static` that `__shared__` stands for (`alignas(16) __shared__ T a[n];`)."""


_LAUNCH = re.compile(r"<<<(?:[^;<>]|<(?!<<)|>(?!>>))*>>>")
"""A host launch's configuration, `<<<grid, block[, shared_mem[, stream]]>>>`."""
_CONST_CONSTANT = re.compile(r"\b__constant__\s+const\b|\bconst\s+__constant__\b")
SPECIAL_REGISTERS = ("laneid", "warpid", "lanemask_eq", "lanemask_lt", "lanemask_le", "lanemask_gt", "lanemask_ge")
"""PTX special registers that a kernel's inline assembly may read (cuda_emu.h's `emu_sreg_*`)."""
_SPECIAL_REGISTER = re.compile(r"\basm\s*(?:volatile\s*|__volatile__\s*)?\(\s*\"mov\.u32\s+%0\s*,\s*%%("
                               + "|".join(SPECIAL_REGISTERS) + r")\s*;\s*\"\s*:\s*\"=r\"\s*\(\s*([^()]+?)\s*\)\s*\)")
"""`asm("mov.u32 %0, %%laneid;" : "=r"(lane))`, the one statement of inline PTX the lab reads: a special register copied out."""


def _launcher(code: str, at: int) -> int:
    """Where the kernel expression before a launch's `<<<` at `at` starts: a name, with its
    scope (`ns::k`) and template arguments (`k<float, 4>`)."""
    i = at
    while i > 0 and code[i - 1].isspace():
        i -= 1
    if i > 0 and code[i - 1] == ">":  # template arguments: back to the matching <
        depth = 0
        while i > 0:
            i -= 1
            depth += (code[i] == ">") - (code[i] == "<")
            if depth == 0:
                break
    while i > 0 and (code[i - 1].isalnum() or code[i - 1] in "_:"):
        i -= 1
    return i


def _run_launches(source: str) -> str:
    """Each host launch `k<<<config>>>(args)` of `source` as a call the lab's program runtime
    runs (include/cuda_runtime.h, `emu_launch_config`), its line named and every line kept: where
    `k` names a kernel of `source` (not a template whose arguments are deduced or one that shares its
    name with a host function, nor one given fewer arguments than it has parameters; a kernel that
    shares its name with a host function is taken by its parameters' types), with its arguments as its parameters'
    types, whose bytes tell one launch from another. A launch is named by its kernel's own name with its
    namespaces ("vllm::append_kernel", as Nsight names it), and a launch through a function pointer
    (`f<<<...>>>(args)`, `f` a variable or a `(*f)` parameter) by the kernel `f` holds where it is one the
    program registers (`_registered`), found as the launch runs."""
    code = _bare(source, directives=True)
    known = {k.name: k for k in declarations(source)}
    declared = collections.Counter(_FUNCTION_NAME.findall(code))  # kernels and host functions
    for m in reversed(list(_LAUNCH.finditer(code))):
        start = _launcher(code, m.start())
        opening = m.end() + len(code[m.end():]) - len(code[m.end():].lstrip())
        if opening >= len(code) or code[opening] != "(":
            continue  # not a launch g++ would take: it says so
        end = min(_closing(code, opening), len(code))
        kernel, line = code[start:m.start()].strip(), code.count("\n", 0, m.start()) + 1
        name, args = re.split(r"\s*<", kernel.rsplit("::", 1)[-1], maxsplit=1)[0], source[opening + 1:end - 1]
        k = known.get(name)
        launch = source[start:m.start()]
        if k is not None and declared[name] > 1 and not k.template:  # a host function of its name too
            launch = f"static_cast<void (*)({', '.join(t for t, _ in k.params)})>({launch})"
        one = (k is not None and (declared[name] == 1 or not k.template) and (not k.template or "<" in kernel)
               and len(_split(code[opening + 1:end - 1])) == len(k.params))
        body = (f"{launch}, decltype(emu_params({launch})){{{args}}}" if one else
                f"[&]() EMU_UNTRACED {{ {source[start:m.start()]}{source[m.end():end]}; }}")
        own = (k.scope + kernel[re.match(r"(?:\w+\s*::\s*)*", kernel).end():]
               if k is not None and declared[name] == 1 and not kernel.startswith("::") else kernel)
        named = f"\"{' '.join(own.split())}\""  # as Nsight names it: "vllm::append_kernel", wherever it is launched
        if k is None and re.search(rf"(?<![\w.>])({re.escape(kernel)}\s*=(?!=)|\(\s*\*\s*{re.escape(kernel)}\s*\))", code):
            named = f"emu_launched_name({kernel}, {named})"  # a function pointer: the kernel it holds, by its own name
        call = f"emu_launch_config({source[m.start() + 3:m.end() - 3]}).run({named}, {line}, {body})"
        source = source[:start] + call + source[end:]
    return source


def _without_launches(source: str) -> str:
    """Each host launch's `<<<...>>>` of `source` left out (its newlines kept), so that `k(args)`
    remains: not one in a string literal or a comment."""
    for m in reversed(list(_LAUNCH.finditer(_bare(source)))):
        source = source[:m.start()] + "\n" * m.group(0).count("\n") + source[m.end():]
    return source


FRAMEWORKS = ("torch", "ATen", "c10", "caffe2", "pybind11")
"""Folders of the headers of PyTorch (and pybind11) that a library's kernel file includes for its
host wrappers (vLLM's and SGLang's csrc): none is part of the lab."""
_FRAMEWORK_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:" + "|".join(FRAMEWORKS)
                                + r")/[^>\"\n]*[>\"]|^[ \t]*#[ \t]*include[ \t]*[<\"]Python\.h[>\"]", re.M)
_FRAMEWORK_USE = re.compile(r"\b(?:torch|at|c10|caffe2|pybind11|py)\s*::|\b(?:TORCH|C10|PYBIND11)_\w+|\bAT_(?:DISPATCH|ASSERT|ERROR)\w*"
                            r"|\bVLLM_DISPATCH\w*|\bDISPATCH_\w*FLOAT\w*")
"""What only code written against PyTorch names: its namespaces and macros, the dispatch macros
libraries build on them."""


def _items(code: str, lo: int, hi: int):
    """(start, end) of each declaration or definition at namespace scope in `code[lo:hi]` (`_bare`'s,
    directives blanked): a function with its body, a class with its `;`, a declaration to its `;`;
    the bodies of namespaces and `extern "C"` blocks entered."""
    i = lo
    while i < hi:
        i = re.compile(r"\s*").match(code, i).end()
        if i >= hi:
            return
        block = re.compile(r'(?:inline\s+)?namespace\b[^{};()]*\{|extern\s*"[^"\n]*"\s*\{').match(code, i)
        if block:
            closing = _closing(code, block.end() - 1)
            yield from _items(code, block.end(), min(closing - 1, hi))
            i = closing
            continue
        j, depth = i, 0
        while j < hi:
            c = code[j]
            depth += (c in "([") - (c in ")]")
            if depth == 0 and c == ";":
                j += 1
                break
            if depth == 0 and c == "{":
                head = code[i:j].rstrip()
                j = _closing(code, j)
                if re.search(r"\)\s*(?:const|noexcept|override|final|\s|->[^{};=]*)*$", head):
                    break  # a function's body (or a macro's block): the item ends with it
                continue  # a class, enum or braced initialiser: on to its `;`
            if depth == 0 and c == "}":  # unbalanced (an #if's two branches): the item ends here
                break
            j += 1
        yield i, max(j, i + 1)
        i = max(j, i + 1)


def _item_name(text: str) -> str:
    """How a note names a declaration: a function (or a macro's block, `TORCH_LIBRARY(...)`) by its
    name, a class by its name and arguments, another by its first words."""
    head = re.split(r"[{;=]", text, maxsplit=1)[0]
    named = re.search(r"\b(?:struct|class|union|enum)\s+(?:alignas\s*\([^()]*\)\s*)?([\w:]+\s*(?:<.*>)?)", head, re.S)
    if named and "(" not in head.split(named.group(0))[-1]:
        return " ".join(named.group(1).split())
    called = re.search(r"([\w:~]+)\s*\(", head)
    return called.group(1) if called else " ".join(head.split())[:40]


def without_framework(source: str) -> tuple:
    """(`source` as the lab compiles a file that holds code written against PyTorch, each line
    kept; what it left out): its `#include`s of `FRAMEWORKS`' headers blanked, and each declaration
    at namespace scope that names PyTorch's namespaces or macros (`_FRAMEWORK_USE`, or a macro of
    the file's whose body does: a host wrapper that takes `torch::Tensor`s and launches the
    kernels, a `TORCH_LIBRARY` block, a class specialised for `c10::Half`) blanked, unless it is a
    kernel, whose compile error then names what it lacks. What was left out: (name, line) of each such declaration, the includes not
    counted. The source unchanged where it holds neither."""
    if not (_FRAMEWORK_INCLUDE.search(source) or _FRAMEWORK_USE.search(source)):
        return source, []
    text = _FRAMEWORK_INCLUDE.sub(lambda m: " " * len(m.group(0)), source)
    code, left = _bare(text, directives=True), []
    macros = [m.group(1) for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:\\\n|[^\n])*)", _bare(text), re.M)
              if _FRAMEWORK_USE.search(m.group(2))]  # a launcher's macro whose body is written against PyTorch
    uses = re.compile(_FRAMEWORK_USE.pattern + "".join(rf"|\b{name}\b" for name in macros))
    spans = []
    for start, end in _items(code, 0, len(code)):
        item = code[start:end]
        if uses.search(item) and not re.search(r"\b__global__\b", item):
            spans.append((start, end))
            left.append((_item_name(item), code.count("\n", 0, start) + 1))
    for start, end in reversed(spans):
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    return text, left


def for_gxx(source: str, program: bool = False) -> str:
    """`source` as g++ compiles it, its lines kept: each `extern __shared__ T name[];` a
    `T* const name` at the launch's dynamic shared memory (`emu_dynamic_shared`, sized by its
    shared_mem); `static __shared__` (legal CUDA: cuda_emu.h's `__shared__` is itself static)
    plain `__shared__`; `__constant__ const` plain `__constant__` (cuda_emu.h); inline PTX that
    reads a special register (`asm("mov.u32 %0, %%laneid;" : "=r"(lane))`) a call that reads it
    (`SPECIAL_REGISTERS`); each host launch
    `k<<<...>>>(args)` a plain call `k(args)`, so that the file's host code compiles (the lab
    never runs it), its code written against PyTorch left out (`without_framework`), or, in a whole
    `program`, a launch the lab runs (`_run_launches`)."""
    def pointer(match):
        ctype = re.sub(_ALIGNMENT, "", f"{match.group(1)} {match.group(2)}").strip()
        return (f"{ctype}* const {match.group(3)} = reinterpret_cast<{ctype}*>(emu_dynamic_shared());"
                + "\n" * match.group(0).count("\n"))
    source = _run_launches(_registered(source)) if program else _without_launches(without_framework(source)[0])
    source = _CONST_CONSTANT.sub("__constant__", source)
    source = _SPECIAL_REGISTER.sub(r"(\2 = emu_sreg_\1())", source)
    source = _SHARED_ALIGNAS.sub(r"\1 __shared__", source)
    return _STATIC_SHARED.sub("", _EXTERN_SHARED.sub(pointer, source))


_HOST_CODE = re.compile(r"<<<|\bint\s+main\s*\(|\bcuda(?:Malloc|Memcpy|Memset|Free|DeviceSynchronize)\w*\s*\(")
"""What only host code holds: a launch, main(), the runtime's memory calls."""


def host_code(source: str) -> str:
    """Where g++ refused a source that holds host code: a sentence naming its first line, and
    how the lab treats it (compiled against declarations of CUDA's host API, never run); ""
    where it holds none."""
    code = _bare(without_framework(source)[0], directives=True)  # not the host code the lab left out
    found = _HOST_CODE.search(code)
    if found is None:
        return ""
    line = code.count("\n", 0, found.start()) + 1
    return (f"\nLine {line} is host code (`{source.splitlines()[line - 1].strip()}`): the lab compiles a file's host "
            "code against declarations of CUDA's runtime, cuBLAS and cuBLASLt (include/cuda_runtime.h) and never runs "
            "it; it traces the kernel you name, with the arrays you give as NumPy arrays. Where an error above is in "
            "host code, a declaration the lab lacks is the likely cause: leave that code out of what you trace.")


_LAB = pathlib.Path(__file__).resolve().parent


def lines(exe: pathlib.Path, offsets: list, calls: dict | None = None, places: dict | None = None) -> dict:
    """The kernel source's (line, column) of each code offset: the innermost frame in kernel.cu
    (addr2line follows inlined calls), its column where the line table's innermost row is that
    line (an access inlined from the lab's own header, as `__ldg`, gets none). Where `calls` is
    given, it gets each offset's call site: the line of the next kernel.cu frame out, where the
    access is in a device function inlined there (0 where it is in the kernel itself). Where
    `places` is given, it gets "header:line" for each offset in no kernel.cu frame but in a
    header of the learner's (a device function there the compiler did not inline: ggml's
    block_reduce in common.cuh), whose line is then 0."""
    if not offsets:
        return {}
    done = subprocess.run(["addr2line", "-e", str(exe), "-i", "-a", *offsets], capture_output=True, text=True, check=True)
    frames, current = {}, None  # offset -> the kernel.cu lines of its frames, innermost first
    headers = {}  # offset -> its innermost frame in a header of the learner's, "name:line"
    for row in done.stdout.splitlines():
        if row.startswith("0x"):
            current = f"{int(row, 16):x}"
            frames[current] = []
        elif SOURCE_NAME in row:
            frames[current].append(int(row.rsplit(":", 1)[1].split()[0]))
        elif (m := re.match(r"(/.+):(\d+)", row)) and current not in headers and _LAB not in pathlib.Path(m[1]).parents \
                and not m[1].startswith(("/usr/", "/opt/", "/lib")):
            headers[current] = f"{pathlib.Path(m[1]).name}:{m[2]}"
    if places is not None:
        places.update({o: headers[o] for o in offsets if not frames.get(o) and o in headers})
    table = line_table(exe)
    found = {}
    for o in offsets:
        line, *outer = frames.get(o) or [0]
        inner = locate(table, int(o, 16))
        found[o] = (line, inner[2] if inner and inner[0] == SOURCE_NAME and inner[1] == line else 0)
        if calls is not None:
            calls[o] = next((c for c in outer if c != line), 0)
    return found


SHARED_ALIGN = 1 << 16
"""Where cuda_emu.h starts each __shared__ array: at a multiple of 64 KiB (static shared memory
is at most 48 KiB), which leaves a stretch past its end before the next array."""


def _statics(exe: pathlib.Path) -> list:
    """The data symbols of the executable `exe` (nm's, with the file each is declared in): (its
    offset, its bytes, its demangled name, that file)."""
    done = subprocess.run(["nm", "-S", "-C", "-l", "--defined-only", str(exe)], capture_output=True, text=True,
                          check=True)
    symbols = []
    for row in done.stdout.splitlines():
        symbol, _, place = row.partition("\t")
        fields = symbol.split(maxsplit=3)
        if len(fields) == 4 and fields[2] in "bBdDuV":
            symbols.append((int(fields[0], 16), int(fields[1], 16), fields[3], place.rsplit(":", 1)[0]))
    return symbols


def device_statics(exe: pathlib.Path) -> list:
    """The statics of a whole program's own files in the executable `exe` that are not __shared__
    arrays (cuda_emu.h starts each of those at a multiple of `SHARED_ALIGN`): its `__device__` and
    `__constant__` variables and the host's globals, (offset, bytes) each."""
    lab = str(pathlib.Path(__file__).parent)
    return [(lo, size) for lo, size, _, place in _statics(exe)
            if size and lo % SHARED_ALIGN and place.startswith("/") and not place.startswith((lab, "/usr/"))]


def shared_gaps(exe: pathlib.Path) -> list:
    """The stretches past the end of each __shared__ array of the traced executable `exe` that
    hold none of the kernel's own statics (nm's symbols and the lines they are declared at, and the
    guard of a static with a constructor that runs): (the
    array's name, its offset in the executable, its bytes, the stretch's first and end offsets)."""
    symbols = [(lo, size, name, place.endswith("/" + SOURCE_NAME)) for lo, size, name, place in _statics(exe)]
    mine = {name for _, _, name, in_source in symbols if in_source}
    own = [(lo, size, name.rsplit("::", 1)[-1]) for lo, size, name, in_source in symbols
           if in_source or name.removeprefix("guard variable for ") in mine]  # the kernel's statics and their guards
    gaps = []
    for lo, size, name in own:
        if lo % SHARED_ALIGN == 0 and size:
            start = lo + size
            for other, other_size, _ in sorted(o for o in own if lo + size <= o[0] < lo + SHARED_ALIGN):
                if other > start:
                    gaps.append((name, lo, size, start, other))
                start = max(start, other + other_size)
            if start < lo + SHARED_ALIGN:
                gaps.append((name, lo, size, start, lo + SHARED_ALIGN))
    return gaps


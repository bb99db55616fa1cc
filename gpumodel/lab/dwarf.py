"""The columns of a traced executable's code addresses, from its DWARF line table.

binutils' addr2line (which names the line, through inlined frames) prints no column; g++ writes
one per row of the line table (`-gcolumn-info`, its default). This reads the `.debug_line`
section of a little-endian ELF64 executable (DWARF 2 to 4 line programs, as `-gdwarf-4` writes)
and answers, per address, the innermost (file, line, column) that covers it. Anything it does not
understand (a compressed section, another DWARF version) gives no rows: the lab then names lines
without columns.
"""

from __future__ import annotations

import bisect
import pathlib
import struct

SHF_COMPRESSED = 0x800


def _section(data: bytes, name: str) -> bytes:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # ELF64, little-endian
        return b""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    strings = headers[names][4]
    for name_at, _, flags, _, offset, size in headers:
        end = data.index(b"\0", strings + name_at)
        if data[strings + name_at:end].decode() == name and not flags & SHF_COMPRESSED:
            return data[offset:offset + size]
    return b""


class _Reader:
    def __init__(self, data: bytes, at: int):
        self.data, self.at = data, at

    def fixed(self, fmt: str):
        value, = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def leb(self, signed=False) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value - (1 << shift) if signed and byte & 0x40 else value

    def string(self) -> str:
        end = self.data.index(b"\0", self.at)
        text, self.at = self.data[self.at:end].decode(errors="replace"), end + 1
        return text


def _unit(r: _Reader, version: int, end: int, rows: list) -> None:
    """Run one unit's line program, appending (address, file name, line, column) per row."""
    r.at += 4  # header_length
    min_inst = r.fixed("B")
    if version == 4:  # maximum_operations_per_instruction
        r.at += 1
    r.at += 1  # default_is_stmt
    line_base, line_range, opcode_base = r.fixed("b"), r.fixed("B"), r.fixed("B")
    lengths = [r.fixed("B") for _ in range(opcode_base - 1)]
    while r.string():  # include_directories
        pass
    files = []
    while name := r.string():
        files.append(name)
        r.leb(), r.leb(), r.leb()

    def reset():
        return {"address": 0, "file": 1, "line": 1, "column": 0}
    state = reset()

    def emit():
        name = files[state["file"] - 1] if 0 < state["file"] <= len(files) else ""
        rows.append((state["address"], name, state["line"], state["column"]))
    while r.at < end:
        op = r.fixed("B")
        if op >= opcode_base:
            adjusted = op - opcode_base
            state["address"] += adjusted // line_range * min_inst
            state["line"] += line_base + adjusted % line_range
            emit()
        elif op == 0:
            length = r.leb()
            after, sub = r.at + length, r.fixed("B")
            if sub == 1:
                rows.append((state["address"], "", 0, 0))  # end of a sequence: nothing covers what follows
                state = reset()
            elif sub == 2:
                state["address"] = r.fixed("Q")
            r.at = after
        elif op == 1:
            emit()
        elif op == 2:
            state["address"] += r.leb() * min_inst
        elif op == 3:
            state["line"] += r.leb(signed=True)
        elif op == 4:
            state["file"] = r.leb()
        elif op == 5:
            state["column"] = r.leb()
        elif op == 8:
            state["address"] += (255 - opcode_base) // line_range * min_inst
        elif op == 9:
            state["address"] += r.fixed("H")
        else:  # negate_stmt, basic_block, prologue_end, epilogue_begin, set_isa and any other
            for _ in range(lengths[op - 1]):
                r.leb()


def line_table(exe: pathlib.Path) -> list:
    """The executable's line table: (address, file name, line, column) rows, by address."""
    section = _section(pathlib.Path(exe).read_bytes(), ".debug_line")
    rows, at = [], 0
    while at + 4 <= len(section):
        length, = struct.unpack_from("<I", section, at)
        end = at + 4 + length
        version, = struct.unpack_from("<H", section, at + 4)
        if length < 0xFFFFFFF0 and 2 <= version <= 4:
            try:
                _unit(_Reader(section, at + 6), version, end, rows)
            except (IndexError, struct.error):
                pass
        at = end if length < 0xFFFFFFF0 else len(section)  # 64-bit DWARF: not written by g++ here
    rows.sort(key=lambda row: (row[0], bool(row[1])))  # where one sequence ends and the next begins, the next
    return rows


def locate(rows: list, address: int):
    """The (file name, line, column) of the last row at or before `address`, or None."""
    i = bisect.bisect_right(rows, address, key=lambda row: row[0]) - 1
    if i < 0 or not rows[i][1]:
        return None
    return rows[i][1:]

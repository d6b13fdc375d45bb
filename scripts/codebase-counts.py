#!/usr/bin/env python3
"""Counts a newcomer's view of the engine crate rests on, re-measured at will:
`pub` items against `pub(crate)`, string-typed error sites, assertions per function in the
directories that hand data between components, and the longest functions.

Rough by design (a line scanner, not a parser): test modules (`#[cfg(test)]` to the end of the
file, files named *tests*.rs) are skipped, and a function's length runs from its `fn` line to
the line where its braces balance.

Usage: codebase-counts.py [N]         the counts, and the N longest functions (10 by default)
       codebase-counts.py --missing DIR   each function in DIR (e.g. db) without an assertion
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates" / "wafer" / "src"
SEAM_DIRS = ["btree", "db", "buffer", "oop", "space"]
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")
ASSERT = re.compile(r"\b(debug_)?assert(_eq|_ne)?!")
STRING_ERRORS = re.compile(r"\b(InvalidOptions|Corrupt)\(\s*(format!|\"|[a-z_]+\.to_string|String)")


def source_lines(path):
    """The file's lines up to its test module."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        # `#[cfg(test)]`, `#[cfg(all(test, loom))]`: a test module either way.
        is_test_cfg = line.strip().startswith("#[cfg(") and re.search(r"\btest\b", line)
        if is_test_cfg and i + 1 < len(lines) and "mod " in lines[i + 1]:
            return lines[:i]
    return lines


def functions(lines):
    """(name, first line, length, assertions) of each function body."""
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, start, opened, asserts = 0, i, False, 0
        j = i
        while j < len(lines):
            line = lines[j].split("//")[0]
            asserts += len(ASSERT.findall(line))
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            if line.rstrip().endswith(";") and not opened:
                break  # A declaration without a body (trait method).
            if opened and depth <= 0:
                break
            j += 1
        if opened:
            out.append((m.group(5), start + 1, j - start + 1, asserts))
        i = j + 1
    return out


def private_modules():
    """Top-level modules lib.rs does not export: their `pub` items are the crate's own."""
    lib = (ROOT / "lib.rs").read_text()
    return set(re.findall(r"^(?:pub\((?:crate|super)\)\s+)?mod\s+(\w+);", lib, re.M))


def missing(directory):
    """`file:line name` of each function under `directory` (a seam directory) without an assertion."""
    base = ROOT / directory.strip("/")
    rows = []
    for path in sorted(base.rglob("*.rs")):
        if "tests" in path.name or "fuzzing" in path.name:
            continue
        rel = path.relative_to(ROOT)
        for name, line, _length, asserts in functions(source_lines(path)):
            if asserts == 0:
                rows.append(f"{rel}:{line} {name}")
    for row in rows:
        print(row)
    print(f"{len(rows)} functions without an assertion in {directory.strip('/')}/")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--missing":
        missing(sys.argv[2])
        return
    files = [p for p in ROOT.rglob("*.rs") if "tests" not in p.name and "fuzzing" not in p.name]
    private = private_modules()
    pub = crate = strings = 0
    seams = {d: [0, 0, 0] for d in SEAM_DIRS}  # functions, with an assertion, assertions
    longest = []
    for path in files:
        lines = source_lines(path)
        text = "\n".join(lines)
        pubs = len(re.findall(r"^\s*pub\s+(fn|struct|enum|trait|type|const|static|mod|use)\b", text, re.M))
        crates = len(re.findall(r"^\s*pub\((crate|super)\)\s", text, re.M))
        top = path.relative_to(ROOT).parts[0].removesuffix(".rs")
        if top in private:
            crate += pubs + crates
        else:
            pub += pubs
            crate += crates
        strings += len(STRING_ERRORS.findall(text))
        rel = path.relative_to(ROOT)
        for name, line, length, asserts in functions(lines):
            longest.append((length, f"{rel}:{line} {name}"))
            top = rel.parts[0] if len(rel.parts) > 1 else None
            if top in seams:
                seams[top][0] += 1
                seams[top][1] += asserts > 0
                seams[top][2] += asserts
    print(f"items public outside the crate {pub}, crate-private items {crate} "
          f"(private modules: {', '.join(sorted(private))})")
    print(f"string-typed error sites (InvalidOptions/Corrupt built from a string) {strings}")
    for d, (fns, with_assert, asserts) in seams.items():
        print(f"{d}/: {fns} functions, {with_assert} with an assertion, "
              f"{asserts / max(fns, 1):.2f} assertions per function")
    longest.sort(reverse=True)
    over = [l for l in longest if l[0] > 70]
    print(f"functions over 70 lines: {len(over)}")
    for length, where in longest[: int(sys.argv[1]) if len(sys.argv) > 1 else 10]:
        print(f"  {length:4} {where}")


if __name__ == "__main__":
    main()

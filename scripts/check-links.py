#!/usr/bin/env python3
"""Every relative link in README.md and docs/**/*.md resolves to an existing file.

Checks Markdown links and images, `[text](target)`, outside code blocks and code spans; a
`#fragment` is checked against the target's headings (GitHub's anchor rules). Exit 1 listing
each broken link. Run from anywhere: `python3 scripts/check-links.py`.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def anchors(path):
    out, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
            out.add(slug)
    return out


def links(path):
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield n, m.group(1)


def main():
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    bad = 0
    for f in files:
        for n, target in links(f):
            if re.match(r"^[a-z]+:", target) or target.startswith("#") and not target[1:]:
                continue
            base, _, frag = target.partition("#")
            dest = (f.parent / base).resolve() if base else f
            if not dest.exists():
                print(f"{f.relative_to(ROOT)}:{n}: {target}: no such file")
                bad += 1
            elif frag and dest.is_file() and dest.suffix == ".md" and frag not in anchors(dest):
                print(f"{f.relative_to(ROOT)}:{n}: {target}: no heading #{frag}")
                bad += 1
    print(f"{len(files)} files checked, {bad} broken links")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

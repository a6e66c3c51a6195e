#!/usr/bin/env python3
"""Checks that the docs cannot drift from the code (run by ctest, see tests/CMakeLists.txt).

    check_docs.py filters CLI ROOT   # docs/filters.md is what `CLI --help-filter all --format markdown` prints
    check_docs.py options CLI ROOT   # every option of `CLI --help` and `CLI batch --help` is named in docs/cli.md
    check_docs.py links ROOT         # every relative link of README.md, docs/*.md, python/README.md and
                                     # tests/gpu/README.md leads to a file (and its #anchor to a heading)

Each prints what is wrong and exits 1, or exits 0.
"""
import difflib
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

LINKED_PAGES = ["README.md", "docs/*.md", "python/README.md", "tests/gpu/README.md"]
FILTERS_COMMAND = ["--help-filter", "all", "--format", "markdown"]


def run(cli, *args):
    r = subprocess.run([cli, *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"check_docs: `{cli} {' '.join(args)}` failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def check_filters(cli, root):
    want = run(cli, *FILTERS_COMMAND)
    page = root / "docs" / "filters.md"
    have = page.read_text(encoding="utf-8") if page.exists() else ""
    if have == want:
        return []
    diff = "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "docs/filters.md",
                                        "streamblur " + " ".join(FILTERS_COMMAND)))
    return [f"docs/filters.md differs from the generated reference; regenerate it with\n"
            f"  streamblur {' '.join(FILTERS_COMMAND)} > docs/filters.md\n{diff}"]


def help_options(text):
    """The option names of a CLI11 --help text: '-c,--codec TEXT  ...' gives -c and --codec."""
    names, in_options = [], False
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            in_options = line.startswith("Options")
            continue
        m = re.match(r"^  (-[^\s]+)", line) if in_options else None
        if m:
            names += [n for n in m.group(1).split(",") if n.startswith("-")]
    return names


def check_options(cli, root):
    doc = (root / "docs" / "cli.md").read_text(encoding="utf-8")
    names = help_options(run(cli, "--help")) + help_options(run(cli, "batch", "--help"))
    if len(names) < 10:
        return [f"found only {len(names)} options in `{cli} --help`: has its layout changed?"]
    missing = sorted({n for n in names if not re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", doc)})
    return [f"docs/cli.md does not name the option {n} (from `streamblur --help` or `streamblur batch --help`)"
            for n in missing]


def strip_code(text, spans=True):
    """The text with fenced and indented code blocks (and, with spans, inline code spans) blanked: links
    there are examples."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^\s*(```|~~~)", line)
        if fence:
            if m and m.group(1) == fence:
                fence = None
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        elif line.startswith("    ") or line.startswith("\t"):
            out.append("")
        else:
            out.append(re.sub(r"`[^`]*`", "``", line) if spans else line)
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page):
    seen, out = {}, set()
    for line in strip_code(page.read_text(encoding="utf-8"), spans=False).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def check_links(root):
    pages = sorted({p for pattern in LINKED_PAGES for p in root.glob(pattern)})
    if not pages:
        return [f"no pages found under {root}"]
    problems = []
    for page in pages:
        text = strip_code(page.read_text(encoding="utf-8"))
        for m in LINK.finditer(text):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            where = f"{page.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}"
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                problems.append(f"{where}: link to '{target}': {path} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: link to '{target}': {dest.relative_to(root)} has no heading #{anchor}")
    return problems


def main(argv):
    if len(argv) == 4 and argv[1] in ("filters", "options"):
        check = check_filters if argv[1] == "filters" else check_options
        problems = check(argv[2], Path(argv[3]).resolve())
    elif len(argv) == 3 and argv[1] == "links":
        problems = check_links(Path(argv[2]).resolve())
    else:
        sys.exit(__doc__)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"check_docs {argv[1]}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

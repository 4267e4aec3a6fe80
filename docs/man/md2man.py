#!/usr/bin/env python3
"""md2man: turns the man pages' markdown sources (docs/man/*.md) into roff.

It knows only the markdown the pages use, so that building the manual needs
nothing beyond Python (no pandoc):

  # name(S) -- summary          first line: .TH, and the NAME section
  ## TITLE / ### Title          .SH / .SS
  blank-line separated text     paragraphs (.PP)
  term line, then ":   text"    a tagged paragraph (.TP), e.g. an option
  "* " or "- " items            a bulleted list
  ``` fences                    a literal block
  **b**, `code`, *i*            bold, bold, italic

Usage: md2man.py --version V [--date YYYY-MM-DD] IN.md OUT
"""

import argparse
import datetime
import os
import re
import sys


def escape(text):
    """Escapes roff's special characters in plain text."""
    text = text.replace("\\", "\\e")
    return text


def inline(text):
    """Converts inline markup of one line to roff font changes."""
    out = []
    pos = 0
    # Code spans first: nothing inside them is markup.
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*")
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + escape(m.group(1)).replace("-", "\\-") + "\\fR")
        elif m.group(2) is not None:
            out.append("\\fB" + escape(m.group(2)).replace("-", "\\-") + "\\fR")
        else:
            out.append("\\fI" + escape(m.group(3)) + "\\fR")
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def line_out(text):
    """A text line roff will not read as a request (leading . or ')."""
    text = inline(text.strip())
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def convert(src, version, date, name_hint):
    """Returns the roff page for the markdown lines src."""
    lines = src.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError(f"{name_hint}: first line must be '# name(S) -- summary'")
    m = re.match(r"# ([A-Za-z0-9_.-]+)\((\d)\) -- (.+)$", lines[0])
    if not m:
        raise ValueError(f"{name_hint}: first line must be '# name(S) -- summary', not {lines[0]!r}")
    name, section, summary = m.groups()
    manual = "OpenFAM Programmer's Manual" if section == "3" else "OpenFAM Manual"
    out = [
        f'.TH "{name.upper()}" "{section}" "{date}" "OpenFAM {version}" "{manual}"',
        ".SH NAME",
        f"{name.replace('-', chr(92) + '-')} \\- {inline(summary)}",
    ]
    i = 1
    para = []  # lines of the paragraph being gathered

    def flush():
        if para:
            out.append(".PP")
            out.extend(line_out(p) for p in para)
            para.clear()

    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            flush()
            out.extend([".PP", ".RS 4", ".nf"])
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                lit = escape(lines[i]).replace("-", "\\-")
                out.append("\\&" + lit)
                i += 1
            if i == len(lines):
                raise ValueError(f"{name_hint}: unclosed ``` block")
            out.extend([".fi", ".RE"])
        elif ln.startswith("### "):
            flush()
            out.append(f'.SS "{inline(ln[4:].strip())}"')
        elif ln.startswith("## "):
            flush()
            out.append(f'.SH "{inline(ln[3:].strip()).upper()}"')
        elif ln.startswith("# "):
            raise ValueError(f"{name_hint}:{i + 1}: only the first line may be a '# ' title")
        elif not ln.strip():
            flush()
        elif i + 1 < len(lines) and lines[i + 1].startswith(":   ") and not para:
            # A definition: the term, then its text (":   " and indented
            # continuation lines).
            out.append(".TP")
            out.append(line_out(ln))
            i += 1
            out.append(line_out(lines[i][4:]))
            while i + 1 < len(lines) and lines[i + 1].startswith("    ") and lines[i + 1].strip():
                i += 1
                out.append(line_out(lines[i]))
        elif re.match(r"[*-] ", ln) and not para:
            out.append(".IP \\(bu 2")
            out.append(line_out(ln[2:]))
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and lines[i + 1].strip():
                i += 1
                out.append(line_out(lines[i]))
        else:
            para.append(ln)
        i += 1
    flush()
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description="markdown man page source to roff")
    ap.add_argument("--version", required=True)
    ap.add_argument("--date", help="date on the page (default: $SOURCE_DATE_EPOCH, else the source's mtime)")
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args()
    date = a.date
    if not date:
        ts = os.environ.get("SOURCE_DATE_EPOCH") or os.stat(a.src).st_mtime
        date = datetime.datetime.fromtimestamp(int(float(ts)), datetime.timezone.utc).strftime("%Y-%m-%d")
    with open(a.src, encoding="utf-8") as f:
        src = f.read()
    try:
        page = convert(src, a.version, date, a.src)
    except ValueError as e:
        print(f"md2man: {e}", file=sys.stderr)
        return 1
    tmp = a.dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, a.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks the Chapel binding OpenFAM.chpl against the C header openfam.h.

No Chapel compiler runs on the machines that test this project, so nothing
else would notice the module drifting from the C ABI. This script is that
check. It compares, through one explicit C-type -> Chapel-type table:

  * every function prototype of the header with the module's `extern proc`
    of the same C name: parameter count, each parameter type, return type;
  * every struct typedef with an `extern record` (field names, order, types);
  * every enum, opaque struct and scalar typedef with an `extern type`;
  * every integer or string #define and every enum constant with a Chapel
    `param` of the same name and value;
  * the `require` line that names the header and the library.

It fails on any difference, on a header function without an extern, on an
extern without a header function, and on any header construct it cannot
read (so a new kind of declaration is reported, never skipped).

The header is run through the C preprocessor (`$CC -E -dD`), and only the
lines that come from the header file itself are read, so system headers do
not leak in and conditionals resolve as they do for a C program on this
machine.

Usage: check_binding.py [--header H] [--module M] [--cc CC]
Exit status 0 when the binding matches, 1 on any difference.
"""

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# C base types -> the Chapel type an extern declaration must use for them.
# One spelling each, so a review of the module is a string comparison.
BASE_TYPES = {
    "void": "void",
    "char": "c_char",
    "signed char": "c_schar",
    "unsigned char": "c_uchar",
    "short": "c_short",
    "unsigned short": "c_ushort",
    "int": "c_int",
    "unsigned int": "c_uint",
    "long": "c_long",
    "unsigned long": "c_ulong",
    "long long": "c_longlong",
    "unsigned long long": "c_ulonglong",
    "size_t": "c_size_t",
    "ssize_t": "c_ssize_t",
    "int8_t": "int(8)",
    "int16_t": "int(16)",
    "int32_t": "int(32)",
    "int64_t": "int(64)",
    "uint8_t": "uint(8)",
    "uint16_t": "uint(16)",
    "uint32_t": "uint(32)",
    "uint64_t": "uint(64)",
    "float": "real(32)",
    "double": "real(64)",
}

# Typedefs from system headers that the binding redeclares by name. The
# module must carry `extern type NAME = <value>;` for each one it uses; the
# value is what the type is on Linux (glibc and musl alike).
SYSTEM_TYPEDEFS = {
    "mode_t": "c_uint",
}

# Chapel spelling of the C type of a header enum (an enum is an int in C).
ENUM_CHAPEL_TYPE = "c_int"

# Extern procs the module may declare that are not in openfam.h, with the
# only signature accepted for each: the library hands out malloc'd memory
# that must go back through libc's free(), not Chapel's allocator.
FOREIGN_EXTERNS = {
    "free": (["c_ptr(void)"], ""),
}

# Chapel reserved words (Chapel 2.x spec): a parameter or field with one of
# these names would not compile, and no compiler runs here to say so.
CHAPEL_RESERVED = set("""
_ align as atomic begin bool borrowed break by bytes catch class cobegin
coforall complex config const continue defer delete dmapped do domain else
enum except export extern false for forall foreach forwarding if imag import
in include index inline inout int interface iter label let lifetime local
locale manage module new nil noinit none nothing on only operator otherwise
out override owned param private proc prototype public range real record
reduce ref require return scan select serial shared single sparse string
subdomain sync then this throw throws true try type uint union unmanaged use
var void when where while with yield zip
""".split())

C_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__"}
C_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double",
                "signed", "unsigned", "_Bool", "struct", "enum", "union"}


class CheckError(Exception):
    """A file could not be read or parsed; the check cannot go on."""


# ---------------------------------------------------------------- C side

@dataclass
class CType:
    """A C type as base name plus pointer levels.

    consts[0] says whether the base is const-qualified, consts[i] whether
    the i-th pointer is; the last entry qualifies the object itself and
    has no effect on the Chapel mapping of a parameter.
    """
    base: str
    consts: list

    def text(self):
        out = ("const " if self.consts[0] else "") + self.base
        for c in self.consts[1:]:
            out += " *" + (" const" if c else "")
        return out


@dataclass
class CFunc:
    name: str
    ret: CType
    params: list  # of (name, CType)


@dataclass
class Header:
    funcs: dict = field(default_factory=dict)      # name -> CFunc
    structs: dict = field(default_factory=dict)    # name -> [(field, CType, dim)]
    enums: dict = field(default_factory=dict)      # name -> [(const, value)]
    opaque: set = field(default_factory=set)       # typedef struct tag name
    scalars: dict = field(default_factory=dict)    # name -> underlying text
    constants: dict = field(default_factory=dict)  # name -> int or str
    problems: list = field(default_factory=list)   # unreadable constructs


TOKEN_RE = re.compile(
    r'[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*'
    r'|"(?:\\.|[^"\\])*"|\.\.\.|\S')


def preprocess(header, cc):
    """Runs the preprocessor; returns (code lines, #define lines) that come
    from the header file itself."""
    cmd = cc.split() + ["-E", "-dD", "-I", os.path.dirname(header) or ".",
                        header]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise CheckError(f"cannot run the preprocessor {cmd[0]!r}: {e}")
    if res.returncode != 0:
        raise CheckError(f"{' '.join(cmd)} failed:\n{res.stderr.strip()}")
    target = os.path.realpath(header)
    code, defines = [], []
    inside = False
    for line in res.stdout.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            name = m.group(1)
            inside = not name.startswith("<") and \
                os.path.realpath(name) == target
            continue
        if not inside:
            continue
        if line.startswith("#define"):
            defines.append(line)
        elif line.startswith("#"):
            continue
        else:
            code.append(line)
    return code, defines


def parse_int(text):
    """Value of a C integer literal (optionally parenthesised), or None."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    m = re.fullmatch(r"(-?)\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", t)
    if not m:
        return None
    v = int(m.group(2), 0)
    return -v if m.group(1) else v


def split_top(tokens, sep):
    """Splits a token list on sep at bracket depth 0."""
    parts, cur, depth = [], [], 0
    for t in tokens:
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def parse_ctype(tokens, where):
    """Parses type tokens (no declarator name) into a CType."""
    consts = [False]
    base = []
    seen_ptr = False
    for t in tokens:
        if t == "*":
            consts.append(False)
            seen_ptr = True
        elif t in C_QUALIFIERS:
            if t == "const":
                consts[-1] = True
        elif seen_ptr:
            raise CheckError(f"{where}: cannot read type {' '.join(tokens)!r}")
        else:
            base.append(t)
    if not base:
        raise CheckError(f"{where}: missing type in {' '.join(tokens)!r}")
    # Spell integer types one way: "signed int" and "signed" are "int",
    # "long int" is "long", "unsigned" is "unsigned int"; "signed char" stays
    # apart from "char", as in C.
    if base[0] == "signed" and base[1:] != ["char"]:
        base = base[1:] or ["int"]
    if base == ["unsigned"]:
        base = ["unsigned", "int"]
    if base[-1] == "int" and len(base) > 1 and base[-2] in ("short", "long"):
        base = base[:-1]
    return CType(" ".join(base), consts)


def split_declarator(tokens, where):
    """Splits 'type tokens name [N]' into (type tokens, name, dim)."""
    dim = None
    if len(tokens) >= 3 and tokens[-1] == "]":
        if tokens[-3] == "[":
            dim = parse_int(tokens[-2])
            tokens = tokens[:-3]
        elif tokens[-2] == "[":
            dim = 0  # T x[] in a parameter list is T *x
            tokens = tokens[:-2]
        if dim is None:
            raise CheckError(f"{where}: cannot read array size")
    last = tokens[-1] if tokens else ""
    if re.fullmatch(r"[A-Za-z_]\w*", last) and last not in C_TYPE_WORDS \
            and last not in C_QUALIFIERS and len(tokens) > 1:
        return tokens[:-1], last, dim
    return tokens, None, dim


def parse_function(tokens, hdr):
    if "(" not in tokens:
        raise CheckError("not a function")
    i = tokens.index("(")
    if i < 2 or tokens[-1] != ")":
        raise CheckError(f"cannot read declaration {' '.join(tokens)!r}")
    name = tokens[i - 1]
    where = f"function {name}"
    inner = tokens[i + 1:-1]
    if "(" in inner or "(" in tokens[:i]:
        raise CheckError(f"{where}: function pointers are not supported")
    ret = parse_ctype(tokens[:i - 1], where + " return type")
    params = []
    if inner and inner != ["void"]:
        for n, ptoks in enumerate(split_top(inner, ","), 1):
            if ptoks == ["..."]:
                raise CheckError(f"{where}: variadic functions cannot be "
                                 "bound from Chapel")
            ttoks, pname, dim = split_declarator(ptoks, where)
            ctype = parse_ctype(ttoks, f"{where} parameter {n}")
            if dim is not None:
                ctype.consts.append(False)
            params.append((pname or f"arg{n}", ctype))
    if name in hdr.funcs:
        raise CheckError(f"{where}: declared twice")
    hdr.funcs[name] = CFunc(name, ret, params)


def parse_typedef(tokens, hdr):
    body_start = tokens.index("{") if "{" in tokens else -1
    kind = tokens[1] if len(tokens) > 1 else ""
    if kind in ("struct", "enum", "union") and body_start >= 0:
        if tokens[-2] != "}" or kind == "union":
            raise CheckError(f"cannot read typedef {' '.join(tokens)!r}")
        name = tokens[-1]
        body = tokens[body_start + 1:-2]
        if kind == "enum":
            values, nxt = [], 0
            for part in split_top(body, ","):
                if not part:
                    continue
                cname = part[0]
                if len(part) > 1:
                    v = parse_int(" ".join(part[2:])) if part[1] == "=" \
                        else None
                    if v is None:
                        raise CheckError(f"enum {name}: cannot evaluate "
                                         f"{' '.join(part)!r}")
                    nxt = v
                values.append((cname, nxt))
                hdr.constants[cname] = nxt
                nxt += 1
            hdr.enums[name] = values
        else:
            fields = []
            for ftoks in split_top(body, ";"):
                if ":" in ftoks:
                    raise CheckError(f"struct {name}: bit-fields have no "
                                     "Chapel mapping")
                if len(split_top(ftoks, ",")) != 1:
                    raise CheckError(f"struct {name}: one field per "
                                     f"declaration: {' '.join(ftoks)!r}")
                ttoks, fname, dim = split_declarator(ftoks, f"struct {name}")
                if fname is None or dim == 0:
                    raise CheckError(f"struct {name}: cannot read field "
                                     f"{' '.join(ftoks)!r}")
                fields.append((fname, parse_ctype(ttoks, f"struct {name}"),
                               dim))
            hdr.structs[name] = fields
        return
    if "(" in tokens:
        raise CheckError(f"function-pointer typedef {' '.join(tokens)!r} "
                         "has no checked Chapel mapping")
    if kind in ("struct", "union", "enum") and len(tokens) == 4:
        if kind != "struct":
            raise CheckError(f"cannot read typedef {' '.join(tokens)!r}")
        hdr.opaque.add(tokens[3])
        return
    ttoks, name, dim = split_declarator(tokens[1:], "typedef")
    if name is None or dim is not None:
        raise CheckError(f"cannot read typedef {' '.join(tokens)!r}")
    hdr.scalars[name] = " ".join(ttoks)


def parse_header(header, cc):
    """Reads the header's functions, types and constants."""
    code, defines = preprocess(header, cc)
    hdr = Header()
    for line in defines:
        m = re.match(r"#define\s+(\w+)(\()?\s*(.*)$", line)
        if not m or m.group(2):
            continue  # function-like macros are not part of the ABI
        name, value = m.group(1), m.group(3).strip()
        if not value:
            continue  # include guards and feature flags
        s = re.fullmatch(r'"((?:\\.|[^"\\])*)"', value)
        if s:
            hdr.constants[name] = s.group(1)
        elif parse_int(value) is not None:
            hdr.constants[name] = parse_int(value)
        else:
            hdr.problems.append(f"header: #define {name} {value}: the "
                                "checker cannot evaluate this value")
    tokens = [t for t in TOKEN_RE.findall("\n".join(code))
              if t != "__extension__"]
    # Outside C++, extern "C" { ... } is preprocessed away; drop it anyway
    # so the header can be checked with a C++ preprocessor too.
    while True:
        for i in range(len(tokens) - 2):
            if tokens[i:i + 3] == ["extern", '"C"', "{"]:
                depth = 0
                for j in range(i + 2, len(tokens)):
                    depth += {"{": 1, "}": -1}.get(tokens[j], 0)
                    if depth == 0:
                        break
                tokens = tokens[:i] + tokens[i + 3:j] + tokens[j + 1:]
                break
        else:
            break
    for decl in split_top(tokens, ";"):
        if not decl:
            continue
        try:
            if decl[0] in ("_Static_assert", "static_assert"):
                continue
            if decl[0] == "extern":
                decl = decl[1:]
            if decl[0] == "typedef":
                parse_typedef(decl, hdr)
            elif "(" in decl:
                parse_function(decl, hdr)
            else:
                raise CheckError(f"unsupported declaration "
                                 f"{' '.join(decl)!r}")
        except CheckError as e:
            hdr.problems.append(f"header: {e}")
    return hdr


def chapel_type(ctype, hdr, is_param=True):
    """The Chapel spelling a C type must have, or raises CheckError."""
    base = ctype.base
    if base in BASE_TYPES:
        s = BASE_TYPES[base]
    elif base in SYSTEM_TYPEDEFS or base in hdr.structs or base in hdr.enums \
            or base in hdr.opaque or base in hdr.scalars:
        s = base
    else:
        raise CheckError(f"no Chapel mapping for C type {ctype.text()!r}")
    levels = ctype.consts[1:]
    if is_param and not levels and base == "void":
        raise CheckError("void parameter")
    for i in range(len(levels)):
        s = f"{'c_ptrConst' if ctype.consts[i] else 'c_ptr'}({s})"
    return s


def types_used(hdr):
    """Names of every base type the header's functions and structs use."""
    used = set()
    for f in hdr.funcs.values():
        used.add(f.ret.base)
        used.update(t.base for _, t in f.params)
    for fields in hdr.structs.values():
        used.update(t.base for _, t, _ in fields)
    return used


# ----------------------------------------------------------- Chapel side

@dataclass
class ChplProc:
    cname: str
    chplname: str
    params: list   # of (intent, name, type or None)
    ret: str       # "" for none
    line: int


@dataclass
class Module:
    procs: list = field(default_factory=list)
    types: dict = field(default_factory=dict)    # name -> value or None
    records: dict = field(default_factory=dict)  # name -> [(field, type)]
    params: dict = field(default_factory=dict)   # name -> value text
    requires: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def strip_chapel_comments(src):
    """Blanks out comments (Chapel block comments nest), keeping line
    numbers and string literals intact."""
    out, i, n, depth = [], 0, len(src), 0
    while i < n:
        if depth:
            if src.startswith("/*", i):
                depth += 1
                out.append("  ")
                i += 2
            elif src.startswith("*/", i):
                depth -= 1
                out.append("  ")
                i += 2
            else:
                out.append("\n" if src[i] == "\n" else " ")
                i += 1
        elif src.startswith("/*", i):
            depth = 1
            out.append("  ")
            i += 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src[i] == '"':
            m = re.compile(r'"(?:\\.|[^"\\])*"').match(src, i)
            if not m:
                raise CheckError("unterminated string literal in module")
            out.append(m.group(0))
            i = m.end()
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def matching(text, i, open_, close):
    """Index just past the bracket closing the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise CheckError(f"unbalanced {open_!r} in module")


def split_commas(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def norm(t):
    return re.sub(r"\s+", "", t)


INTENTS = ("const ref", "const in", "const", "ref", "in", "out", "inout",
           "param", "type")


def parse_module(path):
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except OSError as e:
        raise CheckError(f"cannot read {path}: {e}")
    text = strip_chapel_comments(raw)
    mod = Module()

    def lineno(pos):
        return text.count("\n", 0, pos) + 1

    for m in re.finditer(r"\brequire\s+([^;]*);", text):
        mod.requires.extend(re.findall(r'"([^"]*)"', m.group(1)))

    proc_re = re.compile(
        r'\bextern\s+(?:"(\w+)"\s+)?proc\s+(\w+)\s*\(')
    for m in proc_re.finditer(text):
        start = m.end() - 1
        end = matching(text, start, "(", ")")
        params = []
        for p in split_commas(text[start + 1:end - 1]):
            p = " ".join(p.split())
            intent = ""
            for it in INTENTS:
                if p.startswith(it + " "):
                    intent, p = it, p[len(it) + 1:]
                    break
            if ":" in p:
                pname, ptype = p.split(":", 1)
                params.append((intent, pname.strip(), norm(ptype)))
            else:
                params.append((intent, p.strip(), None))
        semi = text.find(";", end)
        brace = text.find("{", end)
        if semi < 0 or (0 <= brace < semi):
            mod.problems.append(f"module line {lineno(m.start())}: extern "
                                f"proc {m.group(2)} must be a prototype "
                                "ending in ';'")
            continue
        rest = text[end:semi].strip()
        ret = norm(rest[1:]) if rest.startswith(":") else None
        if ret is None and rest:
            mod.problems.append(f"module line {lineno(m.start())}: cannot "
                                f"read return type {rest!r} of "
                                f"{m.group(2)}")
            ret = ""
        mod.procs.append(ChplProc(m.group(1) or m.group(2), m.group(2),
                                  params, ret or "", lineno(m.start())))

    for m in re.finditer(
            r'\bextern\s+(?:"(\w+)"\s+)?type\s+(\w+)\s*(=\s*([^;]+))?;',
            text):
        name = m.group(1) or m.group(2)
        mod.types[name] = norm(m.group(4)) if m.group(3) else None

    for m in re.finditer(r'\bextern\s+(?:"(\w+)"\s+)?record\s+(\w+)\s*\{',
                         text):
        name = m.group(1) or m.group(2)
        end = matching(text, m.end() - 1, "{", "}")
        fields = []
        for decl in text[m.end():end - 1].split(";"):
            decl = decl.strip()
            if not decl:
                continue
            fm = re.fullmatch(r"var\s+(\w+)\s*:\s*(.+)", decl, re.S)
            if not fm:
                mod.problems.append(f"module: extern record {name}: cannot "
                                    f"read field {decl!r}")
                continue
            fields.append((fm.group(1), norm(fm.group(2))))
        mod.records[name] = fields

    for m in re.finditer(
            r'\bparam\s+(\w+)\s*(?::\s*([^=;]+?))?\s*=\s*([^;]+);', text):
        mod.params.setdefault(m.group(1), m.group(3).strip())
    return mod


def chapel_value(text):
    """Value of a Chapel param initializer: int, str, or None."""
    t = text.strip()
    s = re.fullmatch(r'"((?:\\.|[^"\\])*)"', t)
    if s:
        return s.group(1)
    m = re.fullmatch(r"(-?)\s*(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
                     r"|\d[\d_]*)(?:\s*:\s*[\w()]+)?", t)
    if not m:
        return None
    v = int(m.group(2).replace("_", ""), 0)
    return -v if m.group(1) else v


# -------------------------------------------------------------- compare

def compare(hdr, mod):
    """Returns the list of differences between header and module."""
    problems = list(hdr.problems) + list(mod.problems)

    reqs = " ".join(mod.requires)
    for need in ("openfam.h", "-lopenfam"):
        if need not in mod.requires:
            problems.append(f"module: require statement lacks {need!r} "
                            f"(has {reqs!r})")

    # Functions.
    by_c = {}
    for p in mod.procs:
        if p.cname in by_c:
            problems.append(f"module line {p.line}: second extern for "
                            f"{p.cname} (first on line {by_c[p.cname].line})")
            continue
        by_c[p.cname] = p
    for name, f in sorted(hdr.funcs.items()):
        p = by_c.get(name)
        if p is None:
            problems.append(f"{name}: in the header but no extern proc "
                            "in the module")
            continue
        try:
            want_ret = chapel_type(f.ret, hdr, is_param=False)
        except CheckError as e:
            problems.append(f"{name}: return type: {e}")
            continue
        if want_ret == "void":
            want_ret = ""
        got_ret = "" if p.ret == "void" else p.ret
        if got_ret != want_ret:
            problems.append(f"{name}: return type is {p.ret or 'none'!r} in "
                            f"the module, header {f.ret.text()!r} needs "
                            f"{want_ret or 'none'!r}")
        if len(p.params) != len(f.params):
            problems.append(f"{name}: {len(p.params)} parameters in the "
                            f"module, {len(f.params)} in the header")
            continue
        for i, ((cname, ctype), (intent, pname, ptype)) in enumerate(
                zip(f.params, p.params), 1):
            where = f"{name}: parameter {i} ({cname})"
            if pname in CHAPEL_RESERVED:
                problems.append(f"{where}: {pname!r} is a Chapel reserved "
                                "word")
            if intent:
                problems.append(f"{where}: intent {intent!r} hides the C "
                                "type; declare the exact Chapel type")
            try:
                want = chapel_type(ctype, hdr)
            except CheckError as e:
                problems.append(f"{where}: {e}")
                continue
            if ptype is None:
                problems.append(f"{where}: no type given, header "
                                f"{ctype.text()!r} needs {want!r}")
            elif ptype != want:
                problems.append(f"{where}: type {ptype!r} in the module, "
                                f"header {ctype.text()!r} needs {want!r}")
    for cname, p in sorted(by_c.items()):
        if cname in hdr.funcs:
            continue
        if cname in FOREIGN_EXTERNS:
            want_params, want_ret = FOREIGN_EXTERNS[cname]
            got = ([t for _, _, t in p.params], "" if p.ret == "void"
                   else p.ret)
            if got != (want_params, want_ret) or any(i for i, _, _ in
                                                     p.params):
                problems.append(f"{cname}: libc extern must be "
                                f"({', '.join(want_params)})"
                                f"{': ' + want_ret if want_ret else ''}")
            continue
        problems.append(f"{cname} (module line {p.line}): extern proc with "
                        "no prototype in the header")

    # Types.
    used = types_used(hdr)
    expected_types = {}
    for name in hdr.enums:
        expected_types[name] = ENUM_CHAPEL_TYPE
    for name in hdr.opaque:
        expected_types[name] = None
    for name, under in hdr.scalars.items():
        try:
            expected_types[name] = chapel_type(
                parse_ctype(under.split(), f"typedef {name}"), hdr, False)
        except CheckError:
            expected_types[name] = None  # not expressible: opaque in Chapel
    for name, val in SYSTEM_TYPEDEFS.items():
        if name in used:
            expected_types[name] = val
    for name, want in sorted(expected_types.items()):
        if name not in mod.types:
            decl = f"extern type {name}" + (f" = {want}" if want else "")
            problems.append(f"type {name}: module lacks '{decl};'")
        elif mod.types[name] != want:
            problems.append(f"type {name}: module declares "
                            f"{mod.types[name] or 'opaque'!r}, header needs "
                            f"{want or 'opaque'!r}")
    for name in sorted(set(mod.types) - set(expected_types)):
        problems.append(f"type {name}: extern type the header does not "
                        "define or use")
    for name, fields in sorted(hdr.structs.items()):
        got = mod.records.get(name)
        if got is None:
            problems.append(f"struct {name}: module lacks an extern record")
            continue
        want = []
        for fname, ctype, dim in fields:
            try:
                t = chapel_type(ctype, hdr, is_param=False)
            except CheckError as e:
                problems.append(f"struct {name} field {fname}: {e}")
                t = "?"
            want.append((fname, f"c_array({t},{dim})" if dim else t))
        if got != want:
            problems.append(f"struct {name}: fields {got} in the module, "
                            f"header needs {want}")
    for name in sorted(set(mod.records) - set(hdr.structs)):
        problems.append(f"record {name}: extern record the header does "
                        "not define")

    # Constants.
    for name, value in sorted(hdr.constants.items()):
        if name not in mod.params:
            problems.append(f"constant {name}: module lacks 'param {name} "
                            f"= {value!r};'")
            continue
        got = chapel_value(mod.params[name])
        if got != value:
            problems.append(f"constant {name}: {mod.params[name]} in the "
                            f"module, {value!r} in the header")
    for name in sorted(mod.params):
        if re.fullmatch(r"(OPENFAM|FAM)_[A-Z0-9_]+", name) and \
                name not in hdr.constants:
            problems.append(f"constant {name}: param the header does not "
                            "define")
    return problems


def check(header, module, cc):
    """Parses both files and returns (header, module, differences)."""
    hdr = parse_header(header, cc)
    mod = parse_module(module)
    return hdr, mod, compare(hdr, mod)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--header", default=os.path.join(ROOT, "include",
                                                     "openfam.h"))
    ap.add_argument("--module", default=os.path.join(HERE, "OpenFAM.chpl"))
    ap.add_argument("--cc", default=os.environ.get("CC") or "gcc")
    args = ap.parse_args(argv)
    try:
        hdr, mod, problems = check(args.header, args.module, args.cc)
    except CheckError as e:
        print(f"check_binding: {e}", file=sys.stderr)
        return 1
    if problems:
        print(f"check_binding: {len(problems)} difference(s) between "
              f"{args.module} and {args.header}:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"check_binding: OK: {len(hdr.funcs)} functions, "
          f"{len(hdr.structs)} structs, "
          f"{len(hdr.enums) + len(hdr.opaque) + len(hdr.scalars)} other "
          f"types, {len(hdr.constants)} constants match the header")
    return 0


if __name__ == "__main__":
    sys.exit(main())

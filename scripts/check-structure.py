#!/usr/bin/env python3
"""Structure check of the workspace's Rust crates.

For every crate (each crate root under a member's src/: lib.rs, main.rs,
bin/*.rs), builds the module tree from its `mod` declarations and the
graph of references between modules (`crate::a::b`, `use crate::{..}`,
`super::`, `self::`, and a module's paths into its own children), leaving
out `#[cfg(test)]` / `#[test]` items and the files only they declare.
Fails (exit 1) on:

- a cycle of modules (strongly connected component) other than a module
  and its own children: allowed only when every member lies under one
  member of the component;
- a non-test function longer than 100 lines (from its `fn` line to its
  closing brace);
- a Rust file (any, tests included) longer than 600 lines;
- a function of crates/store that moves an offset (named in OFFSET_MOVER
  or OFFSET_MOVERS_NAMED) with fewer than two assertions (`assert!`,
  `debug_assert!`, their `_eq`/`_ne` forms, or a call of an `assert_*`
  helper): TigerBeetle's rule, where the invariants of positions live.
- a public field (`pub`, `pub(crate)`, `pub(super)`, ...) of a struct
  whose state is reached only through its methods (PRIVATE_STATE: the
  broker's `Shard`, the Seastar `sharded<T>` idea);
- a module of one family (a child of a SEPARATE_FAMILIES folder, e.g. the
  broker's `wire::pull`) referencing another family of that folder
  (`wire::pop`): what handlers share lives in a layer below. The
  family's parent (the dispatch table) may be referenced.

Usage: scripts/check-structure.py [--report] [ROOT]
  --report  print the numbers (largest component per crate, functions over
            70 and over 100 lines) and exit 0.
ROOT is the workspace root (default: the parent of this script's folder).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field

FN_LINES_MAX = 100
FILE_LINES_MAX = 600
# Folders the file-length check does not walk: build output and packages.
SKIPPED_DIRS = {"target", "node_modules", ".git"}
FN_LINES_REPORTED = 70

# Structs whose fields stay private: (file, struct name).
PRIVATE_STATE = [("crates/broker/src/shard/mod.rs", "Shard")]

# Folders whose child modules (families) do not reference one another:
# (crate root, folder module path).
SEPARATE_FAMILIES = [("crates/broker/src/lib.rs", ("wire",))]
# Known edges between families, to be removed (module, family it reaches).
FAMILY_EDGES_KNOWN = {
    ("crate::wire::lite", "crate::wire::pop"),
    ("crate::wire::lite::start", "crate::wire::reset"),
}

Path = tuple[str, ...]  # a module path below the crate root; () is the root


# ---------------------------------------------------------------- lexing


def blank_out(src: str) -> str:
    """The source with comments, string and char literals replaced by
    spaces (newlines kept), so braces and paths can be found by position."""
    out = list(src)
    i, n = 0, len(src)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            end = src.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif raw_string_at(src, i):
            j = i + (2 if src[i] == "b" else 1)
            hashes = 0
            while src[j] == "#":
                hashes, j = hashes + 1, j + 1
            close = '"' + "#" * hashes
            end = src.find(close, j + 1)
            end = n if end < 0 else end + len(close)
            blank(i, end)
            i = end
        elif c == '"' or (c == "b" and nxt == '"' and not ident_char_before(src, i)):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            end = char_literal_end(src, i)
            if end:
                blank(i, end)
                i = end
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def ident_char_before(src: str, i: int) -> bool:
    return i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")


def raw_string_at(src: str, i: int) -> bool:
    if ident_char_before(src, i):
        return False
    m = re.match(r'b?r#*"', src[i : i + 8])
    return m is not None


def char_literal_end(src: str, i: int) -> int:
    """End of a char literal starting at `i`, or 0 for a lifetime."""
    if src.startswith("\\", i + 1):
        end = src.find("'", i + 3)
        return end + 1 if end > 0 else 0
    if i + 2 < len(src) and src[i + 2] == "'":
        return i + 3
    return 0


def matching_brace(text: str, open_at: int) -> int:
    """Index of the `}` closing the `{` at `open_at` (or the text's end)."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def item_end(text: str, start: int) -> int:
    """End of the item starting at `start`: its closing brace, or the `;`
    that ends it first."""
    depth = 0
    for k in range(start, len(text)):
        ch = text[k]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == ";" and depth == 0:
            return k
        elif ch == "{" and depth == 0:
            return matching_brace(text, k)
        elif ch == "}" and depth == 0:
            return k - 1  # the end of the enclosing block: a field or an arm
    return len(text) - 1


TEST_ATTR = re.compile(r"#\[\s*(?:cfg\s*\(\s*(?:test|all\s*\([^\]]*\btest\b[^\]]*\))\s*\)|test)\s*\]")
ATTR = re.compile(r"\s*#!?\[")


def skip_attributes(text: str, k: int) -> int:
    """Position of the first non-attribute token at or after `k`."""
    while True:
        m = ATTR.match(text, k)
        if not m:
            break
        depth = 0
        j = m.end() - 1
        while j < len(text):
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        k = j + 1
    while k < len(text) and text[k].isspace():
        k += 1
    return k


def test_spans(text: str) -> list[tuple[int, int]]:
    """Spans of items marked `#[cfg(test)]` or `#[test]`."""
    spans = []
    for m in TEST_ATTR.finditer(text):
        start = skip_attributes(text, m.end())
        spans.append((m.start(), item_end(text, start)))
    return spans


def inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos <= b for a, b in spans)


# ------------------------------------------------------------ module tree


@dataclass
class Module:
    path: Path
    file: str
    text: str  # blanked text of the whole file
    span: tuple[int, int]  # this module's part of `text`
    dir: str  # where its out-of-line children live
    excluded: list[tuple[int, int]] = field(default_factory=list)  # tests, inline children


MOD_DECL = re.compile(r"(?<![\w:])(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*([;{])")
PATH_ATTR = re.compile(r'#\[\s*path\s*=\s*"([^"]+)"\s*\]')


def load_crate(root_file: str) -> dict[Path, Module]:
    modules: dict[Path, Module] = {}
    src = read(root_file)
    text = blank_out(src)
    add_module(modules, (), root_file, src, text, (0, len(text)), os.path.dirname(root_file))
    return modules


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def add_module(modules, path, file, src, text, span, child_dir):
    module = Module(path, file, text, span, child_dir)
    modules[path] = module
    tests = [s for s in test_spans(text) if span[0] <= s[0] and s[1] <= span[1]]
    module.excluded.extend(tests)
    pos = span[0]
    while True:
        m = MOD_DECL.search(text, pos, span[1])
        if not m:
            break
        name, kind = m.group(1), m.group(2)
        if kind == "{":
            close = matching_brace(text, m.end() - 1)
            pos = close + 1
            if inside(m.start(), tests):
                continue
            module.excluded.append((m.start(), close))
            add_module(
                modules,
                path + (name,),
                file,
                src,
                text,
                (m.end(), close),
                os.path.join(child_dir, name),
            )
            continue
        pos = m.end()
        if inside(m.start(), tests):
            continue
        child_file = child_path(src, text, m.start(), child_dir, name)
        if child_file is None:
            continue
        child_src = read(child_file)
        child_text = blank_out(child_src)
        is_mod_rs = os.path.basename(child_file) == "mod.rs"
        grandchildren = os.path.dirname(child_file) if is_mod_rs else child_file[:-3]
        add_module(modules, path + (name,), child_file, child_src, child_text, (0, len(child_text)), grandchildren)


def child_path(src: str, text: str, decl_at: int, child_dir: str, name: str) -> str | None:
    # A `#[path = "..."]` right before the declaration (read from the
    # source: the blanked text has no strings).
    line_start = text.rfind(";", 0, decl_at)
    line_start = max(line_start, text.rfind("}", 0, decl_at), text.rfind("{", 0, decl_at))
    attr = PATH_ATTR.search(src, line_start + 1, decl_at)
    if attr:
        candidate = os.path.join(child_dir, attr.group(1))
        return candidate if os.path.isfile(candidate) else None
    for candidate in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
        if os.path.isfile(candidate):
            return candidate
    return None


def own_code(module: Module) -> str:
    """The module's own part of its file, with tests and inline children
    blanked."""
    a, b = module.span
    chars = list(module.text[a:b])
    for s, e in module.excluded:
        for k in range(max(s, a), min(e + 1, b)):
            if chars[k - a] != "\n":
                chars[k - a] = " "
    return "".join(chars)


# ------------------------------------------------------------ references

USE_DECL = re.compile(r"(?<![\w:$])use\s+([^;]*);")
PATH_REF = re.compile(r"(?<![\w:$])([A-Za-z_][A-Za-z0-9_]*(?:\s*::\s*(?:[A-Za-z_][A-Za-z0-9_]*|\*))+)")


def expand(tree: str) -> list[str]:
    brace = tree.find("{")
    if brace < 0:
        return [tree] if tree else []
    prefix = tree[:brace]
    inner = tree[brace + 1 : tree.rfind("}")]
    out = []
    for part in split_top(inner):
        if part == "self":
            out.append(prefix.rstrip(":"))
        else:
            out.extend(prefix + p for p in expand(part))
    return out


def split_top(inner: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    return [p for p in parts if p]


def references(module: Module, modules: dict[Path, Module]) -> set[Path]:
    code = own_code(module)
    paths = []
    for m in USE_DECL.finditer(code):
        tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", m.group(1))
        paths.extend(expand(re.sub(r"\s+", "", tree)))
    code = USE_DECL.sub(lambda m: " " * len(m.group(0)), code)
    paths.extend(re.sub(r"\s+", "", m.group(1)) for m in PATH_REF.finditer(code))
    out = set()
    for p in paths:
        target = resolve(module.path, p.split("::"), modules)
        if target is not None and target != module.path:
            out.add(target)
    return out


def resolve(here: Path, segments: list[str], modules: dict[Path, Module]) -> Path | None:
    segments = [s for s in segments if s]
    if not segments:
        return None
    head = segments[0]
    if head == "crate":
        base, rest = (), segments[1:]
    elif head == "super":
        base, rest = here, segments
        while rest and rest[0] == "super":
            if not base:
                return None
            base, rest = base[:-1], rest[1:]
    elif head == "self":
        base, rest = here, segments[1:]
    elif here + (head,) in modules:
        base, rest = here, segments
    else:
        return None  # another crate, or a name brought in by `use`
    target = base
    for seg in rest:
        if target + (seg,) in modules:
            target = target + (seg,)
        else:
            break
    return target


# ----------------------------------------------------------- components


def components(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    on_stack: set[Path] = set()
    stack: list[Path] = []
    out: list[list[Path]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                out.append(sorted(members))
    return out


def allowed(component: list[Path]) -> bool:
    """A module and its own children: every member lies under one member."""
    top = min(component, key=len)
    return all(m[: len(top)] == top for m in component)


def name(path: Path) -> str:
    return "::".join(("crate",) + path)


# ------------------------------------------------------------ functions

FN_DECL = re.compile(r"(?<![\w$])fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(module: Module) -> list[tuple[int, str, int]]:
    """(line, name, length in lines) of each function with a body in the
    module's own code."""
    code = own_code(module)
    a = module.span[0]
    out = []
    for m in FN_DECL.finditer(code):
        end = item_end(code, m.end())
        if end < 0 or end >= len(code) or code[end] != "}":
            continue  # no body (a trait's declaration)
        first = module.text.count("\n", 0, a + m.start()) + 1
        last = module.text.count("\n", 0, a + end) + 1
        out.append((first, m.group(1), last - first + 1))
    return out


# ----------------------------------------------------- offset assertions

OFFSET_MOVERS_CRATE = "crates/store/src/lib.rs"
# Functions that move a position: appends, rolls, truncations, published
# written/durable/applied positions, queue floors, recovery.
OFFSET_MOVER = re.compile(
    r"^(append|append_after_loss|publish_(written|durable)|push_(segment|hot)|replace_only"
    r"|remove_front|restart_at|rebase|roll|write_batch|write_chunk|sync_written|begin_at"
    r"|delete_below|delete_expired_segments|correct_min|raise_floor|lower_floor_to_end"
    r"|truncate\w*|advance_\w+|recover|cut_tail|flush_queues|shard_flushed)$"
)
# Movers whose names are too common for the pattern: (file, function).
OFFSET_MOVERS_NAMED = {
    ("crates/store/src/appender/writer.rs", "write"),
    ("crates/store/src/checkpoint_writer.rs", "write"),
    ("crates/store/src/index/file.rs", "put"),
}
# Matched by name, but they move nothing themselves.
OFFSET_MOVERS_EXEMPT = {
    ("crates/store/src/shard.rs", "append"),  # hands a request to the appender
}
OFFSET_ASSERTS_MIN = 2
ASSERTION = re.compile(r"(?<![\w$])(?:debug_)?assert(?:_eq|_ne)?!|(?<![\w$])assert_\w+\(")


def offset_movers_short_of_asserts(root: str) -> list[str]:
    """Each offset-moving store function with fewer than
    OFFSET_ASSERTS_MIN assertions, and each named one that is gone."""
    out, seen = [], set()
    for module in load_crate(os.path.join(root, OFFSET_MOVERS_CRATE)).values():
        rel = os.path.relpath(module.file, root)
        code = own_code(module)
        for m in FN_DECL.finditer(code):
            name, key = m.group(1), (rel, m.group(1))
            end = item_end(code, m.end())
            if key in OFFSET_MOVERS_EXEMPT or end < 0 or end >= len(code) or code[end] != "}":
                continue
            if not (OFFSET_MOVER.match(name) or key in OFFSET_MOVERS_NAMED):
                continue
            seen.add(key)
            count = len(ASSERTION.findall(code, m.end(), end))
            if count < OFFSET_ASSERTS_MIN:
                line = module.text.count("\n", 0, module.span[0] + m.start()) + 1
                out.append(f"{rel}:{line} {name} moves an offset with {count} assertion(s) (at least {OFFSET_ASSERTS_MIN})")
    out += [f"{f}: {fn} is named in OFFSET_MOVERS_NAMED but not found" for f, fn in sorted(OFFSET_MOVERS_NAMED - seen)]
    return out


# ---------------------------------------------------------------- driver


@dataclass
class Crate:
    label: str
    modules: dict[Path, Module]


def workspace_crates(root: str) -> list[Crate]:
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        manifest = tomllib.load(f)
    members = manifest.get("workspace", {}).get("members", ["."])
    crates = []
    for pattern in members:
        for member in sorted(glob.glob(os.path.join(root, pattern))):
            src = os.path.join(member, "src")
            roots = [os.path.join(src, f) for f in ("lib.rs", "main.rs")]
            roots += sorted(glob.glob(os.path.join(src, "bin", "*.rs")))
            roots += sorted(glob.glob(os.path.join(src, "bin", "*", "main.rs")))
            for crate_root in roots:
                if os.path.isfile(crate_root):
                    label = os.path.relpath(crate_root, root)
                    crates.append(Crate(label, load_crate(crate_root)))
    return crates


def long_files(root: str) -> list[str]:
    """Each Rust file under `root` longer than FILE_LINES_MAX lines."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for file in sorted(files):
            if not file.endswith(".rs"):
                continue
            path = os.path.join(folder, file)
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = sum(1 for _ in f)
            if lines > FILE_LINES_MAX:
                out.append(f"{os.path.relpath(path, root)} {lines} lines (over {FILE_LINES_MAX})")
    return out


def public_fields(root: str) -> list[str]:
    """Each public field of a PRIVATE_STATE struct (or the struct missing)."""
    out = []
    for rel, struct in PRIVATE_STATE:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            out.append(f"{rel}: missing (declares struct {struct})")
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        code = blank_out(text)
        m = re.search(r"\bstruct\s+" + struct + r"\b[^{;(]*\{", code)
        if not m:
            out.append(f"{rel}: struct {struct} not found")
            continue
        end = matching_brace(code, m.end() - 1)
        body = code[m.end() : end]
        for field in re.finditer(r"(?:^|[,{])\s*(?:#\[[^\]]*\]\s*)*(pub\b(?:\s*\([^)]*\))?)\s*(\w+)\s*:", body, re.M):
            line = text.count("\n", 0, m.end() + field.start(1)) + 1
            out.append(f"{rel}:{line} public field `{field.group(2)}` of {struct} (reach it through a method)")
    return out


def family_edges(crate: Crate, graph: dict[Path, set[Path]]) -> list[str]:
    """Each reference from one family of a SEPARATE_FAMILIES folder to
    another, less FAMILY_EDGES_KNOWN."""
    out = []
    for label, folder in SEPARATE_FAMILIES:
        if crate.label != label:
            continue
        depth = len(folder) + 1
        for path, targets in sorted(graph.items()):
            if len(path) < depth or path[: len(folder)] != folder:
                continue
            for target in sorted(targets):
                if len(target) < depth or target[: len(folder)] != folder:
                    continue
                if target[:depth] == path[:depth]:
                    continue
                edge = (name(path), name(target[:depth]))
                if edge not in FAMILY_EDGES_KNOWN:
                    out.append(f"{label}: {edge[0]} references {name(target)} (another family of {name(folder)})")
    return out


def check(root: str, report: bool) -> int:
    failures = long_files(root) + offset_movers_short_of_asserts(root) + public_fields(root)
    long_70 = long_100 = 0
    for crate in workspace_crates(root):
        graph = {p: references(m, crate.modules) for p, m in crate.modules.items()}
        comps = [c for c in components(graph) if len(c) > 1]
        failures += family_edges(crate, graph)
        largest = max(comps, key=len, default=[])
        for comp in comps:
            if not allowed(comp):
                failures.append(
                    f"{crate.label}: module cycle of {len(comp)}: " + ", ".join(map(name, comp))
                )
        crate_70 = crate_100 = 0
        for module in crate.modules.values():
            rel = os.path.relpath(module.file, root)
            for line, fn, length in functions(module):
                crate_70 += length > FN_LINES_REPORTED
                crate_100 += length > FN_LINES_MAX
                if length > FN_LINES_MAX:
                    failures.append(f"{rel}:{line} {fn} {length} lines (over {FN_LINES_MAX})")
        long_70 += crate_70
        long_100 += crate_100
        if report:
            shown = ", ".join(map(name, largest)) if largest else "none"
            print(
                f"{crate.label}: {len(crate.modules)} modules, largest cycle {len(largest)} ({shown}); "
                f"functions over {FN_LINES_REPORTED} lines: {crate_70}, over {FN_LINES_MAX}: {crate_100}"
            )
    if report:
        print(f"total: functions over {FN_LINES_REPORTED} lines: {long_70}, over {FN_LINES_MAX}: {long_100}")
        return 0
    for failure in failures:
        print(failure)
    if failures:
        print(f"structure check failed: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print("structure check passed")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="print the numbers, never fail")
    parser.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    return check(args.root, args.report)


if __name__ == "__main__":
    sys.exit(main())

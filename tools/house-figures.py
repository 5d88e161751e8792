#!/usr/bin/env python3
"""The house in figures: files and lines per folder of common/, the largest file and function,
and the way three things travel through the server session (a player's input, a desync, a
connect token) as the files their functions live in.

Usage: tools/house-figures.py [--root DIR] [--functions N]

A function is found as text: a brace at namespace level whose declaration has parentheses and is
not a class, struct, enum or union (comments, strings and character literals are skipped). A way
is a list of functions in the order a message reaches them; each is looked up by its qualified
name (Class::name) in common/, and a hop is a step from one file to another.
"""
import argparse
import os
import re
import sys

SOURCE = (".cpp", ".hpp", ".h", ".c")

# The ways through the server session, as the functions a message reaches in order.
WAYS = {
    "a player's input": [
        "ServerSession::Impl::on_receive", "ServerSession::Impl::receive", "ServerSession::Impl::on_client_play", "InputWindow::receive",
        "ServerSession::Impl::assemble_and_step", "InputWindow::take", "ServerSimulation::step", "ServerSession::Impl::send_frames",
    ],
    "a desync": [
        "ServerSession::Impl::on_client_play", "ServerSession::Impl::take_hashes", "ServerSession::Impl::compare_hash", "ServerSession::Impl::start_probe",
        "ServerSession::Impl::on_detail", "ServerSession::Impl::follow_probe", "ServerSession::Impl::queue_report", "ServerSession::Impl::settle_reports",
        "ServerSession::Impl::record_report",
    ],
    "a connect token": [
        "ServerSession::Impl::receive", "ServerSession::Impl::on_connect_request", "ServerSession::Impl::open_token", "ServerSession::Impl::open_sealed",
        "ServerSession::Impl::claim_token", "ServerSession::Impl::on_join",
    ],
}


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + " " * (min(j, n - 1) - i - 1) + '"')
            i = j + 1
        elif c == "'" and i > 0 and not (text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append("'" + " " * (min(j, n - 1) - i - 1) + "'")
            i = j + 1
        else:
            out.append(c)
            i += 1
    # Preprocessor lines (and their continuations) are blanked too: they are not declarations.
    lines = "".join(out).split("\n")
    cont = False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.endswith("\\")
            lines[k] = " " * len(line)
    return "\n".join(lines)


def functions(path):
    """(qualified name, first line, lines) of each function defined at namespace level in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    found = []
    depth = 0          # braces open that are not namespaces'
    decl_start = 0     # where the current declaration began (after the last ; { or } at namespace level)
    body = None        # (name, start offset) of the function being read
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                decl = code[decl_start:i]
                head = decl.strip()
                if re.match(r"^(inline\s+)?namespace\b", head) or head.startswith('extern "'):
                    decl_start = i + 1
                    continue  # a namespace's or extern block's brace: not a depth
                if re.match(r"^(template\s*<.*>\s*)?(class|struct|enum|union)\b", head, re.S) or "(" not in head or "=" in head.split("(")[0]:
                    body = None
                else:
                    m = re.search(r"([A-Za-z_~][\w:~<>]*)\s*\(", head.split("->")[0])
                    name = m.group(1) if m else "?"
                    body = (name, decl_start + len(decl) - len(decl.lstrip()))
            depth += 1
        elif c == "}":
            if depth == 0:
                decl_start = i + 1
                continue  # a namespace closes
            depth -= 1
            if depth == 0:
                if body:
                    first = code.count("\n", 0, body[1]) + 1
                    last = code.count("\n", 0, i) + 1
                    found.append((body[0], first, last - first + 1))
                body = None
                decl_start = i + 1
        elif c == ";" and depth == 0:
            decl_start = i + 1
    return found


def impl_fields(path, opener="ServerSession::Impl {"):
    """The data members a struct declares (its own, not its nested types'); `opener` is the text
    that opens its body."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    start = code.find(opener)
    if start < 0:
        return []
    depth, stmt, names = 0, "", []
    for c in code[start + len(opener):]:
        if c == "{":
            depth += 1
            if depth == 1:
                opened = stmt  # what stands before the brace
        elif c == "}":
            if depth == 0:
                break
            depth -= 1
            if depth == 0:
                head = " ".join(opened.split())
                # A function's body or a nested type ends the statement; a brace initializer does not.
                stmt = "" if "(" in head or re.match(r"^(\w+\s+)*(struct|enum|class|union)\b", head) else opened + "{}"
            continue
        elif c == ";" and depth == 0:
            head = " ".join(stmt.split())
            stmt = ""
            if not head or re.match(r"^(static|using|friend|template|enum|struct|class)\b", head):
                continue
            # Split at commas outside <> and (): each declarator names a member.
            parts, level, cur = [], 0, ""
            for ch in head:
                level += ch in "<(" and 1 or ch in ">)" and -1 or 0
                if ch == "," and level == 0:
                    parts.append(cur)
                    cur = ""
                else:
                    cur += ch
            parts.append(cur)
            for k, part in enumerate(parts):
                before = re.split(r"=|\{", part)[0].strip()
                if "(" in re.sub(r"std::function<[^>]*>", "", before):
                    break  # a member function's declaration
                m = re.search(r"(\w+)\s*(\[[^\]]*\])?$", before)
                if m:
                    names.append(m.group(1))
            continue
        if depth == 0:
            stmt += c
    return names


def count_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--functions", type=int, default=5, help="the largest functions listed")
    args = ap.parse_args()
    common = os.path.join(args.root, "common")
    if not os.path.isdir(common):
        sys.exit(f"house-figures: no common/ under {args.root}")

    files, funcs = [], []
    for dirpath, _, names in os.walk(common):
        for name in sorted(names):
            if name.endswith(SOURCE):
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, args.root)
                files.append((rel, count_lines(p)))
                funcs += [(rel, *f) for f in functions(p)]

    print("files and lines per folder of common/ (a folder: common/<part>/{src,include,internal})")
    per = {}
    for rel, n in files:
        part = "/".join(rel.split("/")[:2])
        k, lines, big = per.get(part, (0, 0, ("", 0)))
        per[part] = (k + 1, lines + n, max(big, (rel, n), key=lambda x: x[1]))
    for part in sorted(per):
        k, lines, big = per[part]
        print(f"  {part:24} {k:3} files {lines:6} lines  largest {big[0]} ({big[1]})")
    total = sum(n for _, n in files)
    biggest = max(files, key=lambda x: x[1])
    print(f"  all: {len(files)} files, {total} lines; largest file {biggest[0]} ({biggest[1]} lines)")
    over = [f for f in files if f[1] > 600]
    print(f"  files over 600 lines: {len(over)}" + "".join(f"\n    {r} ({n})" for r, n in over))

    print(f"largest functions in common/ (lines, first {args.functions})")
    for rel, name, first, n in sorted(funcs, key=lambda x: -x[3])[: args.functions]:
        print(f"  {n:4}  {name}  {rel}:{first}")

    session = [f for f in files if f[0].startswith("common/session/src/server_")]
    print(f"the server session: {len(session)} server_* files, {sum(n for _, n in session)} lines")

    print("ways through the server session (functions in order, the file each lives in)")
    def home_of(fn):
        """The file that defines fn (a qualified name, or its end after a ::)."""
        for rel, name, first, n in funcs:
            if name == fn or name.endswith("::" + fn):
                return rel
        return "?"

    fields = impl_fields(os.path.join(common, "session/src/server_session_impl.hpp"))
    texts = {}
    for rel, _ in session:
        with open(os.path.join(args.root, rel), encoding="utf-8", errors="replace") as f:
            texts[rel] = strip_code(f.read())
    reach = {n: sum(1 for t in texts.values() if re.search(r"\b" + n + r"\b", t)) for n in fields}
    shared = sorted((k for k in fields if reach[k] >= 4), key=lambda k: -reach[k])
    print(f"  ServerSession::Impl: {len(fields)} data members; {len(shared)} of them named in 4 or more of the "
          f"server_* files: " + ", ".join(f"{k} ({reach[k]})" for k in shared))
    per_peer = []
    headers = [rel for rel, _ in files if rel.startswith("common/session/") and rel.endswith(".hpp")]
    for name in ("Peer", "Entry", "Gate", "Stream", "Audit", "PeerAudit", "Standing"):
        for rel in headers:
            members = impl_fields(os.path.join(args.root, rel), f"struct {name} {{")
            if members:
                per_peer.append(f"{name} {len(members)} ({os.path.basename(rel)})")
    print("  the per-peer records (data members): " + (", ".join(per_peer) or "none"))
    impl = [f for f in funcs if f[1].startswith("ServerSession::Impl::")]
    print(f"  ServerSession::Impl: {len(impl)} functions defined in {len({f[0] for f in impl})} files, "
          f"{sum(f[3] for f in impl)} lines")
    for way, chain in WAYS.items():
        trail = [(fn, home_of(fn)) for fn in chain]
        hops = sum(1 for a, b in zip(trail, trail[1:]) if a[1] != b[1])
        rooms = len({h for _, h in trail})
        print(f"  {way}: {len(chain)} functions in {rooms} files, {hops} hops")
        for fn, home in trail:
            print(f"    {fn:32} {home}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Instructions per handshake by owner, from one callgrind dump (see scripts/profile-newconn --instructions).

usage: scripts/callgrind-owners.py DUMP N LABEL [--symbols BUILD_DIR|FILE] [--functions K] [--owner NAME]
       scripts/callgrind-owners.py - 0 - --symbols BUILD_DIR --save-symbols FILE

DUMP was written with --compress-strings=no --compress-pos=no. Each function is attributed to an owner:
- with --symbols, by the SwiftPM target whose object files (BUILD_DIR/TARGET.build/*.o, read with nm) define its
  symbol. valgrind 3.19 cannot read the DWARF 5 that Swift 6.3 emits, so the profiled binary is a copy without
  debug information and this is the only way to tell owners apart. Code inlined from another module counts for the
  function it was inlined into, and a generic specialization for the module that emitted it (the standard
  library's generic code specialized in Bulwark counts as Bulwark's). A static C function defined under the same
  name in both copies of BoringSSL is counted as "BoringSSL (either copy)"; a specialization that several Swift
  modules emit is handed to its callers like the runtime's functions (below).
- otherwise by the source file of the code that ran it (fi=/fe= for inlined code from a package).
--functions K lists the K functions that cost most (with --owner NAME, only those of owners whose name starts with
NAME, e.g. Bulwark). Functions of shared libraries are attributed by their object (the Swift runtime's and libc's). The column "with
runtime" hands the runtime's and libc's own instructions (retain/release, allocation, copies, hashing) up the call
graph to the first caller that has an owner, in proportion to each caller's share of the callee's inclusive cost.
"""
import re
import sys
from collections import Counter, defaultdict

OWNERS = [
    ("BoringSSL (swift-crypto's copy)", lambda p: "/swift-crypto/" in p and "CCryptoBoringSSL" in p),
    ("BoringSSL (NIOSSL's copy)", lambda p: "/swift-nio-ssl/" in p and "CNIOBoringSSL" in p),
    ("swift-certificates", lambda p: "/swift-certificates/" in p),
    ("swift-asn1", lambda p: "/swift-asn1/" in p),
    ("swift-crypto", lambda p: "/swift-crypto/" in p),
    ("NIOSSL", lambda p: "/swift-nio-ssl/" in p),
    ("AsyncHTTPClient", lambda p: "/async-http-client/" in p),
    ("NIO", lambda p: re.search(r"/swift-nio[^/]*/", p) is not None),
    ("other packages", lambda p: "/checkouts/" in p),
    ("benchmark harness", lambda p: "/Benchmarks/Sources/" in p),
    ("Bulwark", lambda p: "/Sources/Bulwark" in p),
]
RUNTIME = "Swift runtime, standard library, Foundation, Dispatch"
LIBC = "libc (malloc, free, memcpy)"
UNKNOWN = "no source file"
SHARED = "specializations emitted by several modules"


def owner_of_file(path):
    if not path or path == "???":
        return None
    for name, test in OWNERS:
        if test(path):
            return name
    if "/swift/stdlib/" in path or "/swift-corelibs-" in path or "/swift-foundation" in path or "/stdlib/" in path:
        return RUNTIME
    return None


TARGETS = [
    ("Bulwark", r"^(Bulwark|BulwarkPolicy|BulwarkEncoding|BulwarkAudit|CBulwarkVector)$"),
    ("Bulwark test support (the server)", r"^BulwarkTestSupport$"),
    ("benchmark harness", r"^BulwarkBench$"),
    ("swift-certificates", r"^X509$"),
    ("swift-asn1", r"^SwiftASN1$"),
    ("BoringSSL (swift-crypto's copy)", r"^CCryptoBoringSSL$"),
    ("swift-crypto", r"^(Crypto|_CryptoExtras|CryptoBoringWrapper|CCryptoBoringSSLShims|CXKCP.*)$"),
    ("BoringSSL (NIOSSL's copy)", r"^CNIOBoringSSL$"),
    ("NIOSSL", r"^(NIOSSL|CNIOBoringSSLShims|NIOTLS)$"),
    ("AsyncHTTPClient", r"^AsyncHTTPClient$"),
    ("NIO", r"^_?C?NIO"),
]


def symbol_owners(build_dir):
    """Symbol name -> owner, from nm over each target's object files (or from a JSON file that --save-symbols
    wrote, to attribute a saved binary after the build directory has moved on)."""
    import glob
    import json
    import os
    import subprocess

    if os.path.isfile(build_dir):
        with open(build_dir) as saved:
            return json.load(saved)

    owners = {}
    for target_dir in sorted(glob.glob(os.path.join(build_dir, "*.build"))):
        target = os.path.basename(target_dir)[: -len(".build")]
        owner = next((name for name, pattern in TARGETS if re.search(pattern, target)), "other packages")
        objects = glob.glob(os.path.join(target_dir, "**", "*.o"), recursive=True)
        if not objects:
            continue
        listing = subprocess.run(
            ["nm", "-C", "--defined-only", *objects], capture_output=True, text=True, check=False
        ).stdout
        for line in listing.splitlines():
            parts = line.split(" ", 2)
            if len(parts) != 3 or parts[1] not in "TtWw":
                continue
            name = parts[2]
            previous = owners.get(name)
            if previous is None or previous == owner:
                owners[name] = owner
            elif previous.startswith("BoringSSL") and owner.startswith("BoringSSL"):
                owners[name] = "BoringSSL (either copy)"
            else:
                # A generic specialization or thunk that several modules emit (one copy is linked): it runs on
                # behalf of its callers, so it is handed to them like the runtime's functions.
                owners[name] = SHARED
    return owners


def owner_of_object(obj):
    base = obj.rsplit("/", 1)[-1]
    if base.startswith(("libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime")):
        return RUNTIME
    if base.startswith(("libc.", "libc-", "ld-linux", "libm.", "libpthread", "libstdc++", "libgcc", "vgpreload")):
        return LIBC
    return UNKNOWN


def main():
    args = sys.argv[1:]
    functions = 0
    symbols = {}
    only_owner = None
    if "--owner" in args:
        index = args.index("--owner")
        only_owner = args[index + 1]
        del args[index : index + 2]
    if "--functions" in args:
        index = args.index("--functions")
        functions = int(args[index + 1])
        del args[index : index + 2]
    if "--symbols" in args:
        index = args.index("--symbols")
        symbols = symbol_owners(args[index + 1])
        del args[index : index + 2]
    if "--save-symbols" in args:
        import json

        with open(args[args.index("--save-symbols") + 1], "w") as saved:
            json.dump(symbols, saved)
        return

    def function_owner_of(name, file, obj):
        if name in symbols:
            return symbols[name]
        return owner_of_file(file) or owner_of_object(obj or "")

    path, count, label = args[0], int(args[1]), args[2]
    self_cost = Counter()
    by_function = Counter()
    function_owner = {}
    edges = defaultdict(Counter)  # caller -> callee -> inclusive
    obj = fl = fi = fn = None
    cobj = cfl = cfn = None
    pending_call = False
    total = 0
    with open(path, errors="replace") as dump:
        for line in dump:
            line = line.rstrip("\n")
            if not line:
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending_call:
                    edges[fn][cfn] += cost
                    pending_call = False
                    continue
                total += cost
                by_function[fn] += cost
                owner = owner_of_file(fi) if fi and not symbols else None
                if owner is None or owner == RUNTIME:
                    owner = function_owner[fn]
                self_cost[owner] += cost
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                obj = value
            elif key == "fl":
                fl = value
                fi = None
            elif key in ("fi", "fe"):
                fi = value if value != fl else None
            elif key == "fn":
                fn = value
                fi = None
                if fn not in function_owner:
                    function_owner[fn] = function_owner_of(fn, fl, obj)
            elif key == "cob":
                cobj = value
            elif key in ("cfl", "cfi"):
                cfl = value
            elif key == "cfn":
                cfn = value
                if cfn not in function_owner:
                    function_owner[cfn] = function_owner_of(cfn, cfl, cobj or obj)
                cobj = None
            elif key == "calls":
                pending_call = True
    # The runtime's and libc's own instructions (retain/release, allocation, copies, hashing), handed up the call
    # graph to the first caller that has an owner, in proportion to each caller's share of the callee's inclusive
    # cost; what reaches no owned caller (the concurrency runtime's and the event loop's own loops) stays with them.
    incoming = defaultdict(Counter)
    for caller, callees in edges.items():
        for callee, cost in callees.items():
            if callee != caller:
                incoming[callee][caller] += cost
    unowned = (RUNTIME, LIBC, UNKNOWN, SHARED)
    pending = Counter({name: cost for name, cost in by_function.items() if function_owner.get(name) in unowned})
    with_runtime = Counter({owner: cost for owner, cost in self_cost.items() if owner not in unowned})
    function_with_runtime = Counter({name: cost for name, cost in by_function.items() if function_owner.get(name) not in unowned})
    for _ in range(40):
        passed = Counter()
        for name, cost in pending.items():
            callers = incoming.get(name)
            total_in = sum(callers.values()) if callers else 0
            if total_in <= 0:
                with_runtime[function_owner.get(name, UNKNOWN) + " (no owned caller)"] += cost
                continue
            for caller, weight in callers.items():
                share = cost * weight / total_in
                owner = function_owner.get(caller, UNKNOWN)
                if owner in unowned:
                    passed[caller] += share
                else:
                    with_runtime[owner] += share
                    function_with_runtime[caller] += share
        pending = passed
        if sum(pending.values()) < 1:
            break
    for name, cost in pending.items():
        with_runtime[function_owner.get(name, UNKNOWN) + " (no owned caller)"] += cost
    print(f"== {label}: {total / count:,.0f} instructions per handshake in all")
    print(f"   {'own':>12}  {'with runtime':>12}  owner")
    for owner, cost in sorted(with_runtime.items(), key=lambda item: -item[1]):
        print(f"   {self_cost.get(owner, 0) / count:12,.0f}  {cost / count:12,.0f}  {owner}")
    for owner in unowned:
        if self_cost.get(owner):
            print(f"   {self_cost[owner] / count:12,.0f}  {'':>12}  {owner} (own, handed to callers above)")
    if functions:
        which = f"of {only_owner}" if only_owner else "of an owner"
        print(f"   top {functions} functions {which}, with the runtime's and shared code's work handed to them:")
        ranked = [
            (name, cost)
            for name, cost in function_with_runtime.most_common()
            if only_owner is None or (function_owner.get(name) or "").startswith(only_owner)
        ]
        for name, cost in ranked[:functions]:
            print(f"   {cost / count:12,.0f}  [{function_owner.get(name)}] {name[:200]}")

if __name__ == "__main__":
    main()

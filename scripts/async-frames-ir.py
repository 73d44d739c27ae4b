#!/usr/bin/env python3
"""Async frame sizes of the Bulwark module's request path in about 30 s, without a release build of the benchmark.

usage: scripts/async-frames-ir.py [REGEX] [--allocas FUNCTION_REGEX]
  REGEX        matched against the demangled name (default: the request path, `RequestExecutor|BulwarkClient.execute`)
  --allocas R  also print, for each function whose mangled name matches R, the allocas that LLVM sees before it
               splits the coroutine: every one that lives across an await takes a slot of the async frame

It compiles the Bulwark module alone to optimized LLVM IR with the exact command line of the last release build in
Benchmarks/.build (so run `scripts/bench` once first), and reads each async function's context size from its async
function pointer (`...Tu`): the same number scripts/async-frame-sizes.py reads from the binary, within a few bytes
(the benchmark's build is split in two LLVM threads). Needs python3 and the toolchain's swiftc and swift-demangle.
Not a benchmark: a count, the same on every run of the same source.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
allocas = None
if "--allocas" in args:
    index = args.index("--allocas")
    allocas = re.compile(args[index + 1])
    del args[index : index + 2]
pattern = re.compile(args[0] if args else r"RequestExecutor|BulwarkClient\.execute")

manifest = os.path.join(root, "Benchmarks/.build/release.yaml")
command = None
for line in open(manifest):
    if '"-module-name","Bulwark",' in line and "args: " in line:
        command = json.loads(line.split("args: ", 1)[1])
if command is None:
    sys.exit("scripts/async-frames-ir.py: no release build of the Bulwark module in Benchmarks/.build; run scripts/bench")

# One output file: no module, dependency, header or diagnostics outputs, one LLVM thread.
drop_one = {"-emit-dependencies", "-emit-module", "-parseable-output", "-emit-objc-header", "-serialize-diagnostics", "-c"}
drop_two = {"-emit-module-path", "-output-file-map", "-emit-objc-header-path", "-num-threads"}
kept = []
i = 0
while i < len(command):
    if command[i] in drop_one or command[i].startswith("-j"):
        i += 1
    elif command[i] in drop_two:
        i += 2
    else:
        kept.append(command[i])
        i += 1

with tempfile.TemporaryDirectory() as directory:
    ir = os.path.join(directory, "Bulwark.ll")
    extra = ["-emit-ir", "-o", ir]
    if allocas is not None:
        extra += ["-Xllvm", "-print-before=coro-split"]
    result = subprocess.run(kept + extra, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("swiftc failed:\n" + result.stderr[-4000:])
    sizes = []
    for line in open(ir):
        match = re.match(r'^@"(\$s7Bulwark[^"]*)Tu" = .* i32 (\d+) }>', line)
        if match:
            sizes.append((int(match.group(2)), match.group(1)))
    names = subprocess.run(
        ["swift", "demangle", "--compact"], input="\n".join(name for _, name in sizes), capture_output=True, text=True
    ).stdout.splitlines()
    for (size, _), name in sorted(zip(sizes, names), reverse=True):
        if pattern.search(name):
            print(f"{size:6d}  {name[:150]}")
    if allocas is not None:
        # The printout before coro-split: each function's header, then its allocas.
        current = None
        for line in result.stderr.splitlines():
            header = re.match(r'^define .*@"([^"]+)"\(', line)
            if header:
                current = header.group(1) if allocas.search(header.group(1)) else None
                if current:
                    print("\n" + current)
            elif current and " = alloca " in line:
                print("   ", line.strip().split(" = alloca ", 1)[1].split(",")[0])

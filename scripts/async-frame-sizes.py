#!/usr/bin/env python3
"""Prints the async frame (context) size of every async function in a binary whose name matches a pattern.

usage: scripts/async-frame-sizes.py BINARY [REGEX] [COUNT]
  REGEX   matched against the mangled name (default: Bulwark's request path, `7Bulwark15RequestExecutor|7Bulwark0A6Client`)
  COUNT   how many to print, largest first (default 30)

Swift allocates each async call's frame from the task's allocator (in slabs kept until the task ends), so a request
in flight holds the sum of its suspended frames. The size is in the function's async function pointer (the `...Tu`
symbol: 4 bytes relative address of the function, 4 bytes context size). A count, not a time: it is the same on every
run of the same binary. Needs nm, readelf and swift-demangle (the toolchain's).
"""
import re
import struct
import subprocess
import sys

binary = sys.argv[1]
pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else r"7Bulwark15RequestExecutor|7Bulwark0A6Client")
count = int(sys.argv[3]) if len(sys.argv) > 3 else 30
sections = []
for line in subprocess.run(["readelf", "-W", "-S", binary], capture_output=True, text=True).stdout.splitlines():
    match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if match:
        name, address, offset, size = match.group(1), *(int(match.group(i), 16) for i in (2, 3, 4))
        sections.append((address, offset, size, name))
data = open(binary, "rb").read()


def file_offset(address):
    for start, offset, size, name in sections:
        if start and start <= address < start + size and name != ".bss":
            return address - start + offset
    return None


found = []
for line in subprocess.run(["nm", binary], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) != 3 or not parts[2].endswith("Tu") or not pattern.search(parts[2]):
        continue
    offset = file_offset(int(parts[0], 16))
    if offset is None:
        continue
    _, size = struct.unpack("<iI", data[offset:offset + 8])
    found.append((size, parts[2]))
found.sort(reverse=True)
found = found[:count]
names = subprocess.run(
    ["swift-demangle", "-simplified", "-compact"], input="\n".join(n for _, n in found), capture_output=True, text=True
).stdout.splitlines()
for (size, _), name in zip(found, names):
    print(f"{size:6d}  {name.replace('async function pointer to ', '')}")

#!/usr/bin/env python3
"""Static instruction counts of the Hopper step's staged cell (standard_wgmma.cuh), per kernel instance.

usage: cuobjdump -sass build-gpu/src/CMakeFiles/openrnn_obj.dir/cuda/standard_forward.cu.o > f.sass
       python3 dev/lab/sass_staged_count.py f.sass

For each wgmma_fwd_kernel instance: the instructions from the target of the branch on `terms == 2` (the staged cell)
to the first subroutine the cell calls (the division's slow path), all of them and the integer ones (IMAD, LEA,
IADD3, SHF, ...), with the global stores, FFMAs and MUFUs. A static count (branches and rare paths included), for
comparing two builds of the same kernel; it says nothing about what a warp executes.
"""
import re
import subprocess
import sys

INTEGER = ['IMAD', 'LEA', 'IADD3', 'SHF', 'VIADD', 'LOP3', 'ISETP', 'SEL', 'MOV', 'PRMT', 'IABS']


def functions(path):
    cur, out = None, {}
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m and cur:
            out[cur].append((int(m.group(1), 16), m.group(2).strip()))
    return out


def staged(ins):
    start = None
    for k, (_, t) in enumerate(ins):
        if re.match(r'ISETP\.NE\.AND P\d, PT, R\d+, 0x2, PT', t) and k + 1 < len(ins) and \
                re.match(r'@!P\d BRA', ins[k + 1][1]):
            start = int(ins[k + 1][1].split()[-1], 16)
            break
    if start is None:
        return None
    calls = [int(t.split()[-1], 16) for _, t in ins if 'CALL.REL.NOINC' in t]
    end = min([c for c in calls if c > start], default=ins[-1][0] + 16)
    return [t for a, t in ins if start <= a < end]


def main():
    for name, ins in functions(sys.argv[1]).items():
        dem = subprocess.run(['c++filt', name], capture_output=True, text=True).stdout.strip()
        m = re.search(r'wgmma_fwd_kernel<([^>]*)>', dem)
        seg = staged(ins) if m else None
        if not seg:
            continue
        ops = {}
        for t in seg:
            op = t.split()[1] if t.startswith('@') else t.split()[0]
            op = op.split('.')[0]
            ops[op] = ops.get(op, 0) + 1
        integer = sum(ops.get(k, 0) for k in INTEGER)
        print(f"{m.group(1):40s} staged {len(seg):5d} integer {integer:5d} STG {ops.get('STG', 0):3d} "
              f"FFMA {ops.get('FFMA', 0):3d} MUFU {ops.get('MUFU', 0):3d}")


if __name__ == '__main__':
    main()

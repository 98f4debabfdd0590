#!/usr/bin/env python3
"""One line per `webert bench` JSON row of an h200_bench.sh log (stdin): the variant, batch,
median ms, TFLOP/s and the GPU's agreement with the CPU (`cpu_parity`), flagging rows whose
answers are off (cosine below 0.999, or 0.99 for q4/q8) and cooperative matrices turned off;
a variant that printed no row is listed as FAILED with the last line it printed."""
import json
import sys

label, said, pending = "", "", False
backends = {}


def failed():
    if pending:
        print(f"{label:55} FAILED: {said or 'no output'}")


for line in sys.stdin:
    line = line.strip()
    if line.startswith("== webert"):
        failed()
        label, said, pending = line[len("== webert "):], "", True
        continue
    try:
        row = json.loads(line) if line.startswith("{") else None
    except json.JSONDecodeError:
        row = None
    if row is None:
        said = line or said
        continue
    pending = False
    backends[row.get("backend", "?")] = backends.get(row.get("backend", "?"), 0) + 1
    parity = row.get("cpu_parity") or {}
    cosine = parity.get("cosine")
    low_bit = " q4" in row.get("model", "") or " q8" in row.get("model", "")
    bound = 0.99 if low_bit else 0.999
    flags = []
    if not row.get("backend", "").startswith("gpu"):
        flags.append(f"NOT ON THE GPU ({row.get('backend')})")
    elif cosine is None or not cosine >= bound:
        flags.append(f"ANSWERS OFF (cosine {cosine}, bound {bound})")
    if any("cooperative matrices off" in t for t in row.get("gpu_gemm_timings") or []):
        flags.append("COOP OFF")
    print(f"{label:55} {row['median_ms']:9.3f} ms  {row['encoder_tflop_per_s']:7.2f} TFLOP/s  "
          f"first {row['first_ms']:8.1f} ms  cosine {cosine}  {' '.join(flags)}")
failed()
for backend, rows in backends.items():
    print(f"backend ({rows} rows): {backend}")

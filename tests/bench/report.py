#!/usr/bin/env python3
"""Summarises a tests/bench/run result directory.

Reads results.tsv (one row per repetition) and run.txt (date, machine, load);
prints the table and the issue-6 targets; writes results.csv, results.json,
ratios.dat and ratios.png (gnuplot, if installed).

Ratios are speed ratios: the other system's wall time over stampfs's, so
above 1 means stampfs is faster (for throughput: stampfs MiB/s over theirs).
"""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

WORKLOADS = [
    "seqwrite", "seqread-cold", "seqread-warm", "randread-cold", "randread-warm",
    "create", "stat-cold", "stat-warm", "ls-cold", "ls-warm", "untar", "remount",
]
SYSTEMS = ["raw1", "rawN", "stampfs", "rclone"]


def median(values):
    return statistics.median(values) if values else None


def load(out):
    rows = {}
    with open(os.path.join(out, "results.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            rows.setdefault((r["workload"], r["system"]), []).append(r)
    info = {}
    path = os.path.join(out, "run.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                info[key] = value
    return rows, info


def summarise(rows):
    summary = []
    for w in WORKLOADS:
        if not any((w, s) in rows for s in SYSTEMS):
            continue
        entry = {"workload": w}
        for s in SYSTEMS:
            reps = rows.get((w, s), [])
            if not reps:
                continue
            secs = median([float(r["seconds"]) for r in reps])
            amount = float(reps[0]["amount"])
            unit = reps[0]["unit"]
            rate = amount / secs if secs > 0 else None
            entry["unit"] = "MiB/s" if unit == "MiB" else unit + "/s"
            entry["amount"] = amount
            item = {"seconds": round(secs, 4), "rate": round(rate, 2) if rate else None,
                    "reps": len(reps)}
            if s == "stampfs":
                reqs = [int(r["requests"]) for r in reps if r["requests"] not in ("", "n/a")]
                item["requests"] = int(median(reqs)) if reqs else "n/a"
                rss = [int(r["peak_rss_mib"]) for r in reps if r["peak_rss_mib"]]
                if rss:
                    item["peak_rss_mib"] = max(rss)
            entry[s] = item
        st = entry.get("stampfs")
        for s in ("raw1", "rawN", "rclone"):
            if st and s in entry and st["seconds"] > 0:
                entry["stampfs_vs_" + s] = round(entry[s]["seconds"] / st["seconds"], 3)
        summary.append(entry)
    return summary


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}f}" if x < 100 else f"{x:.0f}"


def table(summary):
    head = ["workload", "unit", "raw1", "rawN", "stampfs", "rclone", "stampfs s",
            "requests", "x raw1", "x rawN", "x rclone"]
    lines = [head]
    for e in summary:
        st = e.get("stampfs", {})
        lines.append([
            e["workload"], e.get("unit", ""),
            *[fmt(e[s]["rate"]) if s in e else "-" for s in SYSTEMS],
            fmt(st.get("seconds"), 3), str(st.get("requests", "-")),
            *[fmt(e.get("stampfs_vs_" + s)) for s in ("raw1", "rawN", "rclone")],
        ])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    out = ["| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(l)) + " |" for l in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def targets(summary):
    by = {e["workload"]: e for e in summary}
    checks = []

    def ratio(w, s):
        return by.get(w, {}).get("stampfs_vs_" + s)

    def reqs(w):
        r = by.get(w, {}).get("stampfs", {}).get("requests")
        return r if isinstance(r, int) else None

    def add(name, value, ok, shown):
        checks.append({"target": name, "value": value,
                       "met": None if value is None else bool(ok), "shown": shown})

    v = ratio("seqwrite", "rawN")
    add("seq write >= 1.0x raw put (parallel blocks)", v, v is not None and v >= 1.0, fmt(v) + "x")
    v = ratio("seqread-cold", "raw1")
    add("cold seq read >= 0.9x raw single-stream get", v, v is not None and v >= 0.9, fmt(v) + "x")
    v = ratio("seqread-cold", "rclone")
    add("cold seq read >= 3x rclone", v, v is not None and v >= 3, fmt(v) + "x")
    v = ratio("seqread-warm", "rclone")
    add("warm seq read >= 5x rclone", v, v is not None and v >= 5, fmt(v) + "x")
    v = ratio("create", "rclone")
    add("creates durable in <= 1/3 of rclone's time", v, v is not None and v >= 3, fmt(v) + "x")
    r = reqs("create")
    n = by.get("create", {}).get("amount")
    v = r / n if r is not None and n else None
    add("creates: <= 2 requests per file", v, v is not None and v <= 2, fmt(v))
    v = reqs("ls-cold")
    add("ls -l cold <= 11 requests", v, v is not None and v <= 11, str(v if v is not None else "n/a"))
    v = reqs("ls-warm")
    add("ls -l warm <= 1 request", v, v is not None and v <= 1, str(v if v is not None else "n/a"))
    rss = [by[w]["stampfs"].get("peak_rss_mib") for w in ("seqwrite", "seqread-cold", "seqread-warm")
           if w in by and "stampfs" in by[w]]
    rss = [x for x in rss if x]
    v = max(rss) if rss else None
    add("peak RSS <= 256 MiB (write, read)", v, v is not None and v <= 256,
        f"{v} MiB" if v else "n/a")
    return checks


def plot(out, summary):
    dat = os.path.join(out, "ratios.dat")
    with open(dat, "w") as f:
        f.write("workload raw1 rawN rclone\n")
        for e in summary:
            f.write(e["workload"] + " " + " ".join(
                str(e.get("stampfs_vs_" + s, "NaN")) for s in ("raw1", "rawN", "rclone")) + "\n")
    if not shutil.which("gnuplot"):
        return None
    png = os.path.join(out, "ratios.png")
    script = f"""
set terminal pngcairo size 1100,520 noenhanced
set output '{png}'
set title 'stampfs speed relative to raw client and rclone (above 1 = stampfs faster)'
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set logscale y 2
set yrange [*:*]
set grid ytics
set xtics rotate by -30
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot '{dat}' using 2:xtic(1) title 'vs raw1 (one stream)' lc rgb '#4477aa', \
     '' using 3 title 'vs rawN (parallel)' lc rgb '#66ccee', \
     '' using 4 title 'vs rclone mount' lc rgb '#ee6677'
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as err:  # pngcairo missing: try png
        script = script.replace("pngcairo", "png")
        try:
            subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
        except (subprocess.CalledProcessError, OSError):
            print(f"report: gnuplot failed: {err}", file=sys.stderr)
            return None
    return png


def main():
    out = sys.argv[1]
    rows, info = load(out)
    summary = summarise(rows)
    checks = targets(summary)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "unit", "amount"] +
                   [f"{s}_{k}" for s in SYSTEMS for k in ("seconds", "rate")] +
                   ["stampfs_requests", "stampfs_peak_rss_mib",
                    "stampfs_vs_raw1", "stampfs_vs_rawN", "stampfs_vs_rclone"])
        for e in summary:
            st = e.get("stampfs", {})
            w.writerow([e["workload"], e.get("unit"), e.get("amount")] +
                       [e.get(s, {}).get(k, "") for s in SYSTEMS for k in ("seconds", "rate")] +
                       [st.get("requests", ""), st.get("peak_rss_mib", ""),
                        e.get("stampfs_vs_raw1", ""), e.get("stampfs_vs_rawN", ""),
                        e.get("stampfs_vs_rclone", "")])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"run": info, "workloads": summary, "targets": checks}, f, indent=2)
    png = plot(out, summary)
    print(f"stampfs bench, {info.get('date', '?')}; {info.get('machine', '?')}")
    print(f"{info.get('mode', '')}; load {info.get('load', '?')}; "
          f"commit {info.get('commit', '?')}; {info.get('runtime', '?')}")
    print("rates: MiB/s or operations/s (median of the repetitions); "
          "x = stampfs speed over the other's (above 1: stampfs faster)\n")
    print(table(summary))
    print("\ntargets (issue 6):")
    for c in checks:
        state = {True: "met", False: "MISSED", None: "n/a"}[c["met"]]
        print(f"  {state:6} {c['target']}: {c['shown']}")
    if png:
        print(f"\nplot: {png}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plots of ``tools/bench_serve.sh``'s results for docs/serving.md: throughput and p50/p99
latency against concurrency, one panel per model, ``pjrt serve`` beside the JAX baseline; and
the Markdown table of the same figures. Plain SVG, no plotting library.

    python3 tools/plot_serving.py [docs/figures/serving.json]
"""

import json
import math
import os
import sys

COLOURS = {"pjrt serve": "#0072b2", "JAX": "#e69f00"}
W, H = 420, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 36, 48


def panel(x0, title, series, y_label, log_y=False):
    """One chart at horizontal offset x0: series = {name: [(concurrency, value), ...]}."""
    xs = sorted({c for points in series.values() for c, _ in points})
    ys = [v for points in series.values() for _, v in points if v > 0]
    lo, hi = (min(ys), max(ys)) if ys else (1, 10)
    if log_y:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    else:
        # A round top: the first of 1, 2, 5 x 10^k steps that gives at most five ticks.
        raw = hi * 1.05 / 4
        step = min(m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 2.5, 5, 10) if m * 10 ** math.floor(math.log10(raw)) >= raw)
        lo, hi = 0, step * 4

    def px(c):
        i = xs.index(c)
        return x0 + LEFT + (W - LEFT - RIGHT) * (i / max(1, len(xs) - 1))

    def py(v):
        if log_y:
            f = (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        else:
            f = (v - lo) / (hi - lo)
        return TOP + (H - TOP - BOTTOM) * (1 - f)

    out = [f'<text x="{x0 + W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    out.append(f'<line x1="{x0 + LEFT}" y1="{H - BOTTOM}" x2="{x0 + W - RIGHT}" y2="{H - BOTTOM}" stroke="#444"/>')
    out.append(f'<line x1="{x0 + LEFT}" y1="{TOP}" x2="{x0 + LEFT}" y2="{H - BOTTOM}" stroke="#444"/>')
    for c in xs:
        out.append(f'<text x="{px(c)}" y="{H - BOTTOM + 16}" text-anchor="middle" font-size="11">{c}</text>')
    out.append(f'<text x="{x0 + W / 2}" y="{H - 12}" text-anchor="middle" font-size="11">concurrent clients</text>')
    ticks = [lo * 10 ** k for k in range(int(round(math.log10(hi / lo))) + 1)] if log_y else [lo + (hi - lo) * k / 4 for k in range(5)]
    for t in ticks:
        label = f"{t:g}" if log_y else f"{t:.0f}" if hi > 10 else f"{t:.1f}"
        out.append(f'<text x="{x0 + LEFT - 6}" y="{py(t) + 4}" text-anchor="end" font-size="11">{label}</text>')
        out.append(f'<line x1="{x0 + LEFT}" y1="{py(t)}" x2="{x0 + W - RIGHT}" y2="{py(t)}" stroke="#ddd"/>')
    out.append(f'<text x="{x0 + 14}" y="{(TOP + H - BOTTOM) / 2}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 {x0 + 14} {(TOP + H - BOTTOM) / 2})">{y_label}</text>')
    for name, points in series.items():
        colour = COLOURS.get(name.split(" p")[0], "#009e73")
        dash = ' stroke-dasharray="5,3"' if name.endswith("p99") else ""
        path = " ".join(f"{px(c):.1f},{py(v):.1f}" for c, v in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for c, v in points:
            out.append(f'<circle cx="{px(c):.1f}" cy="{py(v):.1f}" r="3" fill="{colour}"/>')
    return out


def figure(path, caption, panels):
    width = W * len(panels)
    body = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H + 40}" font-family="sans-serif">',
            f'<rect width="{width}" height="{H + 40}" fill="white"/>']
    for i, p in enumerate(panels):
        body += panel(W * i, *p)
    legend_x = 20
    for name, colour in COLOURS.items():
        body.append(f'<rect x="{legend_x}" y="{H + 14}" width="14" height="4" fill="{colour}"/>')
        body.append(f'<text x="{legend_x + 20}" y="{H + 20}" font-size="12">{name}</text>')
        legend_x += 130
    body.append(f'<text x="{legend_x}" y="{H + 20}" font-size="11" fill="#555">{caption}</text>')
    body.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(body) + "\n")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "docs/figures/serving.json"
    data = json.load(open(src))
    out_dir = os.path.dirname(src)
    models = sorted({r["model"] for r in data["runs"]})
    runs = {(r["server"], r["model"]): r for r in data["runs"]}
    servers = [s for s in COLOURS if any((s, m) in runs for m in models)]
    throughput, latency = [], []
    for m in models:
        throughput.append((m, {s: [(l["concurrency"], l["throughput_rps"]) for l in runs[(s, m)]["levels"]] for s in servers},
                           "requests/s"))
        lat = {}
        for s in servers:
            lat[f"{s} p50"] = [(l["concurrency"], l["p50_ms"]) for l in runs[(s, m)]["levels"]]
            lat[f"{s} p99"] = [(l["concurrency"], l["p99_ms"]) for l in runs[(s, m)]["levels"]]
        latency.append((m, lat, "ms (p50 solid, p99 dashed)", True))
    figure(os.path.join(out_dir, "serving-throughput.svg"), data["machine"], throughput)
    figure(os.path.join(out_dir, "serving-latency.svg"), data["machine"], latency)
    print("| model | server | ready (ms) | peak memory (MiB) | " + " | ".join(f"c={l['concurrency']} req/s (p50/p99 ms)" for l in data["runs"][0]["levels"]) + " |")
    print("|---|---|---|---|" + "---|" * len(data["runs"][0]["levels"]))
    for m in models:
        for s in servers:
            r = runs[(s, m)]
            cells = [f"{l['throughput_rps']:.0f} ({l['p50_ms']:.2f}/{l['p99_ms']:.2f})" for l in r["levels"]]
            print(f"| {m} | {s} | {r['ready_ms']} | {data['memory'].get(s, 0):.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

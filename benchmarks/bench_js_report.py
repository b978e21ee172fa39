"""The browser client's targets (issue 34): one dp-pop report (draw, Prio3 proof, sealing to
the proxy and the server) in headless Chromium at d = 1,682 (target <= 200 ms, the median of
--repeats reports after --warmup), and the demo page's script size gzip (target <= 300 KB).

The round is ML-100K's: DpPopConfig(epsilon=1, k=50, n_clients=943, min_honest=943), its
terms (mu per share, T, S, B2, proofs) computed here by dprec's calibration, as the proxy
publishes them; the history holds 100 films (more than k: the device samples k). The report's
code is the SDK's (clients/js/src/systems/dp_pop.ts), bundled by esbuild from
clients/js/bench/report_browser.ts; the page's script is clients/js/dist/demo/demo.js
(`make demo-js`), gzip level 9; the report's own bundle (libsodium, the Prio3 code, the
step: what the page's script grows by once it reports) is measured too. The load average is
recorded: on a shared machine the times are upper bounds.
Writes benchmarks/results/bench_js_report.json. Usage:
  .venv/bin/python benchmarks/bench_js_report.py [--repeats 15] [--warmup 3]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from dprec.protocol.secure_sum.checks import check_terms
from dprec.systems.deployable import ProtocolInfo
from dprec.systems.dp_pop.deploy import check_of, round_of
from dprec.systems.dp_pop.system import DpPopConfig

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "clients" / "js"
CHROMIUM = os.environ.get("DPREC_CHROMIUM", "/usr/bin/chromium")
D, USERS, HISTORY = 1682, 943, 100
REPORT_TARGET_MS, SCRIPT_TARGET_KB = 200.0, 300.0


def round_input() -> dict:
    """The round's public numbers as the device's DpPopRound (Python's calibration)."""
    info = ProtocolInfo("dp-pop", D, DpPopConfig(epsilon=1.0, k=50, n_clients=USERS,
                                                 min_honest=USERS))
    check = check_of(info)
    assert check is not None
    return {"nItems": D, "sampling": "uniform", "muShare": round_of(info).share.mu,
            "terms": check_terms(check)}


def bundle(entry: Path, out: Path) -> None:
    subprocess.run([str(JS / "node_modules" / ".bin" / "esbuild"), str(entry), "--bundle",
                    "--format=iife", "--minify", "--target=es2022", f"--outfile={out}",
                    "--log-level=warning"], check=True, cwd=JS)


def time_report(repeats: int, warmup: int) -> dict:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench.js"
        bundle(JS / "bench" / "report_browser.ts", script)
        bench_gzip = len(gzip.compress(script.read_bytes(), compresslevel=9))
        items = list(range(5, 5 + 13 * HISTORY, 13))
        payload = {"round": round_input(), "items": items, "repeats": repeats,
                   "warmup": warmup}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.set_content("<!doctype html><title>bench</title>")
                page.evaluate(f"window.benchInput = {json.dumps(payload)}")
                page.add_script_tag(content=script.read_text())
                out = page.evaluate("window.benchResult")
            finally:
                browser.close()
    times = out["times_ms"]
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "times_ms": times, "setup_ms": out["setup_ms"], "upload_bytes": out["bytes"],
            "browser": out["userAgent"], "target_ms": REPORT_TARGET_MS,
            "report_bundle_gzip_bytes": bench_gzip,
            "meets_target": statistics.median(times) <= REPORT_TARGET_MS,
            "round": payload["round"], "history_items": HISTORY}


def script_size() -> dict:
    path = JS / "dist" / "demo" / "demo.js"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `make demo-js` first")
    raw = path.read_bytes()
    gz = len(gzip.compress(raw, compresslevel=9))
    return {"path": str(path.relative_to(ROOT)), "bytes": len(raw), "gzip_bytes": gz,
            "gzip_kb": gz / 1000, "target_kb": SCRIPT_TARGET_KB,
            "meets_target": gz / 1000 <= SCRIPT_TARGET_KB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    result = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "command": f"benchmarks/bench_js_report.py --repeats {args.repeats} "
                         f"--warmup {args.warmup}",
              "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              "script": script_size(),
              "report": time_report(args.repeats, args.warmup)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_js_report.json").write_text(json.dumps(result, indent=2) + "\n")
    r, s = result["report"], result["script"]
    print(f"dp-pop report at d={D}: median {r['median_ms']:.1f} ms (min {r['min_ms']:.1f}) "
          f"over {args.repeats} (target <= {REPORT_TARGET_MS:.0f}); page script "
          f"{s['gzip_kb']:.1f} KB gzip (target <= {SCRIPT_TARGET_KB:.0f}), the report's bundle "
          f"{r['report_bundle_gzip_bytes'] / 1000:.1f} KB gzip; load {result['load_average']}")


if __name__ == "__main__":
    main()

"""Take docs/mlflow-ui.png: a small study's runs in the MLflow UI, shot with headless Chromium.

Runs a short study into a temporary folder, starts `tuner ui` on 127.0.0.1, and drives
Debian's `chromium` over its DevTools protocol (with aiohttp, which MLflow installs): the
UI's table settings (study run expanded, outcome/value/parameter columns) are stored in
the page's localStorage the way the UI itself stores them, then the runs page is shot.
Needs `apt-get install chromium`. Usage: .venv/bin/python docs/screenshot_mlflow_ui.py
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import aiohttp

from tuner.study.experiment import load_experiment

REPO = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1600, 1000
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    f"--window-size={WIDTH},{HEIGHT}",
]
COLUMNS = [
    "tags.`tuner.train.result`",
    "metrics.`objective_s`",
    "metrics.`samples_to_target`",
    "metrics.`best_accuracy`",
    "params.`optimizer`",
    "params.`lr`",
    "params.`batch_size`",
    "params.`schedule`",
    "params.`width`",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def wait_for(url: str, proc: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nothing answered at {url}") from None
            time.sleep(0.5)


def ui_state(experiment_id: str, parent_id: str) -> dict[str, str]:
    """localStorage entries as the MLflow 3.17 UI writes them (read back from a browser that used it)."""
    table = {
        "searchFilter": "",
        "orderByKey": "attributes.start_time",
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        "selectedColumns": COLUMNS,
        # The UI applies stored widths only to the columns named in columnOrder.
        "columnOrder": ["attributes.`Run Name`", "runDateAndNestInfo", "duration", *COLUMNS],
        "columnWidths": {"attributes.`Run Name`": 340},
        "runsExpanded": {parent_id: True},
        "runsHiddenMode": "FIRST_10_RUNS",
    }
    return {
        f'MLflowLocalStorage-1.1-ExperimentPage-["{experiment_id}"]-ReactComponentState': json.dumps(table),
        "mlflow.assistant.panelOpen_v1": "false",
        "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true",
    }


async def shoot(chromium: str, base: str, page: str, storage: dict[str, str], output: Path, profile: Path) -> None:
    port = free_port()
    browser = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(300):
                try:
                    async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                        targets = await r.json()
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.2)
            ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                ids = iter(range(1, 1_000_000))

                async def call(method: str, **params) -> dict:
                    n = next(ids)
                    await ws.send_json({"id": n, "method": method, "params": params})
                    async for msg in ws:
                        data = json.loads(msg.data)
                        if data.get("id") == n:
                            return data.get("result", {})
                    return {}

                async def js(expression: str) -> object:
                    result = await call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
                    return result.get("result", {}).get("value")

                await call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
                await call("Page.navigate", url=base + "/health")  # same origin, so the UI reads what is stored here
                await asyncio.sleep(1)
                await js(f"Object.entries({json.dumps(storage)}).forEach(([k, v]) => localStorage.setItem(k, v))")
                await call("Page.navigate", url=page)
                for _ in range(240):  # the UI is a JS app: wait until the trial rows are drawn
                    if await js("document.querySelectorAll('[role=row]').length > 8 && document.body.innerText.includes('trial ')"):
                        break
                    await asyncio.sleep(0.5)
                await asyncio.sleep(3)
                await js("document.querySelector('button[aria-label=\"Toggle sidebar\"]')?.click()")  # more room for the table
                await asyncio.sleep(1)
                shot = await call("Page.captureScreenshot", format="png")
                output.write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.terminate()
        browser.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "digits_mlp.yaml"))
    parser.add_argument("--n-trials", default="10")
    parser.add_argument("--output", default=str(REPO / "docs" / "mlflow-ui.png"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Chromium: apt-get install chromium")
    folder = Path(tempfile.mkdtemp(prefix="mlflow-ui-"))
    uri = f"sqlite:///{folder / 'mlruns' / 'mlflow.db'}"
    tuner = [sys.executable, "-m", "tuner"]
    subprocess.run(
        [
            *tuner,
            "run",
            args.experiment,
            "--n-trials",
            args.n_trials,
            "--storage",
            f"sqlite:///{folder / 'study.db'}",
            "--tracking-uri",
            uri,
            "--quiet",
        ],
        cwd=folder,
        check=True,
    )
    port = free_port()
    ui = subprocess.Popen(
        [*tuner, "ui", "--tracking-uri", uri, "--port", str(port)],
        cwd=folder,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base + "/health", ui)
        query = urllib.parse.urlencode({"experiment_name": load_experiment(args.experiment).name})
        experiment_id = get_json(f"{base}/ajax-api/2.0/mlflow/experiments/get-by-name?{query}")["experiment"]["experiment_id"]
        search = json.dumps({"experiment_ids": [experiment_id], "filter": "tags.`tuner.role` = 'parent'", "max_results": 1}).encode()
        request = urllib.request.Request(
            f"{base}/ajax-api/2.0/mlflow/runs/search", data=search, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5) as r:
            parent_id = json.load(r)["runs"][0]["info"]["run_id"]
        page = f"{base}/#/experiments/{experiment_id}/runs"
        asyncio.run(shoot(chromium, base, page, ui_state(experiment_id, parent_id), Path(args.output), folder / "chromium-profile"))
        print(f"written to {args.output} ({page})")
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        try:
            ui.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(ui.pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

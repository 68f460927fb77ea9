"""Take docs/mlflow-ui.png and docs/report.png: a small study in the MLflow UI, and its report.

Runs a short study into a temporary folder, starts `tuner ui` on 127.0.0.1 and opens the
address it prints (the study's runs in model-training mode) in Debian's `chromium`, from a
fresh profile with nothing stored in the browser: what a reviewer sees on first opening
it. Then writes `tuner report` of the same study and shoots its HTML page. Drives Chromium
over its DevTools protocol (with aiohttp, which MLflow installs).
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
import threading
import time
import urllib.request
from pathlib import Path

import aiohttp

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


async def shoot(chromium: str, page: str, output: Path, profile: Path, ready: str, full_page: bool = False) -> None:
    """Open ``page`` in a fresh profile, wait until the JavaScript ``ready`` is true, save a PNG."""
    port = free_port()
    # Popen returns at once (the browser runs beside the coroutines), so it does not block the loop.
    browser = subprocess.Popen(  # noqa: ASYNC220
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
                await call("Page.navigate", url=page)
                for _ in range(240):  # the UI is a JS app: wait until it has drawn what we came for
                    if await js(ready):
                        break
                    await asyncio.sleep(0.5)
                await asyncio.sleep(3)
                if full_page:
                    height = await js("document.documentElement.scrollHeight")
                    await call(
                        "Emulation.setDeviceMetricsOverride",
                        width=WIDTH,
                        height=min(int(height or HEIGHT), 6000),
                        deviceScaleFactor=1,
                        mobile=False,
                    )
                    await asyncio.sleep(1)
                shot = await call("Page.captureScreenshot", format="png")
                output.write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.terminate()
        browser.wait(timeout=20)


def ui_address(proc: subprocess.Popen, seconds: float = 240) -> str:
    """The study's address as `tuner ui` prints it; the rest of its output is drained."""
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            if not found and "#/experiments/" in line:
                found.append(next(w for w in line.split() if "#/experiments/" in w))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(seconds):
        raise RuntimeError("tuner ui printed no study address")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "digits_mlp.yaml"))
    parser.add_argument("--n-trials", default="10")
    parser.add_argument("--output", default=str(REPO / "docs" / "mlflow-ui.png"))
    parser.add_argument("--report-output", default=str(REPO / "docs" / "report.png"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Chromium: apt-get install chromium")
    folder = Path(tempfile.mkdtemp(prefix="mlflow-ui-"))
    uri = f"sqlite:///{folder / 'mlruns' / 'mlflow.db'}"
    storage = f"sqlite:///{folder / 'study.db'}"
    tuner = [sys.executable, "-m", "tuner"]
    subprocess.run(
        [*tuner, "run", args.experiment, "--n-trials", args.n_trials, "--storage", storage, "--tracking-uri", uri, "--quiet"],
        cwd=folder,
        check=True,
    )
    port = free_port()
    ui = subprocess.Popen(
        [*tuner, "ui", args.experiment, "--tracking-uri", uri, "--port", str(port)],
        cwd=folder,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        page = ui_address(ui)
        wait_for(page.split("#", 1)[0] + "health", ui)
        runs_drawn = "document.querySelectorAll('[role=row]').length > 1 && document.body.innerText.includes('study')"
        asyncio.run(shoot(chromium, page, Path(args.output), folder / "profile-ui", runs_drawn))
        print(f"written to {args.output} ({page})")
    finally:
        os.kill(ui.pid, signal.SIGTERM)  # `tuner ui` stops every process it started
        try:
            ui.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(ui.pid, signal.SIGKILL)
    try:
        subprocess.run([*tuner, "report", args.experiment, "--storage", storage, "-o", str(folder / "reports")], cwd=folder, check=True)
        html = next((folder / "reports").glob("*.html"))
        asyncio.run(
            shoot(
                chromium, html.as_uri(), Path(args.report_output), folder / "profile-report", "document.images.length > 0", full_page=True
            )
        )
        print(f"written to {args.report_output}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

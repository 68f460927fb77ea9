"""Take docs/site-front.png and docs/site-experiment-file.png: the documentation site as a reader sees it.

Builds the site (`mkdocs build --strict`) into a temporary folder, serves it on 127.0.0.1 and
opens the front page and the experiment-file reference (at its generated table of keys) in
Debian's `chromium`, from a fresh profile, as docs/screenshot_mlflow_ui.py does for the MLflow UI.
Needs the docs extra and `apt-get install chromium`. Usage: .venv/bin/python docs/screenshot_site.py
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from screenshot_mlflow_ui import REPO, free_port, shoot

THEME_DRAWN = "!!document.querySelector('.md-header') && getComputedStyle(document.querySelector('.md-header')).position === 'sticky'"
TABLE_DRAWN = THEME_DRAWN + " && document.querySelectorAll('.md-typeset table').length > 3"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(REPO / "docs" / "site-front.png"))
    parser.add_argument("--reference-output", default=str(REPO / "docs" / "site-experiment-file.png"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Chromium: apt-get install chromium")
    folder = Path(tempfile.mkdtemp(prefix="tuner-site-"))
    try:
        site = folder / "site"
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)], check=True
        )
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
        port = free_port()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            base = f"http://127.0.0.1:{port}/"
            asyncio.run(shoot(chromium, base, Path(args.output), folder / "profile-front", THEME_DRAWN))
            print(f"written to {args.output}")
            page = base + "experiment-file/#every-key"
            asyncio.run(shoot(chromium, page, Path(args.reference_output), folder / "profile-reference", TABLE_DRAWN))
            print(f"written to {args.reference_output}")
        finally:
            server.shutdown()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

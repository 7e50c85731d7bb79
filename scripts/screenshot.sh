#!/usr/bin/env bash
# Open a Relay notebook in headless JupyterLab, run all cells, save a screenshot.
#
#   scripts/screenshot.sh [OUT.png] [NOTEBOOK.ipynb]
#
# Defaults: docs/kernel-screenshot.png and a small showcase notebook (highlighted Relay code,
# a tensor shown as a table, a located type error) written to a temporary directory.
# A developer tool, not part of the test suite. Needs: the project venv (.venv, with
# relay-ref installed), Debian's chromium (`apt-get install chromium`), node + npm.
# JupyterLab goes into a throwaway venv and playwright-core into a temporary npm project (no
# browser download); the server listens on 127.0.0.1 only, with a throwaway HOME.
# Environment: PYTHON (default .venv/bin/python), CHROMIUM (default /usr/bin/chromium),
# PORT (default 8899), JLAB_VENV (reuse a venv that already has jupyterlab).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$(realpath -m "${1:-docs/kernel-screenshot.png}")
NOTEBOOK=${2:-}
PY=${PYTHON:-$ROOT/.venv/bin/python}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PORT=${PORT:-8899}

[ -x "$CHROMIUM" ] || { echo "screenshot: no $CHROMIUM (apt-get install chromium)" >&2; exit 2; }
command -v npm >/dev/null || { echo "screenshot: npm is needed" >&2; exit 2; }

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# 1. The kernelspec, pointing at the project's interpreter.
"$PY" -m relay_kernel install --prefix "$WORK/prefix" >/dev/null
export JUPYTER_PATH="$WORK/prefix/share/jupyter"

# 2. The notebook.
mkdir -p "$WORK/nb"
if [ -n "$NOTEBOOK" ]; then
    cp "$NOTEBOOK" "$WORK/nb/showcase.ipynb"
else
    "$PY" "$ROOT/scripts/screenshot_notebook.py" "$WORK/nb/showcase.ipynb"
fi

# 3. JupyterLab (throwaway venv) and playwright-core (temporary npm project).
JLAB=${JLAB_VENV:-$WORK/jlab}
if [ ! -x "$JLAB/bin/jupyter-lab" ]; then
    python3 -m venv "$JLAB"
    "$JLAB/bin/pip" install --quiet jupyterlab
fi
(cd "$WORK" && npm init -y >/dev/null && npm install --silent playwright-core >/dev/null)

# 4. Serve, screenshot, stop.
HOME="$WORK/home" "$JLAB/bin/jupyter-lab" --no-browser --allow-root --ip=127.0.0.1 \
    --port="$PORT" --ServerApp.token='' --ServerApp.password='' \
    --ServerApp.root_dir="$WORK/nb" --LabApp.news_url=None \
    --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 60); do
    curl -sf "http://127.0.0.1:$PORT/api" >/dev/null && break
    sleep 1
done
mkdir -p "$(dirname "$OUT")"
(cd "$WORK" && NODE_PATH="$WORK/node_modules" CHROMIUM="$CHROMIUM" SHOT="$OUT" \
    URL="http://127.0.0.1:$PORT/lab/tree/showcase.ipynb" \
    node "$ROOT/scripts/screenshot.js") || { tail -20 "$WORK/server.log" >&2; exit 1; }
echo "screenshot: $OUT"

#!/usr/bin/env bash
# Set up transnli on a Debian/Ubuntu machine: system packages, .venv, torch (CPU), the project,
# and offline resources (WordNet for nltk, GloVe vectors in gensim format).
# Idempotent: every step checks first and does nothing when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV="$ROOT/.venv"
say() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages: WordNet 3.0 database and link-grammar (Python binding for /usr/bin/python3).
APT_PKGS=()
[ -f /usr/share/wordnet/data.noun ] || APT_PKGS+=(wordnet-base)
[ -f /usr/share/wordnet/index.sense ] || APT_PKGS+=(wordnet-sense-index)
[ -d /usr/lib/python3/dist-packages/linkgrammar ] || APT_PKGS+=(python3-link-grammar)
[ -d /usr/share/link-grammar/en ] || APT_PKGS+=(link-grammar-dictionaries-en)
if [ ${#APT_PKGS[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    say "installing Debian packages: ${APT_PKGS[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT_PKGS[@]}" >/dev/null
  else
    say "warning: no apt-get; WordNet/link-grammar must come from elsewhere (see 'transnli doctor')"
  fi
fi

# 2. The virtual environment. Python 3.11 matches Debian's link-grammar binding and the local torch wheel.
if [ ! -x "$VENV/bin/python" ]; then
  PY="${TRANSNLI_PYTHON:-}"
  if [ -z "$PY" ]; then
    for cand in python3.11 python3; do command -v "$cand" >/dev/null && { PY=$cand; break; }; done
  fi
  say "creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip install -q --disable-pip-version-check)

# 3. torch: the CPU wheel; an unpinned torch would pull gigabytes of CUDA packages.
if ! "$VPY" -c "import torch" 2>/dev/null; then
  say "installing torch==2.13.0 (CPU)"
  "${PIP[@]}" "torch==2.13.0"
fi

# 4. The project with its dev extras; skipped when pyproject.toml has not changed since.
STAMP="$VENV/.transnli-installed"
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  say "installing transnli and its dependencies"
  "${PIP[@]}" -e ".[dev]"
  echo "$WANT" > "$STAMP"
fi

# 5. link-grammar: expose Debian's binding to the venv when the Python versions match.
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
LG_SRC=/usr/lib/python3/dist-packages/linkgrammar
if [ -d "$LG_SRC" ] && [ ! -f "$SITE/transnli_linkgrammar.pth" ]; then
  if ls "$LG_SRC"/_clinkgrammar*"$("$VPY" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"*.so >/dev/null 2>&1; then
    mkdir -p "$VENV/linkgrammar-shim"
    ln -sfn "$LG_SRC" "$VENV/linkgrammar-shim/linkgrammar"
    echo "$VENV/linkgrammar-shim" > "$SITE/transnli_linkgrammar.pth"
    say "linked Debian's link-grammar binding into the venv"
  else
    say "warning: Debian's link-grammar binding does not match the venv's Python; link-grammar backend unavailable"
  fi
fi

# 6. Offline resources (WordNet for nltk, vectors in gensim format). Each step is a no-op when done.
"$VPY" -m transnli_resources.provision
say "done"

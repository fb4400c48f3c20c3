# Source this on a GPU machine that has torch/triton but not Heron installed (the lent H200):
#   source bench/device_env.sh
# It makes `import heron.*` resolve to this checkout's folders (a namespace package of symlinks,
# the layout `pip install -e .` gives) without installing anything.
_heron_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_heron_path=$(mktemp -d)/site
mkdir -p "$_heron_path/heron"
for _p in server planner engine kernels catalog bench; do ln -s "$_heron_repo/$_p" "$_heron_path/heron/$_p"; done
export PYTHONPATH="$_heron_path${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

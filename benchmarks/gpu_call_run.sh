# The second device call, sent while the machine is warm: carry .devrun/gemma.part1,
# .devrun/data.tar.xz and the gguf wheel; PY=python3 RUNARGS="--seconds S" there.
set -e
cp .devrun/gemma.part1 /tmp/dev/
for d in generator common resources; do ln -sfn ../$d transnli/$d; done
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .devrun/gguf-*.whl && export PYTHONPATH=/tmp/site
$PY -c "import tarfile; tarfile.open('.devrun/data.tar.xz').extractall()"
export PYTHONUNBUFFERED=1
$PY -c "import transnli.generator.pair_judge as m; print('pair_judge from', m.__file__)"
set +e
$PY benchmarks/gpu_pair_judge.py run --pack /tmp/dev/gemma --probe /tmp/dev/probe.json --out /tmp/dev/out --lm-folder /tmp/dev/gemma_folder $RUNARGS
rc=$?
cd /tmp/dev/out && tar -czf $OUT/results.tar.gz --exclude='*_judge' --exclude='*.checkpoint' .
for d in *_judge; do [ -d "$d" ] && tar -czf "$OUT/$d.tar.gz" "$d"; done
cp /tmp/dev/out/summary.json $OUT/ 2>/dev/null; tail -5 /tmp/dev/out/run.log
exit $rc

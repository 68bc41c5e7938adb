# The first of the two device calls (docs/development.md, "Training a judge on a lent GPU"):
# carry .devrun/gemma.part0 and .devrun/config; run with PY=python3 there.
set -e
mkdir -p /tmp/dev && cp .devrun/gemma.part0 /tmp/dev/
for d in generator common resources; do ln -sfn ../$d transnli/$d; done
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv || true
$PY -c "import torch,transformers,peft,numpy,sklearn;print('versions',torch.__version__,transformers.__version__,peft.__version__,numpy.__version__,sklearn.__version__, torch.cuda.is_available())"
$PY benchmarks/gpu_pair_judge.py probe --config .devrun/config/config.json --out /tmp/dev/probe.json --together ${TOGETHER:-6} --steps ${STEPS:-40}
cp /tmp/dev/probe.json $OUT/

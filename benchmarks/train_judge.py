"""Train the judge (transnli.generator.judge) on the judged training sets, cross-validate it, and
measure it once on the test set.

    .venv/bin/pip install scikit-learn                 # or: pip install -e .[train]
    .venv/bin/python benchmarks/judge_data.py --set dev     # (and --set genres, --set test) once
    .venv/bin/python benchmarks/train_judge.py --grid                     # the model choice
    .venv/bin/python benchmarks/train_judge.py [--layer 6 --components 16 --C 0.1 \
        --blocks span_modified] [--write]

Protocol. Training data: the judged dev candidates (WordNet example sentences) and the judged
genre candidates (benchmarks/data/quality_genres.jsonl), every judged candidate of a sentence
(raw: also what filters and checks would reject). Cross-validation: grouped by source sentence
(no sentence on both sides), 5 folds x 5 shuffles; inside each fold, each hidden-state block is
projected on its principal components (fitted on the training rows), everything is standardised
and an L2 logistic regression is fitted. Out-of-fold scores give the figures and the calibration
(Platt scaling). Figures are read on the population the judge decides in the default preset: the
candidates the rule filters and the grammar check pass (`gate`), against the good triples the
`fast` preset accepts. The test set (academic prose and man pages) is never trained or tuned on:
--grid compares the number of components, C and the hidden-state blocks on the cross-validated
training figures alone; the test figures are printed for the configuration fitted.

Prints one JSON object; --write also writes resources/models/judge_gemma3_270m.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quality import DATA  # noqa: E402
from judge_data import CACHE, SETS  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "resources" / "models" / "judge_gemma3_270m.json"
# the sentences each judged set's candidates were made from, named after its judgements' file
SENTENCE_FILES = {name: DATA / f"quality_{name}_sentences.jsonl" for name in SETS}
DIGITS = 8
BLOCKS = ("span_modified", "span_shift", "pooled_modified")
LAYERS = (6,)  # read by judge_data.py (the CEO's measurement and RESOURCES.md: layers 6-12)


def load(name: str) -> dict[str, np.ndarray] | None:
    """A set's features from judge_data.py's files (one a layer), merged."""
    from bench_quality import load_judgements

    out: dict[str, np.ndarray] = {}
    for path in sorted(CACHE.glob(f"{name}_L*.npz")):
        with np.load(path) as data:
            out.update({k: data[k] for k in data.files})
    if not out:
        return None
    # the labels come from today's judgements (the features only from the sentences)
    judged = load_judgements(SETS[name])
    missing = [k for k in out["keys"] if k not in judged]
    if missing:
        sys.exit(f"{name}: {len(missing)} feature rows have no judgement; rerun judge_data.py")
    out["y"] = np.array([int(bool(judged[k]["good"])) for k in out["keys"]])
    out["error_type"] = np.array([judged[k].get("error_type") or "" for k in out["keys"]])
    return out


def population_keys(name: str) -> dict[str, set[str]]:
    """Keys (H \\x1f H') the `fast` preset accepts, and those its filters and grammar check pass
    (`gate`: what the judge decides on in the default preset)."""
    from bench_quality import key, run_preset

    saved = CACHE / f"population_{name}.json"  # the pipeline's decisions, kept for reruns
    if saved.is_file():
        return {k: set(v) for k, v in json.loads(saved.read_text(encoding="utf-8")).items()}
    out = {}
    for label, overrides in (("fast", {}), ("gate", {"acceptability": "none"})):
        _, _, accepted, _, _ = run_preset("fast", overrides, SENTENCE_FILES[name])
        out[label] = {key(r.hypothesis, r.modified_hypothesis) for r in accepted}
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({k: sorted(v) for k, v in out.items()}), encoding="utf-8")
    return out


class Config:
    def __init__(self, layer: int, components: int, C: float, blocks=BLOCKS):
        self.layer, self.components, self.C, self.blocks = layer, components, C, tuple(blocks)

    def as_dict(self) -> dict:
        return {
            "layer": self.layer,
            "components": self.components,
            "C": self.C,
            "blocks": list(self.blocks),
        }


def gate_keys(names) -> set[str]:
    """The gate candidates (`population_keys`' 'gate') of every set in `names`, together."""
    return set().union(*(population_keys(name)["gate"] for name in names))


def fit(data: dict, rows: np.ndarray, cfg: Config):
    """(pcas, scaler, logreg) fitted on `rows`."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    pcas = {}
    parts = [data["scalars"][rows]]
    for b in cfg.blocks:
        pca = PCA(n_components=cfg.components, random_state=0, svd_solver="full")
        parts.append(pca.fit_transform(data[f"L{cfg.layer}_{b}"][rows].astype(np.float64)))
        pcas[b] = pca
    X = np.hstack(parts)
    scaler = StandardScaler().fit(X)
    logreg = LogisticRegression(C=cfg.C, max_iter=5000).fit(scaler.transform(X), data["y"][rows])
    return pcas, scaler, logreg


def collapse(pcas, scaler, logreg, cfg: Config, n_scalars: int) -> dict:
    """The fitted pipeline as one linear function of the raw features: scalars standardised with
    their own mean and scale; each block a weight vector over the raw hidden state."""
    beta = logreg.coef_[0] / scaler.scale_
    intercept = float(logreg.intercept_[0]) - float(beta @ scaler.mean_)
    out = {
        "scalar_mean": scaler.mean_[:n_scalars],
        "scalar_scale": scaler.scale_[:n_scalars],
        "scalar_coef": logreg.coef_[0][:n_scalars],
        # the scalars' part is applied as ((x - mean) / scale) @ coef: undo its share above
        "intercept": intercept + float(beta[:n_scalars] @ scaler.mean_[:n_scalars]),
        "vector_coef": {},
    }
    at = n_scalars
    for b in cfg.blocks:
        pca = pcas[b]
        w = beta[at : at + cfg.components]
        out["vector_coef"][b] = pca.components_.T @ w
        out["intercept"] -= float(w @ (pca.components_ @ pca.mean_))
        at += cfg.components
    return out


def linear_scores(model: dict, data: dict, rows: np.ndarray, cfg: Config) -> np.ndarray:
    z = (data["scalars"][rows] - model["scalar_mean"]) / model["scalar_scale"]
    z = z @ model["scalar_coef"] + model["intercept"]
    for b, w in model["vector_coef"].items():
        z = z + data[f"L{cfg.layer}_{b}"][rows].astype(np.float64) @ w
    return z


def folds_of(groups: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Fold number of each row: whole sentences to a fold, shuffled by seed."""
    names = np.unique(groups)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(names))
    fold_of = {names[i]: k % folds for k, i in enumerate(order)}
    return np.array([fold_of[g] for g in groups])


def out_of_fold(data: dict, cfg: Config, folds: int, seed: int) -> np.ndarray:
    z = np.zeros(len(data["y"]))
    fold = folds_of(data["sentences"], folds, seed)
    n_scalars = data["scalars"].shape[1]
    for k in range(folds):
        train, held = np.where(fold != k)[0], np.where(fold == k)[0]
        model = collapse(*fit(data, train, cfg), cfg, n_scalars)
        z[held] = linear_scores(model, data, held, cfg)
    return z


def sweep_grid(data: dict, pops: dict, folds: int, seed: int, ks, Cs, block_sets) -> list:
    """Out-of-fold figures of every (k, C, blocks) at once: principal components are nested, so
    one PCA of the largest k per fold and block serves every smaller k."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    fold = folds_of(data["sentences"], folds, seed)
    grid = [(k, C, blocks) for k in ks for C in Cs for blocks in block_sets]
    z = {g: np.zeros(len(data["y"])) for g in grid}
    for f in range(folds):
        train, held = np.where(fold != f)[0], np.where(fold == f)[0]
        proj = {}
        for b in {b for bs in block_sets for b in bs}:
            x = data[f"L{LAYERS[0]}_{b}"].astype(np.float64)
            pca = PCA(n_components=max(ks), random_state=0, svd_solver="full").fit(x[train])
            proj[b] = pca.transform(x)
        for k, C, blocks in grid:
            X = np.hstack([data["scalars"]] + [proj[b][:, :k] for b in blocks])
            sc = StandardScaler().fit(X[train])
            lr = LogisticRegression(C=C, max_iter=5000).fit(
                sc.transform(X[train]), data["y"][train]
            )
            z[(k, C, blocks)][held] = lr.decision_function(sc.transform(X[held]))
    dev_rows = data["set"] == "dev"
    gate = mask(data, pops["dev"]["gate"]) & dev_rows
    fast_good = int(data["y"][mask(data, pops["dev"]["fast"]) & dev_rows].sum())
    out = []
    for g in grid:
        at = precision_at_kept(z[g][gate], data["y"][gate], fast_good)
        out.append(
            {
                "components": g[0],
                "C": g[1],
                "blocks": list(g[2]),
                "auc_gate": auc(z[g][gate], data["y"][gate]),
                "p_at_80": at["0.80"]["precision"],
                "p_at_65": at["0.65"]["precision"],
            }
        )
    return out


def platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, max_iter=1000).fit(z.reshape(-1, 1), y)
    return float(lr.coef_[0][0]), float(lr.intercept_[0])


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def precision_at_kept(scores, good, reference_good: int, shares=(0.8, 0.65)) -> dict:
    """Best precision among cuts that keep at least share x reference_good good triples."""
    order = np.argsort(-scores, kind="stable")
    hits = np.cumsum(good[order])
    n = np.arange(1, len(order) + 1)
    out = {}
    for share in shares:
        ok = hits >= share * reference_good
        if not ok.any():
            out[f"{share:.2f}"] = None
            continue
        prec = np.where(ok, hits / n, 0.0)
        i = int(np.argmax(prec))
        out[f"{share:.2f}"] = {
            "precision": round(float(prec[i]), 4),
            "kept": int(n[i]),
            "good": int(hits[i]),
            "threshold": round(float(scores[order][i]), 4),
        }
    return out


def at_threshold(p, good, t: float) -> dict:
    kept = p >= t
    return {
        "threshold": t,
        "kept": int(kept.sum()),
        "good": int(good[kept].sum()),
        "precision": round(float(good[kept].mean()), 4) if kept.any() else None,
    }


def reliability(p, y, bins: int = 10) -> dict:
    """Expected calibration error and the reliability table (equal-width bins)."""
    edges = np.linspace(0, 1, bins + 1)
    rows, ece = [], 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        m = (p >= lo) & ((p < hi) if hi < 1 else (p <= hi))
        if not m.any():
            continue
        gap = abs(float(p[m].mean()) - float(y[m].mean()))
        ece += m.sum() / len(p) * gap
        rows.append(
            {
                "bin": f"{lo:.1f}-{hi:.1f}",
                "n": int(m.sum()),
                "mean_p": round(float(p[m].mean()), 3),
                "good_share": round(float(y[m].mean()), 3),
            }
        )
    return {"ece": round(ece, 4), "table": rows}


def perfectly_calibrated_eces(p, draws: int = 200, seed: int = 0) -> np.ndarray:
    """The ECE of `draws` label sets drawn from `p` itself: what a perfectly calibrated judge
    shows on as many candidates with these probabilities (ECE's sampling floor)."""
    rng = np.random.default_rng(seed)
    return np.array(
        [reliability(p, (rng.random(len(p)) < p).astype(int))["ece"] for _ in range(draws)]
    )


def auc(scores, y) -> float | None:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, scores)), 4) if 0 < y.sum() < len(y) else None


def merge(*sets: dict) -> dict:
    keys = [k for k in sets[0] if k != "sentences"]
    out = {k: np.concatenate([s[k] for s in sets]) for k in keys}
    out["sentences"] = np.concatenate([s["sentences"] for s in sets])
    return out


def mask(data: dict, keys: set[str]) -> np.ndarray:
    return np.array([k in keys for k in data["keys"]])


def evaluate_cv(train: dict, pops: dict, cfg: Config, folds: int, seeds: int) -> dict:
    """Mean over shuffles of the dev figures on the gate population."""
    dev_rows = train["set"] == "dev"
    gate = mask(train, pops["dev"]["gate"]) & dev_rows
    fast_good = int(train["y"][mask(train, pops["dev"]["fast"]) & dev_rows].sum())
    results, zs = [], []
    for seed in range(seeds):
        z = out_of_fold(train, cfg, folds, seed)
        zs.append(z)
        results.append(
            {
                "auc_gate": auc(z[gate], train["y"][gate]),
                "auc_all": auc(z, train["y"]),
                **precision_at_kept(z[gate], train["y"][gate], fast_good),
            }
        )

    def mean(f):
        vals = [f(r) for r in results if f(r) is not None]
        return round(float(np.mean(vals)), 4) if vals else None

    return {
        "auc_gate": mean(lambda r: r["auc_gate"]),
        "auc_all": mean(lambda r: r["auc_all"]),
        "p_at_80": mean(lambda r: r["0.80"] and r["0.80"]["precision"]),
        "p_at_65": mean(lambda r: r["0.65"] and r["0.65"]["precision"]),
        "fast_good_dev": fast_good,
        "z": zs,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", action="store_true", help="Print the fast grid's CV figures only.")
    ap.add_argument("--layer", type=int, default=6)
    ap.add_argument("--components", type=int, default=16)
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--blocks", default="span_modified", help="Comma-separated; '' for none.")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    from transnli.generator.judge import SCALARS

    parts = []
    for name in ("dev", "genres"):
        data = load(name)
        if data is not None:
            data["set"] = np.array([name] * len(data["y"]))
            parts.append(data)
    train = merge(*parts)
    test = load("test")
    pops = {name: population_keys(name) for name in ("dev", "test", "genres")}

    if args.grid:
        rows = {}
        for seed in range(2):
            for r in sweep_grid(
                train,
                pops,
                args.folds,
                seed,
                (4, 8, 16, 32),
                (0.01, 0.03, 0.1),
                ((), BLOCKS, BLOCKS[:2], BLOCKS[:1], (BLOCKS[2],)),  # (): the scalars alone
            ):
                key_ = (r["components"], r["C"], tuple(r["blocks"]))
                rows.setdefault(key_, []).append(r)
        for key_, rs in sorted(
            rows.items(), key=lambda kv: -np.mean([r["p_at_80"] for r in kv[1]])
        ):
            print(
                json.dumps(
                    {
                        "components": key_[0],
                        "C": key_[1],
                        "blocks": key_[2],
                        **{
                            m: round(float(np.mean([r[m] for r in rs])), 4)
                            for m in ("auc_gate", "p_at_80", "p_at_65")
                        },
                    }
                )
            )
        return
    best = Config(args.layer, args.components, args.C, [b for b in args.blocks.split(",") if b])
    cv = evaluate_cv(train, pops, best, args.folds, args.seeds)
    z_oof = np.mean(cv.pop("z"), axis=0)
    # Calibrated and cut where the judge decides: on what the filters and the grammar check pass
    # (the raw candidates it also learns from are far more often bad).
    gate_rows = np.zeros(len(train["y"]), dtype=bool)
    for name in ("dev", "genres"):
        if name in pops:
            gate_rows |= mask(train, pops[name]["gate"]) & (train["set"] == name)
    a, b = platt(z_oof[gate_rows], train["y"][gate_rows])
    p_oof = sigmoid(a * z_oof + b)
    dev_gate = mask(train, pops["dev"]["gate"]) & (train["set"] == "dev")
    reference_good = sum(
        int(train["y"][mask(train, pops[n]["fast"]) & (train["set"] == n)].sum())
        for n in ("dev", "genres")
        if n in pops
    )
    result_cv_pooled = {
        "population": "dev + genres candidates the filters and grammar check pass",
        "candidates": int(gate_rows.sum()),
        "fast_good": reference_good,
        "at_kept": precision_at_kept(p_oof[gate_rows], train["y"][gate_rows], reference_good),
        "calibration": reliability(p_oof[gate_rows], train["y"][gate_rows]),
    }

    n_scalars = train["scalars"].shape[1]
    model = collapse(*fit(train, np.arange(len(train["y"])), best), best, n_scalars)
    result = {
        "config": best.as_dict(),
        "cv": cv,
        "cv_pooled": result_cv_pooled,
        "cv_calibration": reliability(p_oof[dev_gate], train["y"][dev_gate]),
    }
    threshold = args.threshold
    if threshold is None:  # the highest threshold that keeps 80% of fast's good triples in CV
        cut = result_cv_pooled["at_kept"]["0.80"]
        threshold = round(float(np.floor(cut["threshold"] * 100) / 100), 2)
    result["threshold"] = threshold
    result["cv_at_threshold"] = at_threshold(p_oof[gate_rows], train["y"][gate_rows], threshold)
    if test is not None:
        rows = np.arange(len(test["y"]))
        p = sigmoid(a * linear_scores(model, test, rows, best) + b)
        gate = mask(test, pops["test"]["gate"])
        fast_good = int(test["y"][mask(test, pops["test"]["fast"])].sum())
        d = test["scalars"][:, 0]
        result["test_d_alone"] = {
            "auc_gate": auc(d[gate], test["y"][gate]),
            "at_kept": precision_at_kept(d[gate], test["y"][gate], fast_good),
        }
        result["test"] = {
            "auc_gate": auc(p[gate], test["y"][gate]),
            "auc_all": auc(p, test["y"]),
            "fast_good": fast_good,
            "at_kept": precision_at_kept(p[gate], test["y"][gate], fast_good),
            "at_threshold": at_threshold(p[gate], test["y"][gate], threshold),
            "calibration": reliability(p[gate], test["y"][gate]),
            "gate_judged": int(gate.sum()),
            "gate_total": len(pops["test"]["gate"]),
        }
    if args.write:
        import sklearn

        digest = hashlib.sha256()
        for name in ("dev", "genres"):
            if load(name) is not None:
                digest.update(SETS[name].read_bytes())
        rnd = lambda x: float(f"{x:.{DIGITS}g}")  # noqa: E731
        doc = {
            "format": "transnli-judge-1",
            "language_model": "gemma3-270m",
            "layer": best.layer,
            "width": int(train[f"L{best.layer}_span_modified"].shape[1]),
            "scalars": list(SCALARS),
            "scalar_mean": [rnd(x) for x in model["scalar_mean"]],
            "scalar_scale": [rnd(x) for x in model["scalar_scale"]],
            "scalar_coef": [rnd(x) for x in model["scalar_coef"]],
            "vector_coef": {k: [rnd(x) for x in v] for k, v in model["vector_coef"].items()},
            "intercept": rnd(model["intercept"]),
            "calibration": {"a": rnd(a), "b": rnd(b), "method": "Platt, on out-of-fold scores"},
            "threshold": threshold,
            # the calibration's base rate: the good share of the candidates it was fitted on,
            # which the card's label-shift correction starts from (transnli.generator.precision)
            "training_prior": round(float(train["y"][gate_rows].mean()), 4),
            "training": {
                "data": [
                    str(SETS[n].relative_to(DATA.parents[1]))
                    for n in ("dev", "genres")
                    if load(n) is not None
                ],
                "data_sha256": digest.hexdigest(),
                "rows": int(len(train["y"])),
                "good": int(train["y"].sum()),
                "model": f"per block PCA({best.components}) + StandardScaler + "
                f"LogisticRegression(C={best.C}), collapsed to one linear function",
                "sklearn_version": sklearn.__version__,
            },
            "validation": {
                "cv": {k: v for k, v in cv.items()},
                "cv_at_threshold": result["cv_at_threshold"],
                "cv_pooled": {k: v for k, v in result_cv_pooled.items() if k != "calibration"}
                | {"ece": result_cv_pooled["calibration"]["ece"]},
                "test": result.get("test")
                and {k: result["test"][k] for k in ("auc_gate", "at_threshold", "at_kept")}
                | {"ece": result["test"]["calibration"]["ece"]},
            },
        }
        OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        result["written"] = str(OUT)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

"""Carry the default language model to a GPU machine that cannot download it and takes a few tens
of MB a call: the GGUF's own quantised tensors, its embedding cut to the rows of the tokens that
the pair judge's prompts use, and the tokenizer. `unpack`, on that machine, rebuilds the float32
folder that transnli converts the GGUF into, and checks every tensor against the digests taken
here from the converted folder.

    .venv/bin/python benchmarks/gpu_pack.py pack --out PACK --part-mb 40   # PACK.part0, .part1, ...
    python3 benchmarks/gpu_pack.py unpack PACK FOLDER                       # there (needs gguf)
    python3 benchmarks/gpu_pack.py check FOLDER     # every judged prompt's tokens are in the pack

What `unpack` builds is the converted model bit for bit, except the embedding rows of tokens no
judged prompt uses, which are zero: the pair judge reads the last hidden state, never the tied
output layer, so its scores on those prompts are the same as on the whole model. A prompt that uses
a token outside the pack would read a zero row; `unpack` writes the kept token ids beside the
folder (FOLDER.kept_tokens.json), and `check` tokenizes every judged prompt there and refuses a
pack that misses one of their tokens. The folder's weights digest is not the converted model's; so
that a judge trained on it can be used with the real model, `unpack` also writes the converted
model's identity beside the folder (FOLDER.pack_source.json, `source_identity`), and
train_pair_judge.py records that identity as the judge's language model, the rebuilt folder's
beside it.

Gemma 3's GGUF names map one to one onto transformers' names; the RMSNorm weights are stored in
the GGUF as 1 + w (transformers subtracts the 1 when it converts), the rest as they are.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import sys
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PACK_FORMAT = "transnli-gpu-pack-1"
EMBEDDING = "model.embed_tokens.weight"
#: GGUF tensor name (after blk.N.) -> transformers name (after model.layers.N.), and whether the
#: GGUF stores it as 1 + w (Gemma's RMSNorm weights)
LAYER_NAMES = {
    "attn_q.weight": ("self_attn.q_proj.weight", False),
    "attn_k.weight": ("self_attn.k_proj.weight", False),
    "attn_v.weight": ("self_attn.v_proj.weight", False),
    "attn_output.weight": ("self_attn.o_proj.weight", False),
    "attn_q_norm.weight": ("self_attn.q_norm.weight", True),
    "attn_k_norm.weight": ("self_attn.k_norm.weight", True),
    "attn_norm.weight": ("input_layernorm.weight", True),
    "post_attention_norm.weight": ("post_attention_layernorm.weight", True),
    "ffn_norm.weight": ("pre_feedforward_layernorm.weight", True),
    "post_ffw_norm.weight": ("post_feedforward_layernorm.weight", True),
    "ffn_gate.weight": ("mlp.gate_proj.weight", False),
    "ffn_up.weight": ("mlp.up_proj.weight", False),
    "ffn_down.weight": ("mlp.down_proj.weight", False),
}
TOP_NAMES = {
    "token_embd.weight": (EMBEDDING, False),
    "output_norm.weight": ("model.norm.weight", True),
}
FOLDER_FILES = ("config.json", "generation_config.json", "tokenizer.json")


def transformers_name(gguf_name: str) -> tuple[str, bool]:
    if gguf_name in TOP_NAMES:
        return TOP_NAMES[gguf_name]
    block, index, rest = gguf_name.split(".", 2)
    if block != "blk" or rest not in LAYER_NAMES:
        raise SystemExit(f"gpu_pack: GGUF tensor {gguf_name}: no transformers name known")
    name, one_plus = LAYER_NAMES[rest]
    return f"model.layers.{index}.{name}", one_plus


def tensor_digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float32).tobytes()).hexdigest()


def dequantised(raw: np.ndarray, kind: int, shape: tuple[int, ...], one_plus: bool) -> np.ndarray:
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    values = dequantize(raw, GGMLQuantizationType(kind)).reshape(shape).astype(np.float32)
    return values - np.float32(1) if one_plus else values


def judged_prompt_tokens(tokenizer, max_tokens: int) -> set[int]:
    """Every token id of every judged candidate's prompt, in every template."""
    from train_pair_judge import judged_rows
    from transnli.generator.pair_judge import TEMPLATES, pair_prompt

    rows = judged_rows()
    ids: set[int] = set(tokenizer.all_special_ids)
    for template in TEMPLATES.values():
        prompts = [pair_prompt(r["hypothesis"], r["modified"], template) for r in rows]
        for lo in range(0, len(prompts), 2048):
            batch = tokenizer(prompts[lo : lo + 2048], truncation=True, max_length=max_tokens)
            for row in batch["input_ids"]:
                ids.update(row)
    return ids


def default_inputs() -> tuple[Path, Path, np.ndarray, dict]:
    """The packaged GGUF, the folder transnli converts it into, the token ids of every judged
    prompt, and the model's identity record."""
    from transnli.common.lm.conversion import packaged_gguf, resolve_model_folder
    from transnli.common.lm.settings import LMSettings, default_cache_dir
    from transnli.generator.pair_judge import PairJudgeTraining, load_tokenizer

    folder, identity = resolve_model_folder(LMSettings())
    gguf_path, _ = packaged_gguf(default_cache_dir())
    tokenizer = load_tokenizer(folder)
    kept = np.array(sorted(judged_prompt_tokens(tokenizer, PairJudgeTraining().max_tokens)))
    return Path(gguf_path), Path(folder), kept, identity


def pack(
    out: Path, part_mb: float, gguf_path: Path, folder: Path, kept: np.ndarray, identity: dict
) -> list[Path]:
    """Write the pack in parts of at most `part_mb` MiB (OUT.part0, ...); exit if a tensor of
    `gguf_path` does not dequantise to the same float32 tensor of `folder`."""
    from gguf import GGUFReader
    from safetensors.numpy import load_file

    converted = load_file(str(folder / "model.safetensors"))
    kept = np.asarray(kept, dtype=np.int64)
    arrays: dict[str, np.ndarray] = {"kept_tokens": kept.astype(np.int64)}
    tensors = []
    for t in GGUFReader(str(gguf_path)).tensors:
        name, one_plus = transformers_name(t.name)
        shape = tuple(int(x) for x in reversed(t.shape))
        raw = np.asarray(t.data)
        if name == EMBEDDING:
            raw = raw[kept]  # one quantised row per token (640 wide: whole blocks a row)
            reference = converted[name][kept]
        else:
            reference = converted[name]
        values = dequantised(
            raw,
            int(t.tensor_type),
            (len(raw), *shape[1:]) if name == EMBEDDING else shape,
            one_plus,
        )
        if not np.array_equal(values, reference):  # the mapping above is wrong for this model
            raise SystemExit(f"gpu_pack: {t.name} does not rebuild {name} of {folder}")
        arrays[f"raw:{name}"] = (
            np.ascontiguousarray(raw).view(np.uint8).reshape(len(raw), -1)
            if name == EMBEDDING
            else np.frombuffer(raw.tobytes(), dtype=np.uint8)
        )
        tensors.append(
            {
                "name": name,
                "gguf": t.name,
                "type": int(t.tensor_type),
                "shape": list(shape),
                "one_plus": one_plus,
                "sha256": tensor_digest(reference),
            }
        )
    if len(tensors) != len(converted):
        raise SystemExit(f"gpu_pack: {len(tensors)} GGUF tensors for {len(converted)} in {folder}")
    for name in FOLDER_FILES:
        data = lzma.compress((Path(folder) / name).read_bytes(), preset=6)
        arrays[f"file:{name}"] = np.frombuffer(data, dtype=np.uint8)
    meta = {
        "format": PACK_FORMAT,
        "language_model": identity,
        "tensors": tensors,
        "kept_tokens": len(kept),
        "vocabulary": int(converted[EMBEDDING].shape[0]),
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    whole = out.with_suffix(".npz.tmp")
    with open(whole, "wb") as fh:
        np.savez(fh, **arrays)
    data = whole.read_bytes()
    whole.unlink()
    size = int(part_mb * 2**20)
    parts = []
    for i, lo in enumerate(range(0, len(data), size)):
        part = out.with_name(f"{out.name}.part{i}")
        part.write_bytes(data[lo : lo + size])
        parts.append(part)
    print(
        json.dumps(
            {
                "parts": [str(p) for p in parts],
                "bytes": len(data),
                "kept_tokens": len(kept),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    )
    return parts


def unpack(pack_path: Path, folder: Path) -> dict:
    import io

    from safetensors.numpy import save_file

    parts = sorted(
        pack_path.parent.glob(pack_path.name + ".part*"),
        key=lambda p: int(p.name.rsplit("part", 1)[1]),
    )
    if not parts:
        raise SystemExit(f"gpu_pack: no {pack_path}.part* files")
    data = b"".join(p.read_bytes() for p in parts)
    try:
        with np.load(io.BytesIO(data)) as npz:
            arrays = {k: npz[k] for k in npz.files}
        meta = json.loads(arrays["meta"].tobytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise SystemExit(f"gpu_pack: {pack_path}: a part is damaged or missing ({exc})") from exc
    if meta.get("format") != PACK_FORMAT:
        raise SystemExit(f"gpu_pack: {pack_path}: not a {PACK_FORMAT} pack")
    kept = arrays["kept_tokens"]
    state = {}
    for t in meta["tensors"]:
        raw = arrays[f"raw:{t['name']}"]
        shape = tuple(t["shape"])
        if t["name"] == EMBEDDING:
            rows = dequantised(raw, t["type"], (len(raw), *shape[1:]), t["one_plus"])
            values = np.zeros(shape, dtype=np.float32)
            values[kept] = rows
            check = rows
        else:
            values = check = dequantised(raw, t["type"], shape, t["one_plus"])
        if tensor_digest(check) != t["sha256"]:
            raise SystemExit(f"gpu_pack: {t['name']} rebuilt differently from the converted model")
        state[t["name"]] = values
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    for name in FOLDER_FILES:
        (folder / name).write_bytes(lzma.decompress(arrays[f"file:{name}"].tobytes()))
    (folder.parent / f"{folder.name}.kept_tokens.json").write_text(json.dumps(kept.tolist()))
    source_file(folder).write_text(json.dumps(meta["language_model"], sort_keys=True))
    out = {
        "folder": str(folder),
        "tensors": len(state),
        "checked": True,
        "kept_tokens": int(len(kept)),
        "language_model": meta["language_model"],
    }
    print(json.dumps(out))
    return out


def source_file(folder: Path) -> Path:
    return folder.parent / f"{folder.name}.pack_source.json"


def source_identity(folder: Path) -> dict | None:
    """The identity of the converted model a folder was rebuilt from by `unpack` (its spec and
    weights digest), or None for any other folder."""
    path = source_file(Path(folder))
    if not path.is_file():
        return None
    identity = json.loads(path.read_text())
    if (
        not isinstance(identity, dict)
        or not identity.get("spec")
        or not identity.get("weights_sha256")
    ):
        raise SystemExit(f"gpu_pack: {path}: not the identity of a converted model")
    return identity


def check(folder: Path) -> dict:
    """Exit unless every judged prompt, tokenized here, uses only tokens the pack kept (the
    tokenizer of this machine's library versions reads them as the packing machine's did)."""
    from transnli.generator.pair_judge import PairJudgeTraining, load_tokenizer

    kept = set(json.loads((folder.parent / f"{folder.name}.kept_tokens.json").read_text()))
    used = judged_prompt_tokens(load_tokenizer(folder), PairJudgeTraining().max_tokens)
    if used - kept:
        raise SystemExit(f"gpu_pack: judged prompts use {len(used - kept)} tokens outside the pack")
    out = {"folder": str(folder), "prompt_tokens": len(used), "all_kept": True}
    print(json.dumps(out))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--part-mb", type=float, default=40.0)
    u = sub.add_parser("unpack")
    u.add_argument("pack", type=Path)
    u.add_argument("folder", type=Path)
    c = sub.add_parser("check")
    c.add_argument("folder", type=Path)
    args = ap.parse_args(argv)
    if args.command == "pack":
        pack(args.out, args.part_mb, *default_inputs())
    elif args.command == "unpack":
        unpack(args.pack, args.folder)
    else:
        check(args.folder)


if __name__ == "__main__":
    main()

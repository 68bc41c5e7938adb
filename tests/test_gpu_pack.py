"""benchmarks/gpu_pack.py: the language model carried to a GPU machine in a few tens of MB is
rebuilt there tensor for tensor, or not at all."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gpu_pack  # noqa: E402

gguf = pytest.importorskip("gguf")
from gguf.quants import dequantize, quantize  # noqa: E402

Q8_0 = gguf.GGMLQuantizationType.Q8_0
F32 = gguf.GGMLQuantizationType.F32
VOCAB, WIDTH = 12, 32


@pytest.fixture()
def model(tmp_path):
    """A two-layer-name Gemma-shaped GGUF and the float32 folder its conversion gives (norms
    stored as 1 + w, the projections quantised, the embedding one Q8_0 block a row)."""
    rng = np.random.default_rng(0)
    gguf_tensors = {
        "token_embd.weight": (rng.normal(size=(VOCAB, WIDTH)).astype(np.float32), Q8_0),
        "blk.0.attn_q.weight": (rng.normal(size=(2 * WIDTH, WIDTH)).astype(np.float32), Q8_0),
        "blk.0.attn_norm.weight": ((1 + rng.normal(size=WIDTH)).astype(np.float32), F32),
        "output_norm.weight": ((1 + rng.normal(size=WIDTH)).astype(np.float32), F32),
    }
    writer = gguf.GGUFWriter(str(tmp_path / "tiny.gguf"), arch="gemma3")
    converted = {}
    for name, (values, kind) in gguf_tensors.items():
        data = quantize(values, kind) if kind == Q8_0 else values
        writer.add_tensor(name, data, raw_dtype=kind)
        hf_name, one_plus = gpu_pack.transformers_name(name)
        rebuilt = dequantize(data, kind).reshape(values.shape).astype(np.float32)
        converted[hf_name] = rebuilt - np.float32(1) if one_plus else rebuilt
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    folder = tmp_path / "converted"
    folder.mkdir()
    from safetensors.numpy import save_file

    save_file(converted, str(folder / "model.safetensors"), metadata={"format": "pt"})
    for name in gpu_pack.FOLDER_FILES:
        (folder / name).write_text(json.dumps({"file": name}))
    return tmp_path / "tiny.gguf", folder, converted


def test_the_pack_rebuilds_every_tensor_and_only_the_kept_embedding_rows(model, tmp_path):
    path, folder, converted = model
    kept = np.array([0, 3, 7])
    identity = {"spec": "tiny", "weights_sha256": "ab" * 32}
    parts = gpu_pack.pack(tmp_path / "pack", 0.001, path, folder, kept, identity)
    assert len(parts) > 1  # split into parts of 1 KiB
    out = gpu_pack.unpack(tmp_path / "pack", tmp_path / "rebuilt")
    from safetensors.numpy import load_file

    rebuilt = load_file(str(tmp_path / "rebuilt" / "model.safetensors"))
    assert set(rebuilt) == set(converted) and out["kept_tokens"] == 3
    for name, values in converted.items():
        if name == gpu_pack.EMBEDDING:
            assert np.array_equal(rebuilt[name][kept], values[kept])
            others = np.setdiff1d(np.arange(VOCAB), kept)
            assert not rebuilt[name][others].any()
        else:
            assert np.array_equal(rebuilt[name], values)
    for name in gpu_pack.FOLDER_FILES:
        assert (tmp_path / "rebuilt" / name).read_bytes() == (folder / name).read_bytes()
    kept_file = tmp_path / "rebuilt.kept_tokens.json"
    assert json.loads(kept_file.read_text()) == [0, 3, 7]
    assert gpu_pack.source_identity(tmp_path / "rebuilt") == identity
    assert gpu_pack.source_identity(folder) is None


def test_a_judge_trained_on_a_rebuilt_folder_records_the_model_it_was_rebuilt_from(tmp_path):
    """So that `generate --judge-model` accepts it with the real model: the converted model's
    spec and digest are the judge's language model, the rebuilt folder's kept beside them."""
    import train_pair_judge

    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    plain = train_pair_judge.language_model_record("x", rebuilt, {"weights_sha256": "cd" * 32})
    assert plain == {"language_model": "x", "language_model_sha256": "cd" * 32}
    source = {"spec": "gemma3-270m", "weights_sha256": "ab" * 32}
    gpu_pack.source_file(rebuilt).write_text(json.dumps(source))
    record = train_pair_judge.language_model_record("x", rebuilt, {"weights_sha256": "cd" * 32})
    assert record["language_model"] == "gemma3-270m"
    assert record["language_model_sha256"] == "ab" * 32
    assert record["rebuilt_language_model"] == {"folder": "x", "weights_sha256": "cd" * 32}
    gpu_pack.source_file(rebuilt).write_text(json.dumps({"spec": "gemma3-270m"}))
    with pytest.raises(SystemExit, match="not the identity of a converted model"):
        train_pair_judge.language_model_record("x", rebuilt, {"weights_sha256": "cd" * 32})


def test_a_folder_the_gguf_does_not_rebuild_is_refused_before_anything_is_written(model, tmp_path):
    path, folder, converted = model
    from safetensors.numpy import save_file

    converted["model.norm.weight"] = converted["model.norm.weight"] + np.float32(1)  # no minus 1
    save_file(converted, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SystemExit, match="output_norm.weight does not rebuild model.norm"):
        gpu_pack.pack(tmp_path / "pack", 1, path, folder, np.array([0]), {})
    assert not list(tmp_path.glob("pack*"))


def test_a_damaged_part_is_refused(model, tmp_path):
    path, folder, _ = model
    (part,) = gpu_pack.pack(tmp_path / "pack", 1, path, folder, np.array([1, 2]), {})
    data = bytearray(part.read_bytes())
    at = data.find(b"\x93NUMPY", data.find(b"raw:model.layers.0.self_attn.q_proj")) + 200
    data[at] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match="a part is damaged or missing"):
        gpu_pack.unpack(tmp_path / "pack", tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt").exists()


def test_a_tensor_this_machine_dequantises_differently_is_refused_naming_it(model, tmp_path):
    """The digests taken where the pack was made are checked where it is opened (another gguf
    or numpy there must give the same float32 tensors)."""
    path, folder, _ = model
    (part,) = gpu_pack.pack(tmp_path / "pack", 1, path, folder, np.array([1, 2]), {})
    with np.load(part) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta["tensors"][1]["sha256"] = "0" * 64
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(part, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(SystemExit, match=f"{meta['tensors'][1]['name']} rebuilt differently"):
        gpu_pack.unpack(tmp_path / "pack", tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt").exists()


def test_a_gguf_name_without_a_transformers_name_is_refused():
    with pytest.raises(SystemExit, match="blk.0.attn_qkv.weight"):
        gpu_pack.transformers_name("blk.0.attn_qkv.weight")

import pytest
from transnli.generator.config import ConfigError, load_preset, preset_names, resolve_config


def test_presets_ship_default_and_paper():
    assert {"default", "paper"} <= set(preset_names())
    paper = resolve_config("paper")
    assert (paper.antonyms, paper.include_aux, paper.grammar, paper.acceptability) == (
        "broad",
        True,
        "languagetool",
        "cola",
    )
    default = resolve_config("default")
    assert (default.grammar, default.acceptability) == ("harper", "pair-judge")
    fast = resolve_config("fast")
    assert (fast.grammar, fast.acceptability) == ("harper", "link-grammar")
    # fast is the default without the language model, and with fixed_phrase and rare_sense, which
    # under the judge only cost good triples (benchmarks/bench_filter_yield.py)
    assert default.filters == [f for f in fast.filters if f not in ("fixed_phrase", "rare_sense")]
    assert {"fixed_phrase", "rare_sense"} <= set(fast.filters)


def test_a_run_that_names_no_preset_takes_transnli_preset_else_default(monkeypatch):
    monkeypatch.setenv("TRANSNLI_PRESET", "paper")
    assert resolve_config().preset == "paper"
    monkeypatch.delenv("TRANSNLI_PRESET")
    assert resolve_config().preset == "default" and resolve_config().acceptability == "pair-judge"


def test_command_line_overrides_win_and_none_means_keep():
    cfg = resolve_config("paper", grammar="none", acceptability=None, pos=["ADJ"])
    assert cfg.grammar == "none" and cfg.acceptability == "cola" and cfg.pos == ["ADJ"]


def test_bad_values_are_refused_with_the_setting_named(tmp_path):
    with pytest.raises(ConfigError, match="antonyms"):
        resolve_config("default", antonyms="wide")
    with pytest.raises(ConfigError, match="pos"):
        resolve_config("default", pos=["PRON"])
    with pytest.raises(ConfigError, match="unknown preset"):
        resolve_config("nope")
    bad = tmp_path / "mine.toml"
    bad.write_text('antonyms = "broad"\ncolour = "blue"\n')
    with pytest.raises(ConfigError, match="colour"):
        load_preset(str(bad))


def test_preset_file_path_is_accepted(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text('antonyms = "broad"\ngrammar = "none"\n')
    cfg = resolve_config(str(mine))
    assert cfg.antonyms == "broad" and cfg.grammar == "none"


def test_a_preset_from_the_environment_is_named_in_its_refusal(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from transnli.cli import main

    monkeypatch.setenv("TRANSNLI_PRESET", "bogus")
    with pytest.raises(ConfigError, match=r"unknown preset 'bogus' \(from \$TRANSNLI_PRESET\)"):
        resolve_config()
    missing = tmp_path / "gone.toml"
    monkeypatch.setenv("TRANSNLI_PRESET", str(missing))
    with pytest.raises(ConfigError, match=r"gone\.toml \(from \$TRANSNLI_PRESET\): no such file"):
        resolve_config()
    # named on the command line: no variable mentioned, still "no such file"
    with pytest.raises(ConfigError, match=r"gone\.toml: no such file") as err:
        resolve_config(str(missing))
    assert "TRANSNLI_PRESET" not in str(err.value)
    monkeypatch.setenv("TRANSNLI_PRESET", "bogus")
    out = tmp_path / "out"
    sample = tmp_path / "s.jsonl"
    sample.write_text('{"premise": "A man sleeps.", "hypothesis": "A man is happy."}\n')
    result = CliRunner().invoke(main, ["generate", str(sample), "--out", str(out)])
    assert result.exit_code != 0 and "$TRANSNLI_PRESET" in result.output
    assert "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if "bogus" in line] == [
        "Error: unknown preset 'bogus' (from $TRANSNLI_PRESET); choose one of default, fast, paper"
        " or pass a .toml file"
    ]

"""Every kind of source podsim.run takes gives the CLI's report: a workload YAML
path (str and pathlib), an HLO module path, HLO text, a workload dict, and
JAX stand-ins (plain classes with JAX's methods: podsim duck-types, it does not
import JAX)."""

import json
import pathlib

import podsim
import pytest

from conftest import REPO, cli

SMALL = "workloads/small.yaml"
HLO = "workloads/examples/transformer_layer_2d.hlo"


def cli_json(*args):
    code, out, err = cli("run", *args, "--format", "json")
    assert code == 0, err
    return out


def test_yaml_path_gives_the_cli_json_and_step_time():
    expected = cli_json(SMALL)
    report = podsim.run(SMALL)
    assert report.to_json() == expected
    assert report.step_time_s == json.loads(expected)["step_time_s"]
    assert repr(report.step_time_s) == repr(json.loads(expected)["step_time_s"])


def test_pathlib_path():
    assert podsim.run(pathlib.Path(SMALL)).to_json() == cli_json(SMALL)


def test_hlo_path_with_run_flags():
    expected = cli_json(HLO, "--hardware", "tpuv4", "--tokens", "128")
    assert podsim.run(HLO, hardware="tpuv4", tokens=128).to_json() == expected


def test_hlo_mesh_as_dict_or_text():
    expected = cli_json(HLO, "--mesh", "x=2,y=4")
    assert podsim.run(HLO, mesh={"x": 2, "y": 4}).to_json() == expected
    assert podsim.run(HLO, mesh="x=2,y=4").to_json() == expected


def test_hlo_text_reports_as_the_file_named_after_its_module(tmp_path):
    # The CLI names an HLO run after the file's stem; Python names HLO text
    # after its HloModule: the same bytes when the file is called that.
    text = (REPO / HLO).read_text()
    named = tmp_path / "transformer_layer_2d.hlo"
    named.write_text(text)
    assert podsim.run(text).to_json() == cli_json(named)


def test_dict_with_the_yaml_structure():
    # The YAML's structure, here as JSON (a YAML subset) read back from the CLI's
    # own workload: same report.
    import yaml_free_workload
    workload = yaml_free_workload.small()
    assert podsim.run(workload).to_json() == cli_json(SMALL)


def test_set_dict_is_the_cli_set():
    expected = cli_json(SMALL, "--set", "model.layers=4", "--set", "training.remat=full",
                        "--set", "hardware.ici.link_bandwidth=1e11")
    got = podsim.run(SMALL, set={"model.layers": 4, "training.remat": "full",
                                 "hardware.ici.link_bandwidth": 1e11})
    assert got.to_json() == expected


def test_hardware_keyword_on_a_workload_sets_its_hardware_key():
    v4 = "workloads/maxtext_22b_v4_128.yaml"
    expected = cli_json(v4, "--set", "hardware=tpuv5p")
    assert podsim.run(v4, hardware="tpuv5p").to_json() == expected


def test_full_fidelity():
    expected = cli_json(SMALL, "--fidelity", "full")
    assert podsim.run(SMALL, fidelity="full").to_json() == expected


class Lowered:
    """jax.stages.Lowered's text methods."""

    def __init__(self, text):
        self.text = text
        self.calls = []

    def as_text(self, dialect=None):
        self.calls.append(("as_text", dialect))
        return self.text if dialect == "hlo" else "module @stablehlo {}"


class XlaComputation:
    def __init__(self, text):
        self.text = text

    def as_hlo_text(self):
        return self.text


class CompiledIr:
    """An object with compiler_ir("hlo") only (as older jax Lowered)."""

    def __init__(self, text):
        self.text = text

    def compiler_ir(self, dialect=None):
        assert dialect == "hlo"
        return XlaComputation(self.text)


class AsTextOnly:
    """jax.stages.Compiled: as_text() takes no dialect and gives optimized HLO."""

    def __init__(self, text):
        self.text = text

    def as_text(self):
        return self.text


@pytest.mark.parametrize("kind", [Lowered, CompiledIr, AsTextOnly])
def test_jax_stand_ins(kind, tmp_path):
    text = (REPO / HLO).read_text()
    named = tmp_path / "transformer_layer_2d.hlo"
    named.write_text(text)
    obj = kind(text)
    assert podsim.run(obj, hardware="tpuv5p").to_json() == cli_json(named, "--hardware", "tpuv5p")
    if kind is Lowered:
        assert obj.calls == [("as_text", "hlo")]


def test_bytes_from_a_stand_in():
    text = (REPO / HLO).read_text()
    assert podsim.run(AsTextOnly(text.encode())).to_json() == podsim.run(text).to_json()


def test_not_a_source_is_a_type_error():
    with pytest.raises(TypeError, match="as_text"):
        podsim.run(42)
    with pytest.raises(TypeError, match="as_text"):
        podsim.run(object())

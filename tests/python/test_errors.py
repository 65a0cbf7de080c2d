"""Errors a user can cause raise podsim.UserError with the CLI's message
(file:line:column, message, hint), and nothing passed in crashes the
interpreter: every bad input below ends in a Python exception."""

import json

import podsim
import pytest

from conftest import cli_error

SMALL = "workloads/small.yaml"
HLO = "workloads/examples/transformer_layer_2d.hlo"


def message(call, *args, **kwargs):
    with pytest.raises(podsim.UserError) as raised:
        call(*args, **kwargs)
    return str(raised.value)


def test_missing_file():
    assert message(podsim.run, "workloads/nope.yaml") == cli_error("run", "workloads/nope.yaml")
    assert message(podsim.run, "nope.hlo") == cli_error("run", "nope.hlo")


def test_unknown_set_key_with_suggestion():
    got = message(podsim.run, SMALL, set={"model.layerz": 4})
    assert got == cli_error("run", SMALL, "--set", "model.layerz=4")
    assert "layers" in got  # did you mean


def test_bad_value_position():
    got = message(podsim.run, SMALL, set={"model.layers": -1})
    assert got == cli_error("run", SMALL, "--set", "model.layers=-1")


def test_bad_hardware_key():
    got = message(podsim.run, SMALL, set={"hardware.ici.link_bandwith": 1e11})
    assert got == cli_error("run", SMALL, "--set", "hardware.ici.link_bandwith=100000000000.0")


def test_hlo_file_syntax_error(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule bad\n\nENTRY %main {\n  %p = f32[4] parameter(0\n}\n")
    assert message(podsim.run, str(bad)) == cli_error("run", bad)


def test_hlo_text_error_names_the_text(tmp_path):
    text = "HloModule bad\n\nENTRY %main {\n  %p = f32[4] parameter(0\n}\n"
    got = message(podsim.run, text)
    bad = tmp_path / "bad.hlo"
    bad.write_text(text)
    assert got == cli_error("run", bad).replace(str(bad), "<hlo text>")
    assert got.startswith("<hlo text>:5:")


def test_dict_error_names_the_dict(tmp_path):
    import yaml_free_workload
    workload = yaml_free_workload.small()
    workload["model"]["layres"] = 2
    got = message(podsim.run, workload)
    as_file = tmp_path / "small.yaml"
    as_file.write_text(json.dumps(workload, indent=2) + "\n")
    assert got == cli_error("run", as_file).replace(str(as_file), "<dict>")
    assert got.startswith("<dict>:")


def test_hlo_flags_on_a_workload():
    assert "applies to an HLO module" in message(podsim.run, SMALL, mesh={"x": 8})
    assert "applies to an HLO module" in message(podsim.run, SMALL, tokens=5)


def test_bad_mesh_flag():
    assert message(podsim.run, HLO, mesh="x=0") == cli_error("run", HLO, "--mesh", "x=0")


def test_simulate_takes_hardware_keys_only():
    compiled = podsim.compile(SMALL)
    assert "hardware.<key>=<value>" in message(compiled.simulate, {"model.layers": 3})
    message(compiled.simulate, {"hardware.ici.no_such_key": 1})
    # The compiled workload still answers after the rejected variants.
    assert compiled.simulate().to_json() == podsim.run(SMALL).to_json()


SWEEP_ERRORS = [
    dict(zip={"model.layers": [1, 2], "model.seq_len": [16, 32, 64]}),
    dict(grid={"model.layers": [1]}, zip={"model.layers": [2]}),
    dict(grid={"model.layers": []}),
    dict(grid={"model.layers": 4}),
    dict(zip=[{}]),
    dict(set={"training.remat": "full"}),
]


@pytest.mark.parametrize("kwargs", SWEEP_ERRORS, ids=range(len(SWEEP_ERRORS)))
def test_sweep_errors_are_the_sweep_parsers(tmp_path, kwargs):
    # The same arguments as a SWEEP.yaml: `podsim sweep` refuses it with the same
    # message and hint; Python names the call instead of the file's line.
    spec = {"base": "../" + SMALL}
    spec.update(kwargs)
    as_file = tmp_path / "sweep.yaml"
    as_file.write_text(json.dumps(spec, indent=2) + "\n")
    expected = cli_error("sweep", as_file)
    got = message(podsim.sweep, SMALL, **kwargs)
    assert got.startswith("podsim.sweep: error: ")
    assert got.split(": error: ", 1)[1] == expected.split(": error: ", 1)[1]


def test_hardware_show_unknown():
    assert message(podsim.hardware.show, "tpuv99") == cli_error("hardware", "show", "tpuv99")


def test_calibrate_missing_measured_file():
    got = message(podsim.calibrate, measured="nope_measured.yaml")
    assert got == cli_error("calibrate", "--measured", "nope_measured.yaml")


def test_bad_trace_window(tmp_path):
    report = podsim.run(SMALL)
    trace = tmp_path / "t.json"
    got = message(report.write_trace, trace, window="b:a")
    assert got == cli_error("run", SMALL, "--trace", trace, "--trace-window", "b:a")
    assert not trace.exists()


BAD_SOURCES = [
    "", " ", "HloModule", "HloModule x\n{", "HloModule x, num_partitions=-3\nENTRY e {}\n",
    b"\xff\xfe\x00HloModule\n", "workloads", "/", "workloads/small.yaml\x00",
    {}, {"model": 5}, {"name": None, "model": {"kind": "nope"}}, {"mesh": {"axes": {"x": 10**30}}},
    {"mesh": {"axes": {"x": -1}}}, {"model": {"file": 3}}, {"a": [1, {"b": None}]},
]


@pytest.mark.parametrize("source", BAD_SOURCES, ids=range(len(BAD_SOURCES)))
def test_no_crash_on_bad_sources(source):
    with pytest.raises((podsim.UserError, TypeError, ValueError)):
        podsim.run(source)


BAD_ARGUMENTS = [
    dict(set={"model.layers": 10**40}), dict(set={"model.layers": "x"}), dict(set={"": 1}),
    dict(set={"model": {"layers": 2}}), dict(set={"hardware.ici.link_bandwidth": -1}),
    dict(set={"hardware.ici.link_bandwidth": float("nan")}), dict(fidelity="medium"),
    dict(set={"mesh.axes.x": 0}), dict(set={"mesh.axes.x": 3}), dict(set=[("a", 1)]),
    dict(hardware="tpuv99"), dict(set={"hardware.core.mxu_count": 0}),
]


@pytest.mark.parametrize("kwargs", BAD_ARGUMENTS, ids=range(len(BAD_ARGUMENTS)))
def test_no_crash_on_bad_arguments(kwargs):
    with pytest.raises((podsim.UserError, TypeError, ValueError)):
        podsim.run(SMALL, **kwargs)


BAD_HLO_ARGUMENTS = [
    dict(mesh="x"), dict(mesh={"x": 3}), dict(mesh="x=2,y=2,z=2,w=2"), dict(tokens=-1),
    dict(tokens=2**70), dict(mode="bogus"), dict(hardware="nope.yaml"),
    dict(set={"model.layers": 2}),
]


@pytest.mark.parametrize("kwargs", BAD_HLO_ARGUMENTS, ids=range(len(BAD_HLO_ARGUMENTS)))
def test_no_crash_on_bad_hlo_arguments(kwargs):
    with pytest.raises((podsim.UserError, TypeError, ValueError, OverflowError)):
        podsim.run(HLO, **kwargs)


@pytest.mark.parametrize("source", ["", "HloModule x\n{", {"model": 5}, "workloads/nope.yaml"])
def test_no_crash_in_partition_and_compile(source):
    with pytest.raises((podsim.UserError, TypeError, ValueError)):
        podsim.partition(source)
    with pytest.raises((podsim.UserError, TypeError, ValueError)):
        podsim.compile(source)

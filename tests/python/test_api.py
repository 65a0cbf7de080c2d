"""The rest of the API against the CLI: Report access and formats, compile once
and simulate many, write_trace, partition, sweep, hardware."""

import json

import podsim
import pytest

from conftest import cli

SMALL = "workloads/small.yaml"
HLO = "workloads/examples/transformer_layer_2d.hlo"


def cli_out(*args):
    code, out, err = cli(*args)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def report():
    return podsim.run(SMALL)


def test_report_access(report):
    data = json.loads(cli_out("run", SMALL, "--format", "json"))
    assert report.to_dict() == data
    assert report["workload"] == "small" and report.workload == "small"
    assert report.devices == data["devices"]
    assert report.memory_breakdown_bytes.parameters == data["memory_breakdown_bytes"]["parameters"]
    memory = report["memory_breakdown_bytes"]
    assert memory["parameters"] == report.memory_breakdown_bytes["parameters"]
    assert list(report) == list(data)
    assert len(report) == len(data)
    with pytest.raises(AttributeError, match="no report field"):
        report.no_such_field


def test_report_formats(report):
    assert report.to_csv() == cli_out("run", SMALL, "--format", "csv")
    table = report.table()
    assert repr(report) == table
    assert "step" in table.lower()
    assert report._repr_html_().startswith("<pre>") and "small" in report._repr_html_()
    timed = json.loads(report.to_json(timings=True))
    assert "compile_wall_s" in timed and "compile_wall_s" not in report.to_dict()
    flat = report.flat()
    assert flat["step_time_s"] == report.step_time_s


def test_simulate_variants_equal_runs_with_set():
    compiled = podsim.compile(SMALL)
    for rate in (5e10, 2e11):
        key = {"hardware.ici.link_bandwidth": rate}
        assert compiled.simulate(key).to_json() == podsim.run(SMALL, set=key).to_json()
    assert compiled.simulate().to_json() == podsim.run(SMALL).to_json()
    slower = compiled.simulate({"hardware.ici.link_bandwidth": 1e9}).step_time_s
    assert slower > compiled.simulate().step_time_s


def test_simulate_fidelity():
    compiled = podsim.compile(SMALL)
    full = compiled.simulate(fidelity="full")
    assert full.to_json() == cli_out("run", SMALL, "--format", "json", "--fidelity", "full")


def test_write_trace_is_the_cli_trace(tmp_path, report):
    mine, theirs = tmp_path / "mine.json", tmp_path / "cli.json"
    report.write_trace(mine, devices="0", window="0:0.2")
    cli_out("run", SMALL, "--format", "json", "--trace", theirs, "--trace-devices", "0",
            "--trace-window", "0:0.2")
    assert mine.read_bytes() == theirs.read_bytes()
    assert json.loads(mine.read_text())


def test_partition_is_the_cli_partition():
    part = podsim.partition(HLO)
    assert part.hlo == cli_out("partition", HLO)
    assert sum(part.collectives.values()) > 0
    assert all(k in ("all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                     "collective-permute") or k.endswith(("-start", "-done"))
               for k in part.collectives)
    assert part.shardings and all(s.startswith("{") for s in part.shardings.values())
    assert "Partitioned" in repr(part)


def test_partition_mesh_propagate_only_and_verify():
    assert podsim.partition(HLO, propagate_only=True).hlo == cli_out(
        "partition", HLO, "--propagate-only")
    assert podsim.partition(HLO, mesh="x=2,y=4").hlo == cli_out(
        "partition", HLO, "--mesh", "x=2,y=4")
    assert podsim.partition(SMALL, set={"model.layers": 1}).hlo == cli_out(
        "partition", SMALL, "--set", "model.layers=1")
    checked = podsim.partition(HLO, verify=True)
    assert checked.verified and checked.verify_ok and checked.verify_lines


def test_sweep_grid_and_zip():
    records = podsim.sweep(SMALL, grid={"hardware.ici.link_bandwidth": [5e10, 2e11],
                                        "model.layers": [1, 2]})
    assert [r["point"] for r in records] == [0, 1, 2, 3]
    assert [(r["hardware.ici.link_bandwidth"], r["model.layers"]) for r in records] == [
        (5e10, 1), (5e10, 2), (2e11, 1), (2e11, 2)]
    for r in records:
        assert r["status"] == "ok" and r["error"] == ""
        sets = {"hardware.ici.link_bandwidth": r["hardware.ici.link_bandwidth"],
                "model.layers": r["model.layers"]}
        assert r["report"].to_json() == podsim.run(SMALL, set=sets).to_json()
        assert r["step_time_s"] == r["report"].step_time_s
    zipped = podsim.sweep(SMALL, zip={"model.layers": [1, 2], "model.seq_len": [16, 32]})
    assert [(r["model.layers"], r["model.seq_len"]) for r in zipped] == [(1, 16), (2, 32)]


def test_sweep_error_rows_and_jobs():
    records = podsim.sweep(SMALL, grid={"mesh.axes.x": [2, 3]}, jobs=2)
    assert [r["status"] for r in records] == ["ok", "error"]
    assert records[1]["report"] is None and records[1]["error"]
    alone = podsim.sweep(SMALL, grid={"mesh.axes.x": [2, 3]})
    assert records[0]["report"].to_json() == alone[0]["report"].to_json()
    assert records[1]["error"] == alone[1]["error"]


def test_hardware_list_and_show():
    names = podsim.hardware.list()
    assert "tpuv3" in names and "tpuv5p" in names
    assert podsim.hardware.table() == cli_out("hardware", "list")
    for name in names:
        assert podsim.hardware.show(name) == cli_out("hardware", "show", name)

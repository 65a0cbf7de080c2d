"""The rest of the API against the CLI: Report access and formats, compile once
and simulate many, write_trace, partition, sweep, hardware."""

import csv
import io
import json

import podsim
import pytest

from conftest import REPO, cli

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


def test_sweep_is_the_cli_sweep(tmp_path):
    # The same sweep as a SWEEP.yaml for `podsim sweep` (the oracle): same points
    # in the same order, same statuses, and every metric of an ok point equal.
    grid = {"hardware.ici.link_bandwidth": [4.1e10, 8.2e10], "mesh.axes.x": [2, 3]}
    zipped = {"model.seq_len": [16, 32], "model.global_batch": [8, 4]}
    spec = tmp_path / "sweep.yaml"
    spec.write_text(json.dumps({"base": str(REPO / SMALL), "set": {"training.remat": "full"},
                                "grid": grid, "zip": zipped}))
    table = tmp_path / "sweep.csv"
    cli("sweep", spec, "-o", table)  # exit 1: the mesh.axes.x=3 points fail
    rows = list(csv.DictReader(table.open()))
    records = podsim.sweep(SMALL, grid=grid, zip=zipped, set={"training.remat": "full"})
    assert len(records) == len(rows) == 8
    keys = list(grid) + list(zipped)
    for record, row in zip(records, rows):
        assert record["point"] == int(row["point"])
        assert [record[k] for k in keys] == [float(row[k]) for k in keys]
        assert record["status"] == row["status"]
        if record["status"] == "ok":
            header, values = csv.reader(io.StringIO(record["report"].to_csv()))
            texts = dict(zip(header, values))
            metrics = [k for k in row if k in texts]
            assert "step_time_s" in metrics
            assert {k: texts[k] for k in metrics} == {k: row[k] for k in metrics}
    assert [r["status"] for r in records] == ["ok", "ok", "error", "error"] * 2


def test_sweep_sources_and_values_as_given():
    # A dict and HLO text are swept like paths; the records hold the caller's
    # values (an int stays an int, a range's items are listed).
    import yaml_free_workload
    records = podsim.sweep(yaml_free_workload.small(), grid={"model.layers": range(1, 3)},
                           zip=[{"hardware.hbm.bandwidth": (1e12, 2e12)}])
    assert [(r["model.layers"], r["hardware.hbm.bandwidth"]) for r in records] == [
        (1, 1e12), (1, 2e12), (2, 1e12), (2, 2e12)]
    for r in records:
        sets = {"model.layers": r["model.layers"],
                "hardware.hbm.bandwidth": r["hardware.hbm.bandwidth"]}
        assert r["report"].to_json() == podsim.run(SMALL, set=sets).to_json()
    text = (REPO / HLO).read_text()
    hlo = podsim.sweep(text, grid={"hardware.hbm.bandwidth": [1e12, 2e12]}, tokens=128)
    for r in hlo:
        assert r["report"].to_json() == podsim.run(
            text, tokens=128, set={"hardware.hbm.bandwidth": r["hardware.hbm.bandwidth"]}).to_json()


def test_hardware_list_and_show():
    names = podsim.hardware.list()
    assert "tpuv3" in names and "tpuv5p" in names
    assert podsim.hardware.table() == cli_out("hardware", "list")
    for name in names:
        assert podsim.hardware.show(name) == cli_out("hardware", "show", name)


def test_full_fidelity_references_and_a_slow_chip_match_the_cli():
    # Full fidelity by symmetry class, its references (--no-symmetry, --every-iteration) and one
    # slow chip (a per-chip override in `set`): each the CLI's report, byte for byte.
    full = podsim.run(SMALL, fidelity="full")
    assert full.to_json() == cli_out("run", SMALL, "--fidelity", "full", "--format", "json")
    assert "symmetry class" in full.simulated_devices
    reference = podsim.run(SMALL, fidelity="full", symmetry=False, every_iteration=True)
    assert reference.to_json() == cli_out("run", SMALL, "--fidelity", "full", "--no-symmetry",
                                          "--every-iteration", "--format", "json")
    assert reference.simulated_devices == "per device: symmetry switched off"
    # small.yaml has no loop: the class run is exact, the same step to the bit.
    assert reference.step_time_s == full.step_time_s
    slow = {"hardware.chips.1.core.clock_hz": 4.7e8}
    report = podsim.compile(SMALL).simulate(slow, fidelity="full")
    assert report.to_json() == cli_out("run", SMALL, "--fidelity", "full", "--set",
                                       "hardware.chips.1.core.clock_hz=4.7e8", "--format", "json")
    assert report.per_device.startswith("chip 1 (devices 2, 3) core.clock_hz 4.7e8")
    assert report.step_time_s > full.step_time_s

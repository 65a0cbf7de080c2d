"""podsim from Python: run, compile once and simulate many, partition, sweep.

The C++ core is the extension module ``podsim._podsim`` (python/podsim_module.cc),
called in process with the GIL released while it compiles or simulates.
docs/python.md describes the API; every function takes the same sources:

* a workload YAML path or an HLO module path (``str`` or ``os.PathLike``),
* HLO text (a ``str`` holding ``HloModule``),
* a workload as a ``dict`` (the YAML's structure),
* a JAX ``Lowered`` / ``Compiled`` object, or anything with
  ``as_text(dialect="hlo")``, ``compiler_ir("hlo")`` or ``as_text()``
  (podsim does not import JAX).

Errors a user can cause raise ``podsim.UserError`` with the CLI's message.
"""

import collections.abc
import html
import json
import os
import shutil
import tempfile

from . import _podsim

__all__ = [
    "UserError", "Report", "Compiled", "Partitioned", "run", "compile", "partition",
    "sweep", "calibrate", "hardware",
]

UserError = _podsim.UserError

_YAML_SUFFIXES = (".yaml", ".yml")


# --- sources -----------------------------------------------------------------

class _Source:
    """A source as a file the core reads: `path`, and `label`, the name error
    messages give it when it is a scratch file (HLO text, a dict, a JAX object)."""

    def __init__(self, source):
        self._scratch = None
        self.label = None
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        if isinstance(source, bytes):
            source = source.decode("utf-8", errors="replace")
        if isinstance(source, str):
            if "HloModule" in source and ("\n" in source or "{" in source):
                self._write_hlo(source, "<hlo text>")
            else:
                self.path = source
        elif isinstance(source, collections.abc.Mapping):
            self._write_workload(source)
        else:
            self._write_hlo(_hlo_text_of(source), "<" + type(source).__name__ + ">")

    @property
    def is_hlo(self):
        return self.label is not None and self.label != "<dict>" or (
            self.label is None and _podsim.is_hlo_module_path(self.path))

    def _scratch_file(self, name):
        self._scratch = tempfile.mkdtemp(prefix="podsim-py-")
        return os.path.join(self._scratch, name)

    def _write_hlo(self, text, label):
        name = "module"
        for line in text.splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "HloModule":
                name = "".join(c for c in words[1].rstrip(",") if c.isalnum() or c in "._-")
                break
        name = name or "module"
        self.path = self._scratch_file(name + ".hlo")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text)
        self.label = label

    def _write_workload(self, workload):
        workload = _plain(workload)
        model = workload.get("model")
        # A model.file in a dict is relative to the current directory.
        if isinstance(model, dict) and isinstance(model.get("file"), str):
            model["file"] = os.path.abspath(model["file"])
        name = str(workload.get("name", "workload"))
        safe = "".join(c for c in name if c.isalnum() or c in "._-") or "workload"
        self.path = self._scratch_file(safe + ".yaml")
        with open(self.path, "w", encoding="utf-8") as f:
            # JSON is YAML; one key per line keeps error lines meaningful.
            json.dump(workload, f, indent=2)
            f.write("\n")
        self.label = "<dict>"

    def relabel(self, error):
        """The error with the scratch file's path replaced by the label."""
        if self.label is None:
            return error
        return UserError(str(error).replace(self.path, self.label))

    def close(self):
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def _plain(value):
    """A mapping / sequence tree as dicts and lists (JSON-writable)."""
    if isinstance(value, collections.abc.Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _hlo_text_of(obj):
    """HLO text from a JAX Lowered / Compiled object, by duck typing."""
    as_text = getattr(obj, "as_text", None)
    if callable(as_text):
        try:
            return _text(as_text(dialect="hlo"))
        except TypeError:  # an as_text() without a dialect argument
            pass
    compiler_ir = getattr(obj, "compiler_ir", None)
    if callable(compiler_ir):
        ir = compiler_ir("hlo")
        for method in ("as_hlo_text", "as_text", "to_string"):
            if callable(getattr(ir, method, None)):
                return _text(getattr(ir, method)())
        return _text(ir)
    if callable(as_text):
        return _text(as_text())
    raise TypeError(
        "podsim takes a workload YAML or HLO path, HLO text, a workload dict, or an object "
        "with as_text(dialect='hlo'), compiler_ir('hlo') or as_text() (a JAX Lowered or "
        "Compiled); got " + type(obj).__name__)


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        value = str(value)
    return value


def _set_words(overrides):
    """{'model.layers': 4} -> ['model.layers=4'], as --set takes them."""
    if overrides is None:
        return []
    if not isinstance(overrides, collections.abc.Mapping):
        raise TypeError("set= takes a dict of --set keys, e.g. {'model.layers': 4}")
    return [f"{key}={_value_text(value)}" for key, value in overrides.items()]


def _value_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(_plain(value))
    return str(value)


def _mesh_text(mesh):
    if mesh is None:
        return ""
    if isinstance(mesh, collections.abc.Mapping):
        return ",".join(f"{k}={v}" for k, v in mesh.items())
    return str(mesh)


def _hlo_flags(source, hardware, mesh, tokens, mode, sets):
    """`run`'s HLO-only flags; for a workload, hardware= is --set hardware=."""
    if source.is_hlo:
        return sets, hardware or "", _mesh_text(mesh), int(tokens or 0), mode or ""
    for given, flag in ((mesh, "mesh"), (tokens, "tokens"), (mode not in (None, "auto"), "mode")):
        if given:
            raise UserError(
                f"{flag}: {flag}= applies to an HLO module, not a workload YAML\n"
                "  hint: a workload sets these in its file: hardware:, mesh.axes, "
                "model.global_batch; or set= them")
    if hardware:
        sets = sets + [f"hardware={hardware}"]
    return sets, "", "", 0, ""


# --- reports -----------------------------------------------------------------

class _Section(collections.abc.Mapping):
    """A nested report object: item and attribute access."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"no report field '{name}'; fields: {', '.join(self._data)}") \
                from None

    def __repr__(self):
        return repr(self._data)

    def to_dict(self):
        return json.loads(json.dumps(self._data))


def _wrap(value):
    return _Section(value) if isinstance(value, dict) else value


class Report(_Section):
    """One run's report: the fields of `podsim run --format json`."""

    def __init__(self, result, trace):  # noqa: super().__init__: _data is read when first used
        self._result = result
        self._trace = trace
        self._parsed = None

    @property
    def _data(self):
        if self._parsed is None:
            self._parsed = json.loads(self._result.format("json", False))
        return self._parsed

    def to_json(self, timings=False):
        """The bytes `podsim run --format json` prints (with --timings: timings=True)."""
        return self._result.format("json", timings)

    def to_csv(self, timings=False):
        return self._result.format("csv", timings)

    def to_markdown(self):
        return self._result.format("markdown", False)

    def table(self):
        """The summary table `podsim run` prints."""
        return self._result.format("table", False)

    def __repr__(self):
        return self.table()

    def _repr_html_(self):
        return "<pre>" + html.escape(self.table()) + "</pre>"

    def flat(self):
        """The report as flat key -> value (the CSV row; nested keys dotted)."""
        import csv
        import io
        rows = list(csv.reader(io.StringIO(self.to_csv())))
        return {k: _number(v) for k, v in zip(rows[0], rows[1])}

    def write_trace(self, path, devices=None, window=None, limit=None):
        """Writes the run's Chrome / Perfetto trace as `run --trace` does: simulates
        again with the trace recorded (devices "0,5" | "sample:4" | "all", window
        "A:B" in ms of the step, limit "20MB" | "0")."""
        self._trace(os.fspath(path), _trace_text(devices), _trace_text(window),
                    _trace_text(limit))


def _trace_text(value):
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and all(isinstance(v, float) for v in value):
            return f"{value[0]}:{value[1]}"
        return ",".join(str(v) for v in value)
    return str(value)


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class _Formatted:
    """A report's formats computed elsewhere (a sweep's worker process)."""

    def __init__(self, texts):
        self._texts = texts

    def format(self, name, wall_times):
        return self._texts[(name, bool(wall_times))]


def _all_formats(result):
    return {(name, timings): result.format(name, timings)
            for name in ("json", "csv", "table", "markdown") for timings in (False, True)}


# --- compile, simulate, run ----------------------------------------------------

class Compiled:
    """One compile of a source; simulate() runs hardware variants of it without
    compiling again (what `podsim run --serve` does)."""

    def __init__(self, source, *, set=None, hardware=None, fidelity="fast", mesh=None,
                 mode=None, tokens=None):
        self._build(source, _set_words(set), hardware=hardware, fidelity=fidelity, mesh=mesh,
                    mode=mode, tokens=tokens)

    @classmethod
    def _of_words(cls, source, words, fidelity, kwargs):
        """A Compiled from --set words ("key=value"), as a sweep's compile group has them."""
        self = cls.__new__(cls)
        self._build(source, list(words), fidelity=fidelity, **kwargs)
        return self

    def _build(self, source, words, *, hardware=None, fidelity="fast", mesh=None, mode=None,
               tokens=None):
        src = _Source(source)
        try:
            sets, hw, mesh_text, tokens_n, mode_text = _hlo_flags(
                src, hardware, mesh, tokens, mode, words)
            self._fidelity = fidelity
            self._core = _podsim.Compiled(src.path, sets, fidelity, hw, mesh_text, tokens_n,
                                          mode_text)
        except UserError as e:
            raise src.relabel(e) from None
        finally:
            src.close()

    @property
    def compile_wall_s(self):
        return self._core.compile_wall_s

    def simulate(self, set=None, *, fidelity=None, every_iteration=False, symmetry=True):
        """A Report for the compiled workload on its hardware with `set`'s
        hardware.* keys changed, e.g. {'hardware.ici.link_bandwidth': 2e11}.
        every_iteration=True and symmetry=False are `run --every-iteration` and
        `--no-symmetry`: full fidelity's references (every loop iteration, every device)."""
        return self._simulate_words(_set_words(set), fidelity or self._fidelity,
                                    every_iteration=every_iteration, symmetry=symmetry)

    def _simulate_words(self, words, fidelity, *, every_iteration=False, symmetry=True):
        words = list(words)
        result = self._core.simulate(words, fidelity, bool(every_iteration), bool(symmetry))
        core = self._core

        def trace(path, devices, window, limit):
            core.write_trace(words, fidelity, path, devices, window, limit)

        return Report(result, trace)


def compile(source, *, set=None, hardware=None, fidelity="fast", mesh=None, mode=None,
            tokens=None):
    """Compiles `source` once; Compiled.simulate(set=...) for each hardware variant."""
    return Compiled(source, set=set, hardware=hardware, fidelity=fidelity, mesh=mesh, mode=mode,
                    tokens=tokens)


def run(source, *, hardware=None, set=None, fidelity="fast", mesh=None, mode=None, tokens=None,
        every_iteration=False, symmetry=True):
    """`podsim run`: compile and simulate `source`, a Report.

    hardware, mesh ({'x': 8} or "x=8"), mode and tokens are `run`'s flags for an
    HLO module; for a workload, hardware= sets its `hardware:`. `set` is a dict
    of the keys --set takes (per-chip overrides too: {'hardware.chips.3.core.clock_hz':
    4.7e8}). every_iteration and symmetry as Compiled.simulate."""
    return compile(source, set=set, hardware=hardware, fidelity=fidelity, mesh=mesh, mode=mode,
                   tokens=tokens).simulate(every_iteration=every_iteration, symmetry=symmetry)


# --- partition -------------------------------------------------------------------

class Partitioned:
    """`podsim partition`'s result: the per-device program (`hlo`, its text), the
    shardings of its entry instructions, the collectives by kind."""

    def __init__(self, out):
        self.hlo = out["hlo"]
        self.shardings = dict(out["shardings"])
        self.collectives = dict(out["collectives"])
        self.notes = list(out["notes"])
        self.verified = out["verified"]
        self.verify_ok = out["verify_ok"]
        self.verify_lines = list(out["verify_lines"])

    def __repr__(self):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.collectives.items())) or "none"
        return (f"<Partitioned: {len(self.hlo.splitlines())} lines of HLO, "
                f"{len(self.shardings)} entry shardings, collectives: {counts}>")


def partition(source, *, mesh=None, propagate_only=False, verify=False, set=None, mode=None):
    """`podsim partition`: propagate shardings and partition into one SPMD program."""
    src = _Source(source)
    try:
        return Partitioned(_podsim.partition(src.path, _set_words(set), _mesh_text(mesh),
                                             bool(propagate_only), bool(verify), mode or ""))
    except UserError as e:
        raise src.relabel(e) from None
    finally:
        src.close()


# --- sweep -------------------------------------------------------------------------

def _sweep_spec(grid, zip_, fixed):
    """podsim.sweep's arguments as sweep-spec text (studies/sweep_spec.h; JSON is
    YAML), values written as --set writes them, and [(key, [the caller's
    values])] in the order written, the order of the spec's swept keys.
    Validation is the C++ parser's: a shape it refuses (a group of unequal
    lists, a key swept twice, nothing swept) is passed on as given."""
    columns = []

    def column(key, values):
        if isinstance(values, (str, bytes, collections.abc.Mapping)) or not isinstance(
                values, collections.abc.Iterable):
            return _value_text(values)  # not a list of values: the parser says so
        columns.append((str(key), list(values)))
        return [_value_text(v) for v in columns[-1][1]]

    def group(keys_to_values):
        if not isinstance(keys_to_values, collections.abc.Mapping):
            return keys_to_values
        return {str(k): column(k, v) for k, v in keys_to_values.items()}

    if fixed is not None and not isinstance(fixed, collections.abc.Mapping):
        raise TypeError("set= takes a dict of --set keys, e.g. {'model.layers': 4}")
    # Python keeps the source; the spec's base is a placeholder.
    spec = {"name": "podsim.sweep", "base": "<source>"}
    if fixed:
        spec["set"] = {str(k): _value_text(v) for k, v in fixed.items()}
    if grid is not None and not (isinstance(grid, collections.abc.Mapping) and not grid):
        spec["grid"] = group(grid)
    # zip: one group (a dict) or a list of them; None, {} and [] sweep nothing.
    if isinstance(zip_, collections.abc.Mapping):
        if zip_:
            spec["zip"] = group(zip_)
    elif isinstance(zip_, (list, tuple)):
        if zip_:
            spec["zip"] = [group(g) for g in zip_]
    elif zip_ is not None:
        spec["zip"] = zip_
    return json.dumps(spec, indent=2, default=str) + "\n", columns


builtins_zip = zip  # sweep's zip= parameter hides the builtin


def _sweep_group(source, compile_words, variants, fidelity, kwargs):
    """Compiles once and simulates each point's hardware variant (its
    hardware.* --set words): [(ok, report or error)]."""
    out = []
    try:
        compiled = Compiled._of_words(source, compile_words, fidelity, kwargs)
    except UserError as e:
        return [(False, str(e))] * len(variants)
    for words in variants:
        try:
            out.append((True, compiled._simulate_words(words, fidelity)))
        except UserError as e:
            out.append((False, str(e)))
    return out


def _sweep_group_in_child(args):
    return [(ok, _all_formats(r._result) if ok else r) for ok, r in _sweep_group(*args)]


def sweep(base, *, grid=None, zip=None, set=None, jobs=1, fidelity="fast", **kwargs):
    """`podsim sweep` without a file: the points of `grid` (a cartesian product,
    first key slowest) and `zip` (keys advanced together: a dict of equally long
    lists, or a list of such dicts) over `base`, each with the fixed `set`.
    The C++ core expands, checks and groups the points as `podsim sweep` does
    (points that differ in hardware.* keys only share one compile). Returns
    one record (a dict) per point, in point order: point, the swept keys (the
    values as given), status ("ok" | "error"), error, the report's flat
    fields, and `report` (the Report, None on error); a DataFrame takes the
    list. A sweep the parser refuses raises UserError.

    jobs > 1 runs compile groups in that many forked worker processes (the
    SystemC kernel is one per process)."""
    text, columns = _sweep_spec(grid, zip, set)
    plan = _podsim.sweep_plan(text, "podsim.sweep")
    points = [[(key, values[row]) for (key, values), row in builtins_zip(columns, rows)]
              for rows in plan["rows"]]
    groups = plan["groups"]

    results = [None] * len(points)
    if jobs > 1 and len(groups) > 1:
        import multiprocessing
        src = _Source(base)  # a file the workers read
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(groups))) as pool:
                answers = pool.map(_sweep_group_in_child, [
                    (src.path, compile_words, variants, fidelity, kwargs)
                    for compile_words, _, variants in groups])
        finally:
            src.close()
        for (compile_words, members, variants), answer in builtins_zip(groups, answers):
            for index, words, (ok, value) in builtins_zip(members, variants, answer):
                if ok:
                    value = Report(_Formatted(value), _detached_trace(
                        base, compile_words, words, fidelity, kwargs))
                results[index] = (ok, value)
    else:
        for compile_words, members, variants in groups:
            answer = _sweep_group(base, compile_words, variants, fidelity, kwargs)
            for index, outcome in builtins_zip(members, answer):
                results[index] = outcome

    records = []
    for index, (values, (ok, value)) in enumerate(builtins_zip(points, results)):
        record = {"point": index}
        record.update(values)
        record["status"] = "ok" if ok else "error"
        record["error"] = "" if ok else value.replace("\n", " ")
        if ok:
            record.update(value.flat())
        record["report"] = value if ok else None
        records.append(record)
    return records


def _detached_trace(base, compile_words, hardware_words, fidelity, kwargs):
    def trace(path, devices, window, limit):
        compiled = Compiled._of_words(base, compile_words, fidelity, kwargs)
        compiled._core.write_trace(list(hardware_words), fidelity, path, devices, window, limit)
    return trace


# --- calibrate, hardware ---------------------------------------------------------------

def _cli_binary():
    """The podsim executable for the studies that run children: $PODSIM_BINARY,
    the one this module was built beside, or `podsim` on PATH."""
    for candidate in (os.environ.get("PODSIM_BINARY"), _podsim.built_cli,
                      shutil.which("podsim")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise UserError("calibrate runs `podsim run` children and found no podsim executable\n"
                    "  hint: set PODSIM_BINARY to the podsim CLI (build/cli/podsim)")


def calibrate(*, measured=None, jobs=1, fit=False, max_evaluations=400):
    """`podsim calibrate`: predicted against measured throughput, as the markdown
    page the CLI prints. Its runs are `podsim run` children, as the CLI's."""
    scratch = tempfile.mkdtemp(prefix="podsim-py-")
    try:
        output = os.path.join(scratch, "calibration.md")
        _podsim.calibrate(os.fspath(measured) if measured else "", output, int(jobs),
                          _cli_binary(), bool(fit), int(max_evaluations))
        with open(output, encoding="utf-8") as f:
            return f.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class _Hardware:
    """podsim.hardware.list() / .show(name) / .table(): `podsim hardware list|show`."""

    @staticmethod
    def list():
        """The shipped preset names."""
        return list(_podsim.preset_names())

    @staticmethod
    def show(name):
        """`podsim hardware show NAME`'s text (a preset name or hardware YAML path)."""
        return _podsim.describe_hardware(os.fspath(name))

    @staticmethod
    def table():
        """`podsim hardware list`'s text."""
        return _podsim.describe_presets()


hardware = _Hardware()

//! `lasthop._native`: the private Python binding of the simulator and the emulator (PyO3).
//!
//! No model logic lives here: each function converts arguments, calls `lasthop_sim`, and
//! converts the answer back. The Python package (`python/lasthop`) is the only intended caller;
//! its typed view of this module is `python/lasthop/_native.pyi`.
#![forbid(unsafe_code)]

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Run `work` with the GIL released, handing it a progress callback that re-acquires the GIL
/// for each call to the Python `progress`. If `progress` raises, it is not called again and
/// its exception is returned once `work` ends.
fn without_gil<T: Send>(
    py: Python<'_>,
    progress: Option<PyObject>,
    work: impl FnOnce(&mut dyn FnMut(f64)) -> T + Send,
) -> PyResult<T> {
    let mut callback_error: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut on_progress = |fraction: f64| {
            if callback_error.is_some() {
                return;
            }
            if let Some(cb) = progress.as_ref() {
                Python::with_gil(|py| {
                    if let Err(e) = cb.call1(py, (fraction,)) {
                        callback_error = Some(e);
                    }
                });
            }
        };
        work(&mut on_progress)
    });
    match callback_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Run one simulation of a normalized spec (JSON, docs/spec.md) with `seed`.
///
/// Returns the `data` JSON of docs/results.md. `progress`, if given, is called with the fraction
/// of simulated time done (at most ~200 times). The GIL is released while the simulator runs and
/// re-acquired for each progress call. If `progress` raises, it is not called again and its
/// exception is raised once the run ends. A simulator error raises `RuntimeError`.
#[pyfunction]
#[pyo3(signature = (spec_json, seed, progress=None))]
fn run(py: Python<'_>, spec_json: String, seed: u64, progress: Option<PyObject>) -> PyResult<String> {
    let result = without_gil(py, progress, |on_progress| lasthop_sim::run_json(&spec_json, seed, on_progress))?;
    result.map_err(PyRuntimeError::new_err)
}

/// Each station's PHY data rate (bit/s) at its MCS and streams, from a normalized spec (JSON).
/// A spec that does not parse raises `ValueError`.
#[pyfunction]
fn station_rates(spec_json: &str) -> PyResult<Vec<u64>> {
    lasthop_sim::station_rates_json(spec_json).map_err(PyValueError::new_err)
}

/// What [`run_capture`] returns: data JSON, pcap bytes, frame records JSON, (records kept,
/// truncated at the limit).
type CaptureOut = (String, PyObject, Option<String>, (usize, bool));

/// Run one simulation like [`run`] and capture the frames of node `pcap` ("ap" or a station
/// index as a string).
///
/// Returns `(data_json, pcap_bytes, records_json, (records, truncated))`: the same `data` JSON
/// as `run`, the pcap file (at most `limit` records), only if `records` is true (else None) the
/// per-PPDU frame records as JSON (see `lasthop_sim::capture::Capture::to_json`), and how many
/// records the capture kept and whether it stopped at the limit before the run ended. A bad
/// node raises `ValueError`, a simulator error `RuntimeError`.
#[pyfunction]
#[pyo3(signature = (spec_json, seed, pcap, progress=None, limit=100_000, records=false))]
fn run_capture(
    py: Python<'_>,
    spec_json: String,
    seed: u64,
    pcap: String,
    progress: Option<PyObject>,
    limit: usize,
    records: bool,
) -> PyResult<CaptureOut> {
    let node = match lasthop_sim::Node::parse(&pcap) {
        Some(n) => n,
        None => return Err(PyValueError::new_err(format!("pcap node = {pcap:?}: \"ap\" or a station index"))),
    };
    let req = lasthop_sim::CaptureRequest { node, limit };
    let result = without_gil(py, progress, |on_progress| {
        lasthop_sim::run_json_with_capture(&spec_json, seed, on_progress, Some(req)).map(|(data, cap)| {
            let cap = cap.expect("capture requested");
            let json = records.then(|| cap.to_json());
            (data, lasthop_sim::pcap::write(&cap), json, (cap.records, cap.truncated))
        })
    })?;
    let (data, bytes, json, kept) = result.map_err(PyRuntimeError::new_err)?;
    Ok((data, PyBytes::new(py, &bytes).into(), json, kept))
}

/// Check the 802.11-specific rules of a normalized spec (JSON).
///
/// Returns a list of `(key path, value, what is allowed)`; empty when the spec is valid.
/// Paths use normalized station/flow indices, e.g. `stations[3].mcs`.
#[pyfunction]
fn validate(py: Python<'_>, spec_json: String) -> Vec<(String, String, String)> {
    py.allow_threads(|| lasthop_sim::validate_json(&spec_json))
}

/// The canonical text (Python's `json.dumps(sort_keys=True, separators=(",", ":"),
/// ensure_ascii=True)`) of a document of None, bool, int, float, str, list and dict with str
/// keys, as the simulator writes its results (`lasthop_sim::canonical`). Floats are taken as
/// the exact doubles Python holds. Anything else (a NaN or infinity too) raises ValueError.
#[pyfunction]
fn canonical_json(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(lasthop_sim::canonical::to_string(&to_value(obj)?))
}

fn to_value(o: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
    use serde_json::Value;
    if o.is_none() {
        Ok(Value::Null)
    } else if let Ok(b) = o.downcast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if o.is_instance_of::<PyInt>() {
        if let Ok(u) = o.extract::<u64>() {
            Ok(Value::from(u))
        } else {
            o.extract::<i64>().map(Value::from).map_err(|_| PyValueError::new_err("an integer outside i64/u64"))
        }
    } else if let Ok(f) = o.downcast::<PyFloat>() {
        serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("a float that is not finite"))
    } else if let Ok(s) = o.downcast::<PyString>() {
        Ok(Value::String(s.to_str()?.to_owned()))
    } else if let Ok(l) = o.downcast::<PyList>() {
        l.iter().map(|x| to_value(&x)).collect::<PyResult<Vec<_>>>().map(Value::Array)
    } else if let Ok(d) = o.downcast::<PyDict>() {
        let mut m = serde_json::Map::new();
        for (k, v) in d.iter() {
            let k = k.downcast::<PyString>().map_err(|_| PyValueError::new_err("a dict key that is not a str"))?;
            m.insert(k.to_str()?.to_owned(), to_value(&v)?);
        }
        Ok(Value::Object(m))
    } else {
        Err(PyValueError::new_err(format!("a {} (not JSON)", o.get_type().name()?)))
    }
}

/// Validate and normalize a spec document (docs/spec.md): `doc` is the document as Python's
/// `tomllib` returns it (dicts, lists, str, int, float, bool; anything else is kept as its
/// `repr` for error messages).
///
/// Returns `(normalized, [])` with `normalized = (canonical JSON, station_group, flow_table,
/// (name, seed, duration_ns))`,
/// or `(None, [(key path, value, what is allowed), ...])`: every problem found, the first as
/// the validator meets it (`spec_in::normalize_all`). With `rules`, a document that reads is
/// then held to the simulator's rules across keys, with the TOML tables' indices
/// (`spec_in::normalize::normalize_checked`).
#[pyfunction]
#[pyo3(signature = (doc, default_name="scenario", rules=false))]
fn normalize(doc: &Bound<'_, PyAny>, default_name: &str, rules: bool) -> PyResult<NormalizeOut> {
    Ok(normalize_raw(&to_raw(doc)?, default_name, rules))
}

/// [`normalize`] of a spec's TOML text, read by the simulator's TOML reader
/// (`spec_in::parse_toml`, the standalone tools' reader) instead of `tomllib`: `None` when that
/// reader refuses the text (the caller then reads it with `tomllib`, whose message it reports).
/// `lasthop run` and `load_spec` take this path, so a run does not load `tomllib`.
#[pyfunction]
#[pyo3(signature = (text, default_name="scenario", rules=false))]
fn normalize_text(text: &str, default_name: &str, rules: bool) -> Option<NormalizeOut> {
    let raw = lasthop_sim::spec_in::parse_toml(text).ok()?;
    Some(normalize_raw(&raw, default_name, rules))
}

fn normalize_raw(raw: &lasthop_sim::spec_in::Raw, default_name: &str, rules: bool) -> NormalizeOut {
    use lasthop_sim::spec_in::{normalize::normalize_checked, normalize_all};
    let read = if rules { normalize_checked } else { normalize_all };
    match read(raw, default_name) {
        Ok(n) => (Some((n.json, n.station_group, n.flow_table, (n.name, n.seed, n.duration_ns))), Vec::new()),
        Err(es) => (None, es.into_iter().map(|e| (e.path, e.value, e.allowed)).collect()),
    }
}

/// One key read: (key path, default JSON, schema JSON, allowed).
type SpecRead = (String, Option<String>, Option<String>, String);

type NormalizeOut = (Option<(String, Vec<usize>, Vec<usize>, (String, u64, u64))>, Vec<(String, String, String)>);

/// Every key read [`normalize`] makes on `doc`: `(key path, default, schema, allowed)` with the
/// default as JSON (None: required) and the JSON Schema fragment of the accepted TOML values
/// as JSON (None: the reader checks the value by hand). `lasthop schema` builds on these.
#[pyfunction]
fn spec_reads(doc: &Bound<'_, PyAny>) -> PyResult<Vec<SpecRead>> {
    use lasthop_sim::spec_in::{record, Default};
    let raw = to_raw(doc)?;
    let (_, recs) = record(|| lasthop_sim::spec_in::normalize(&raw, "scenario"));
    Ok(recs
        .into_iter()
        .map(|r| {
            let d = match r.default {
                Default::Required => None,
                Default::Null => Some("null".to_owned()),
                Default::Is(v) => Some(v.to_string()),
            };
            (r.path, d, r.schema.map(|s| s.to_string()), r.allowed)
        })
        .collect())
}

/// The keys each spec table allows: `[(section, [key, ...])]`, section "" the top level.
#[pyfunction]
fn spec_sections() -> Vec<(&'static str, Vec<&'static str>)> {
    lasthop_sim::spec_in::SECTIONS.iter().map(|(s, keys)| (*s, keys.to_vec())).collect()
}

/// The standards and the bands each allows: `[(standard, [band, ...])]`.
#[pyfunction]
fn spec_standards() -> Vec<(&'static str, Vec<String>)> {
    lasthop_sim::spec_in::normalize::standards()
}

/// The spec's value lists by key, each from its one name table: `[(key, [name, ...])]`, e.g.
/// `("ap.qdisc", ["fifo", ...])`.
#[pyfunction]
fn spec_names() -> Vec<(&'static str, Vec<String>)> {
    lasthop_sim::spec::names::tables()
}

/// A value as spec errors show it (TOML-like, clipped to one short line).
#[pyfunction]
fn show_value(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(lasthop_sim::spec_in::raw::show_value(&to_raw(v)?))
}

/// What a spec error says of an unknown key: the closest allowed key, or the allowed keys.
#[pyfunction]
fn unknown_key(key: &str, allowed: Vec<String>) -> String {
    let a: Vec<&str> = allowed.iter().map(String::as_str).collect();
    lasthop_sim::spec_in::raw::unknown_key(key, &a)
}

/// A duration string (`"102.4ms"`) in integer nanoseconds; ValueError says what is allowed.
#[pyfunction]
fn parse_duration(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    lasthop_sim::spec_in::raw::parse_duration(&to_raw(v)?).map_err(PyValueError::new_err)
}

/// A rate string (`"1.5Gbps"`) in integer bit/s; ValueError says what is allowed.
#[pyfunction]
fn parse_rate(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    lasthop_sim::spec_in::raw::parse_rate(&to_raw(v)?).map_err(PyValueError::new_err)
}

/// Nanoseconds as the shortest exact duration string (5_484_000 -> `"5.484ms"`).
#[pyfunction]
fn format_duration(ns: u64) -> String {
    lasthop_sim::spec_in::raw::format_duration(ns)
}

/// Bit/s as the shortest exact rate string (1_500_000_000 -> `"1.5Gbps"`).
#[pyfunction]
fn format_rate(bps: u64) -> String {
    lasthop_sim::spec_in::raw::format_rate(bps)
}

/// A web page: name, (html, css, js, image, other, total kB), object bytes.
type Page = (&'static str, (u32, u32, u32, u32, u32, u64), Vec<u64>);

/// The web pages of the QUIC page loads (`spec_in::pages`): `[(name, (html, css, js, image,
/// other, total kB), [object bytes, ...])]`.
#[pyfunction]
fn spec_pages() -> Vec<Page> {
    use lasthop_sim::spec_in::pages;
    pages::TABLE_II
        .iter()
        .map(|(name, c, kb)| {
            let objects = pages::objects(name).unwrap_or_default().into_iter().map(|o| o.1).collect();
            (*name, (c[0], c[1], c[2], c[3], c[4], *kb), objects)
        })
        .collect()
}

fn to_raw(o: &Bound<'_, PyAny>) -> PyResult<lasthop_sim::spec_in::Raw> {
    use lasthop_sim::spec_in::Raw;
    use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
    Ok(if let Ok(b) = o.downcast::<PyBool>() {
        Raw::Bool(b.is_true())
    } else if o.is_instance_of::<PyInt>() {
        match o.extract::<i128>() {
            Ok(i) => Raw::Int(i),
            Err(_) => {
                let bits: u32 = o.call_method0("bit_length")?.extract()?;
                // str() of an integer of more than 4300 digits raises; such a value is only
                // shown by its size.
                let text = o.str().map(|s| s.to_string()).unwrap_or_default();
                Raw::BigInt { text, bits }
            }
        }
    } else if let Ok(f) = o.downcast::<PyFloat>() {
        Raw::Float(f.value())
    } else if let Ok(s) = o.downcast::<PyString>() {
        Raw::Str(s.to_str()?.to_owned())
    } else if let Ok(l) = o.downcast::<PyList>() {
        Raw::List(l.iter().map(|x| to_raw(&x)).collect::<PyResult<Vec<_>>>()?)
    } else if let Ok(d) = o.downcast::<PyDict>() {
        let mut t = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let k = match k.downcast::<PyString>() {
                Ok(s) => s.to_str()?.to_owned(),
                Err(_) => k.str()?.to_string(),
            };
            t.push((k, to_raw(&v)?));
        }
        Raw::Table(t)
    } else {
        Raw::Other(o.repr()?.to_string())
    })
}

/// The code version: crate version `+` short git hash (`-dirty` if the tree had changes), or
/// `+unknown` when built without git.
#[pyfunction]
fn version() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), env!("LASTHOP_GIT"))
}

/// How this module was optimized (`"profile-guided"`, `"release"` or `"debug"`): the one
/// definition is `lasthop_live::tools::run::build_kind`, which the standalone binary's `version`
/// prints too.
#[pyfunction]
fn build_kind() -> &'static str {
    lasthop_live::tools::run::build_kind()
}

/// `lasthop emu up|run`: build the namespace topology of a normalized spec (JSON), run the cell
/// in real time until SIGINT/SIGTERM, the end of `command`, or `duration_s`; tear it down.
///
/// Returns `(data_json, emu_json, exit_code)`: the `data` of a result file, the emulator's own
/// figures, and the command's exit code (None without a command). A problem found before
/// anything was built (spec, name, not root, already up) raises `ValueError`; a failure while
/// running raises `RuntimeError` (the topology is removed either way).
#[pyfunction]
#[pyo3(signature = (spec_json, name, seed, stats_every_s, pcap=None, duration_s=None, command=None, node=None, spin_ns=None, realtime=None, io=None, place_programs=true))]
#[allow(clippy::too_many_arguments)]
fn emu_up(
    py: Python<'_>,
    spec_json: String,
    name: String,
    seed: u64,
    stats_every_s: f64,
    pcap: Option<String>,
    duration_s: Option<f64>,
    command: Option<Vec<String>>,
    node: Option<String>,
    spin_ns: Option<f64>,
    realtime: Option<i32>,
    io: Option<&str>,
    place_programs: bool,
) -> PyResult<(String, String, Option<i32>)> {
    use lasthop_live::emu::{up, Io, Options, UpError, UpRequest};
    use std::time::Duration;
    let opts = Options {
        seed,
        stats_every: (stats_every_s > 0.0).then(|| Duration::from_secs_f64(stats_every_s)),
        pcap: pcap.map(Into::into),
        run_for: duration_s.map(Duration::from_secs_f64),
        spin: spin_ns.map(|ns| Duration::from_nanos(ns.max(0.0) as u64)),
        cpu: lasthop_live::emu::model_cpu(),
        realtime,
        io: io.map_or(Ok(Io::default()), Io::parse).map_err(pyo3::exceptions::PyValueError::new_err)?,
        place_programs,
    };
    let req = UpRequest { spec_json: &spec_json, name: &name, opts, command: command.map(|c| (c, node)) };
    let out = py.allow_threads(|| up(req));
    match out {
        Ok(o) => {
            let stats = serde_json::to_string(&o.stats).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            Ok((o.data.to_string(), stats, o.exit_code))
        }
        Err(UpError::User(e)) => Err(PyValueError::new_err(e)),
        Err(UpError::Internal(e)) => Err(PyRuntimeError::new_err(e)),
    }
}

/// `lasthop emu down`: stop emulator `name` and remove its namespaces (also after a crash).
/// Returns a one-line summary; raises `ValueError` on a bad name or when not root.
#[pyfunction]
fn emu_down(py: Python<'_>, name: String) -> PyResult<String> {
    py.allow_threads(|| lasthop_live::netns::down(&name)).map_err(PyValueError::new_err)
}

/// The network namespace of `node` in the running emulator `name`; `ValueError` if it is not
/// up or has no such node.
#[pyfunction]
fn emu_netns(name: String, node: String) -> PyResult<String> {
    lasthop_live::netns::netns_for(&name, &node).map_err(PyValueError::new_err)
}

/// The CPUs programs in the emulator's namespaces run on: all but the model thread's (None on
/// one CPU).
#[pyfunction]
fn emu_program_cpus() -> Option<Vec<usize>> {
    lasthop_live::emu::program_cpus()
}

/// A live tool (`lasthop wqm ...`): `argv` is the tool's name and its arguments, exactly as
/// the standalone `lasthop-live` binary takes them. Returns the exit code; the tool prints its
/// own messages and handles SIGINT/SIGTERM itself (restoring what it changed).
#[pyfunction]
fn live_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.allow_threads(|| lasthop_live::tools::main(&argv))
}

/// The SHA-256 of the concatenated UTF-8 bytes of `parts`, as lowercase hex (the checksum of a
/// result file; natively, so the command line does not load OpenSSL through `hashlib`).
#[pyfunction]
fn sha256_hex(parts: Vec<String>) -> String {
    lasthop_live::tools::run::sha256_hex(&parts)
}

/// The live tools as (name, one-line description), in `lasthop-live`'s order.
#[pyfunction]
fn live_tools() -> Vec<(&'static str, &'static str)> {
    lasthop_live::tools::TOOLS.iter().map(|t| (t.name, t.about)).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(live_main, m)?)?;
    m.add_function(wrap_pyfunction!(live_tools, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_capture, m)?)?;
    m.add_function(wrap_pyfunction!(station_rates, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_text, m)?)?;
    m.add_function(wrap_pyfunction!(spec_reads, m)?)?;
    m.add_function(wrap_pyfunction!(spec_sections, m)?)?;
    m.add_function(wrap_pyfunction!(spec_standards, m)?)?;
    m.add_function(wrap_pyfunction!(spec_names, m)?)?;
    m.add_function(wrap_pyfunction!(show_value, m)?)?;
    m.add_function(wrap_pyfunction!(unknown_key, m)?)?;
    m.add_function(wrap_pyfunction!(spec_pages, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(format_duration, m)?)?;
    m.add_function(wrap_pyfunction!(format_rate, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(build_kind, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(sha256_hex, m)?)?;
    m.add_function(wrap_pyfunction!(emu_up, m)?)?;
    m.add("EMU_IO_MODES", lasthop_live::emu::Io::NAMES.to_vec())?;
    m.add_function(wrap_pyfunction!(emu_down, m)?)?;
    m.add_function(wrap_pyfunction!(emu_netns, m)?)?;
    m.add_function(wrap_pyfunction!(emu_program_cpus, m)?)?;
    Ok(())
}

"""Train the Virtual Wires flow classifier and export it for the Rust evaluator.

"Virtual Wires: Rethinking WiFi networks" (§III-C) classifies each flow with a random forest
over packet statistics and the device type, predicting every 2 s. This script

1. generates labelled synthetic flows of each application class from the traffic models below,
2. computes, for a 10 s window of each flow, exactly the features of the Rust
   ``FeatureWindow`` (``crates/lasthop-algo/src/control/vwire/features.rs``; the definitions are
   repeated in :func:`features` and must stay identical),
3. trains ``sklearn.ensemble.RandomForestClassifier`` (20 trees, depth <= 8), reports held-out
   accuracy and the confusion matrix,
4. exports the forest in the Rust text format (``forest.rs``, version 1) and a fixture of
   held-out feature vectors with their labels and scikit-learn's predictions, plus a few raw
   packet traces with the features computed here, for the Rust tests.

scikit-learn is not a lasthop dependency; run with a scratch environment::

    python3 -m venv .venv-train && .venv-train/bin/pip install scikit-learn numpy
    .venv-train/bin/python python/lasthop/vwire_train.py

Traffic models (downlink packets as the proxy forwards them; sizes are IP lengths, a full
segment is 1500 bytes). Each flow is generated for 30 s and a window ending at a uniformly drawn
time in [12 s, 30 s] is cut from it.

* video_sd / video_hd / video_4k — DASH-like ON/OFF: bitrate uniform in [1.5, 3] / [4, 8] /
  [15, 35] Mb/s; segments of 2, 4 or 6 s (per flow); one segment is requested every segment
  duration and downloaded as a burst of ``bitrate * duration / 8 * U(0.8, 1.2)`` bytes at a
  throughput uniform in [1.3 b, 1.3 b + 60 Mb/s]; a request waits U(20, 80) ms (one RTT) and
  starts no earlier than the end of the previous download.
* bulk — saturating TCP: target rate uniform in [5, 80] Mb/s, RTT in [10, 60] ms; every RTT a
  window of ``rate * RTT * U(0.8, 1.2)`` bytes leaves back-to-back at 1.5–3x the rate.
* web — pages then think time: think time exponential (mean 4 s, at least 0.5 s); a page is
  1 + Poisson(15) objects, each a header packet of U(200, 700) bytes and a lognormal body (median
  ~12 KB, sigma 1.5), fetched one after another with exponential 20 ms gaps at a throughput
  uniform in [5, 50] Mb/s.
* voip — half VoIP: one packet of a per-flow codec size U(80, 220) bytes (+-10) every 20 or
  30 ms with 1 ms Gaussian jitter, and with probability 0.5 voice activity detection (talk
  spurts exponential mean 1.5 s, silences mean 1 s with a comfort-noise packet every 160 ms);
  half interactive/game: a packet of U(60, 300) bytes every U(15, 50) ms (exponential gaps
  around that mean).

Device type (codes as Rust ``DeviceType``: 0 unknown, 1 phone, 2 laptop, 3 TV) is drawn per
flow from a class-dependent prior (``DEVICE_PRIOR``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

CLASSES = ["video_sd", "video_hd", "video_4k", "bulk", "web", "voip"]
FEATURES = [
    "size_mean",
    "size_std",
    "iat_mean",
    "iat_std",
    "rate_bps",
    "burstiness",
    "idle_fraction",
    "small_fraction",
    "large_fraction",
    "device",
]
WINDOW_NS = 10_000_000_000
BIN_NS = 100_000_000
FLOW_NS = 30_000_000_000
FULL = 1500
HDR = 52
DEVICE_PRIOR = {
    "video_sd": [0.1, 0.4, 0.3, 0.2],
    "video_hd": [0.1, 0.4, 0.3, 0.2],
    "video_4k": [0.1, 0.1, 0.2, 0.6],
    "bulk": [0.25, 0.1, 0.6, 0.05],
    "web": [0.1, 0.45, 0.45, 0.0],
    "voip": [0.1, 0.7, 0.2, 0.0],
}
VIDEO_RATES = {"video_sd": (1.5e6, 3e6), "video_hd": (4e6, 8e6), "video_4k": (15e6, 35e6)}


def burst(pk, t0, nbytes, rate_bps, rng):
    """Packets for ``nbytes`` of payload from t0 (ns) at ``rate_bps``; returns the end time."""
    t = float(t0)
    left = int(nbytes)
    while left > 0:
        payload = min(left, FULL - HDR)
        size = payload + HDR
        pk.append((int(t), size))
        left -= payload
        t += size * 8 / rate_bps * 1e9 * rng.uniform(0.9, 1.1)
    return t


def gen_video(rng, cls):
    lo, hi = VIDEO_RATES[cls]
    b = rng.uniform(lo, hi)
    seg = float(rng.choice([2.0, 4.0, 6.0]))
    pk = []
    t_req = rng.uniform(0, seg) * 1e9
    end = 0.0
    while t_req < FLOW_NS:
        start = max(t_req + rng.uniform(0.02, 0.08) * 1e9, end)
        thr = rng.uniform(1.3 * b, 1.3 * b + 60e6)
        end = burst(pk, start, b * seg / 8 * rng.uniform(0.8, 1.2), thr, rng)
        t_req += seg * 1e9
    return pk


def gen_bulk(rng):
    r = rng.uniform(5e6, 80e6)
    rtt = rng.uniform(0.010, 0.060) * 1e9
    line = r * rng.uniform(1.5, 3.0)
    pk = []
    t = 0.0
    while t < FLOW_NS:
        burst(pk, t, r * rtt / 1e9 / 8 * rng.uniform(0.8, 1.2), line, rng)
        t += rtt
    return pk


def gen_web(rng):
    pk = []
    t = rng.uniform(0, 4) * 1e9
    while t < FLOW_NS:
        thr = rng.uniform(5e6, 50e6)
        for _ in range(1 + rng.poisson(15)):
            pk.append((int(t), int(rng.uniform(200, 700))))
            t += 1e6
            t = burst(pk, t, rng.lognormal(math.log(12_000), 1.5), thr, rng)
            t += rng.exponential(0.020) * 1e9
        t += max(0.5, rng.exponential(4.0)) * 1e9
    return pk


def gen_voip(rng):
    pk = []
    if rng.random() < 0.5:
        size = rng.uniform(80, 220)
        iv = float(rng.choice([0.020, 0.030])) * 1e9
        vad = rng.random() < 0.5
        t = 0.0
        talking, switch = True, rng.exponential(1.5) * 1e9
        while t < FLOW_NS:
            if vad and t >= switch:
                talking = not talking
                switch = t + rng.exponential(1.5 if talking else 1.0) * 1e9
            if talking:
                pk.append((int(max(0.0, t + rng.normal(0, 1e6))), int(size + rng.uniform(-10, 10))))
                t += iv
            else:
                pk.append((int(t), int(rng.uniform(40, 60))))
                t += 0.160e9
    else:
        mean = rng.uniform(0.015, 0.050) * 1e9
        t = 0.0
        while t < FLOW_NS:
            pk.append((int(t), int(rng.uniform(60, 300))))
            t += rng.exponential(mean)
    return pk


def gen_flow(rng, cls):
    if cls.startswith("video"):
        pk = gen_video(rng, cls)
    elif cls == "bulk":
        pk = gen_bulk(rng)
    elif cls == "web":
        pk = gen_web(rng)
    else:
        pk = gen_voip(rng)
    pk.sort()
    device = int(rng.choice(4, p=DEVICE_PRIOR[cls]))
    now = int(rng.uniform(12e9, 30e9))
    return pk, device, now


def window(pk, now):
    """Packets in (now - W, now], in arrival order (now >= W always here)."""
    start = now - WINDOW_NS
    return [(t, s) for (t, s) in pk if start < t <= now]


def features(pkts, now, device):
    """The Rust ``FeatureWindow::features``, operation for operation (f64, arrival order).

    0 size_mean, 1 size_std (population), 2 iat_mean, 3 iat_std (population, s), 4 rate_bps
    (8 * bytes / W), 5 burstiness (CV of bytes per 100 ms bin), 6 idle_fraction (empty bins),
    7 small_fraction (< 256 B), 8 large_fraction (>= 1200 B), 9 device.
    """
    n = len(pkts)
    f = [0.0] * 10
    f[9] = float(device)
    if n == 0:
        f[6] = 1.0
        return f
    start = now - WINDOW_NS
    s = 0.0
    small = large = 0
    for _, z in pkts:
        s += float(z)
        small += z < 256
        large += z >= 1200
    mean = s / n
    var = 0.0
    for _, z in pkts:
        d = float(z) - mean
        var += d * d
    f[0] = mean
    f[1] = math.sqrt(var / n)
    f[7] = small / n
    f[8] = large / n
    f[4] = s * 8.0 / (WINDOW_NS / 1e9)
    if n >= 2:
        m = float(n - 1)
        iats = [(pkts[k + 1][0] - pkts[k][0]) / 1e9 for k in range(n - 1)]
        acc = 0.0
        for d in iats:
            acc += d
        im = acc / m
        v = 0.0
        for d in iats:
            v += (d - im) * (d - im)
        f[2] = im
        f[3] = math.sqrt(v / m)
    nb = WINDOW_NS // BIN_NS
    bins = [0.0] * nb
    for t, z in pkts:
        k = min((t - start) // BIN_NS, nb - 1)
        bins[k] += float(z)
    bs = 0.0
    idle = 0
    for b in bins:
        bs += b
        idle += b == 0.0
    bm = bs / nb
    bv = 0.0
    for b in bins:
        bv += (b - bm) * (b - bm)
    f[5] = math.sqrt(bv / nb) / bm if bm > 0.0 else 0.0
    f[6] = idle / nb
    return f


def dataset(per_class, seed):
    rng = np.random.default_rng(seed)
    X, y, traces = [], [], []
    for label, cls in enumerate(CLASSES):
        for _ in range(per_class):
            pk, device, now = gen_flow(rng, cls)
            w = window(pk, now)
            X.append(features(w, now, device))
            y.append(label)
            traces.append((label, device, now, w))
    return np.array(X, dtype=np.float64), np.array(y), traces


def export_forest(clf, path, header):
    lines = [f"# {h}" for h in header]
    lines += [
        "lasthop-forest 1",
        f"features {clf.n_features_in_}",
        f"classes {len(CLASSES)} " + " ".join(CLASSES),
        f"trees {len(clf.estimators_)}",
    ]
    assert list(clf.classes_) == list(range(len(CLASSES)))
    for est in clf.estimators_:
        t = est.tree_
        lines.append(f"tree {t.node_count}")
        for k in range(t.node_count):
            left, right = int(t.children_left[k]), int(t.children_right[k])
            if left == -1:
                lines.append("l " + " ".join(repr(float(v)) for v in t.value[k][0]))
            else:
                assert left > k and right > k
                lines.append(f"s {int(t.feature[k])} {float(t.threshold[k])!r} {left} {right}")
    lines.append("end")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def emulate(path, X32):
    """Evaluate the exported text the way forest.rs does (check of the export)."""
    trees = []
    with open(path) as fh:
        rows = [l.split() for l in fh if l.strip() and not l.startswith("#")]
    i = 4
    while rows[i][0] == "tree":
        n = int(rows[i][1])
        trees.append(rows[i + 1 : i + 1 + n])
        i += 1 + n
    out = []
    for x in X32:
        p = [0.0] * len(CLASSES)
        for tr in trees:
            k = 0
            while tr[k][0] == "s":
                k = int(tr[k][3]) if float(x[int(tr[k][1])]) <= float(tr[k][2]) else int(tr[k][4])
            for c in range(len(CLASSES)):
                p[c] += float(tr[k][1 + c])
        p = [v / len(trees) for v in p]
        out.append(max(range(len(p)), key=lambda c: (p[c], -c)))
    return np.array(out)


def main(argv=None):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import accuracy_score, confusion_matrix
    from sklearn.model_selection import train_test_split
    import sklearn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(
        here, "..", "..", "crates", "lasthop-algo", "src", "control", "vwire", "model"
    )
    ap.add_argument("--out-dir", default=os.path.normpath(default_out))
    ap.add_argument("--per-class", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fixture-rows", type=int, default=300)
    a = ap.parse_args(argv)

    X, y, traces = dataset(a.per_class, a.seed)
    idx = np.arange(len(y))
    tr, te = train_test_split(idx, test_size=0.3, random_state=a.seed, stratify=y)
    X32 = X.astype(np.float32)
    clf = RandomForestClassifier(
        n_estimators=20, max_depth=8, min_samples_leaf=2, random_state=a.seed, n_jobs=None
    )
    clf.fit(X32[tr], y[tr])
    pred = clf.predict(X32[te])
    acc = accuracy_score(y[te], pred)
    cm = confusion_matrix(y[te], pred, labels=list(range(len(CLASSES))))
    print(f"held-out accuracy {acc:.4f} on {len(te)} flows ({len(tr)} for training)")
    print("confusion matrix (rows: true, columns: predicted):")
    print("            " + " ".join(f"{c[:8]:>8}" for c in CLASSES))
    for c, row in zip(CLASSES, cm):
        print(f"{c:>10}  " + " ".join(f"{v:8d}" for v in row))
    imp = sorted(zip(clf.feature_importances_, FEATURES), reverse=True)
    print("feature importances: " + ", ".join(f"{n} {v:.3f}" for v, n in imp))

    os.makedirs(a.out_dir, exist_ok=True)
    model = os.path.join(a.out_dir, "forest-v1.txt")
    header = [
        "Virtual Wires flow classifier, written by python/lasthop/vwire_train.py",
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, seed {a.seed}, "
        f"{a.per_class} synthetic flows per class, RandomForestClassifier(n_estimators=20, "
        "max_depth=8, min_samples_leaf=2)",
        f"held-out accuracy {acc:.4f} on {len(te)} flows; features: " + " ".join(FEATURES),
    ]
    export_forest(clf, model, header)
    emu = emulate(model, X32[te])
    if not np.array_equal(emu, pred):
        sys.exit(f"export check failed: {int((emu != pred).sum())} predictions differ")

    rows = te[: a.fixture_rows]
    fx = os.path.join(a.out_dir, "fixture-v1.txt")
    with open(fx, "w") as fh:
        fh.write("# Held-out flows for the Rust tests, written by python/lasthop/vwire_train.py.\n")
        fh.write("# row <true label> <scikit-learn prediction> <10 features as f32>\n")
        fh.write("# trace <label> <device> <now_ns> <packets>, then <t_ns> <size> lines, then\n")
        fh.write("# feat <10 features as computed here, f64>\n")
        fh.write("features " + " ".join(FEATURES) + "\n")
        for r, p in zip(rows, clf.predict(X32[rows])):
            vals = " ".join(repr(float(v)) for v in X32[r])
            fh.write(f"row {y[r]} {p} {vals}\n")
        # Raw traces: the smallest of each of a few classes, to pin the feature definitions.
        budget = 6000
        for label in range(len(CLASSES)):
            cand = [t for t in traces if t[0] == label and 2 <= len(t[3]) <= 2500]
            if not cand:
                continue
            lab, dev, now, w = min(cand, key=lambda t: len(t[3]))
            if len(w) > budget:
                continue
            budget -= len(w)
            fh.write(f"trace {lab} {dev} {now} {len(w)}\n")
            for t, s in w:
                fh.write(f"{t} {s}\n")
            fh.write("feat " + " ".join(repr(v) for v in features(w, now, dev)) + "\n")
    print(f"wrote {model} ({os.path.getsize(model)} bytes) and {fx}")


if __name__ == "__main__":
    main()

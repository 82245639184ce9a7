"""Per-device autotuning: a dispatch that offers options (equivalent kernels over the same buffers: GEMM tile
configurations, attention thread layouts, a row kernel's subgroup twin) runs the one that is fastest on this
device among those that compute what its default computes. A group (a split GEMM and the reduction of its
slices: dispatches that `follow` a leader) is chosen as a whole, by the sum of its members' times, since a
split that speeds the GEMM costs its reduction.

At load, groups whose choice is not yet cached are timed, the most work first, until the time budget is spent,
in probes of one group first, then as many as the budget left is expected to hold (`probe_size`). A group is
run on a probe (`_probe`): copies of the buffers it binds, but the constants the program's own buffers as
uploaded (no copy: a probe of a vocabulary projection would otherwise hold its weights once per candidate), every
other buffer it reads filled with seeded non-zero values (`seeded_words`); its candidates share the default's
copies (those it writes zeroed before each runs), so a group holds one copy of its buffers however many are
timed. The default runs first; then each candidate is compiled, run, checked and scouted on its own, in rank
order, none begun past the budget: its result views (`Dispatch.result`) must agree with the default's within
the group's tolerance (`disagreement`), or it is left out with a warning, as is a candidate the engine refuses
to compile. Then only those within
`SLOWER` times the fastest scout are measured (`keep`), `REPEATS` times in a compute pass of their own, in up
to `SAMPLES` interleaved samples — with no more repeats than make the fastest one's repeated runs span `SPAN`
(a long kernel needs none to resolve its time: on lavapipe a vocabulary projection's 8 repeats spent half the
budget and more, leaving the other groups at their defaults), nor than the budget left holds for all the
samples (`repeats`; none when not even one fits, and the scout decides), and no sample begun past the budget. So a
load overruns its budget by one candidate's compile, check and scout and one sample at most, however slow a
candidate is to compile (lavapipe's LLVM) or to run (a 128 x 128 tile over a one-row product on a CPU adapter
runs for seconds); a group broken off by the budget stays untimed and runs its default. In each group only the
`top_candidates` best-ranked candidates are timed (compiling a candidate's kernel is most of the cost on a
software adapter): `candidate_order` puts the options whose kernels target this kind of adapter first
(`Kernel.targets`; "cpu" where fit.adapter_kind finds one), then the compiler's default, then the others by how
close their grids are to the default's — neighbouring tile configurations and splits, since the default
already sizes its grid to the problem. An option whose kernel needs a feature the device lacks
(`Kernel.requires`) is neither timed nor chosen, and a cached choice this device cannot run is timed again. A
group without a result is never tuned. Choices persist in a JSON cache per adapter, driver and engine, keyed by
what the candidates are (`choice_key`, docs/artifact.md "Tuning": the source the engine compiles, entry,
overrides, requires, packed Params and grid), shared by every program on the device: a later load of any
program with the same shapes times nothing. While timing, a progress line on a terminal says what is being
timed. The pure decisions (`candidate_order`, `probe_size`, `keep`, `repeats`, `seeded_words`,
`disagreement`) are also cases of tests/conformance/tuning_rules.json, which both runtimes' tests replay.

`WEBGPU_TORCH_TUNE=0` runs every dispatch's default and times nothing; `WEBGPU_TORCH_TUNE_BUDGET` (seconds,
default 5) and `WEBGPU_TORCH_TUNE_TOP` (candidates per group, 0 for all; default 4 on a CPU adapter, all on
others: `top_candidates`) bound the timing;
`WEBGPU_TORCH_CACHE` names the cache file (default: ~/.cache/webgpu_torch/tuning.json). An adapter without
timestamp queries keeps the defaults.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..format.errors import DeviceError, TuningWarning, warn
from ..format.limits import LIMITS
from ..format.program import Buffer, Dispatch, Kernel, Option, Program, group, written
from .engine import CallTimeout, Engine
from .executor import Executor
from .fit import adapter_kind, runs_on
from .timing import dispatch_times

TUNE_VAR = "WEBGPU_TORCH_TUNE"
CACHE_VAR = "WEBGPU_TORCH_CACHE"
BUDGET_VAR = "WEBGPU_TORCH_TUNE_BUDGET"
TOP_VAR = "WEBGPU_TORCH_TUNE_TOP"
REPEATS = LIMITS["tuning"]["repeats"]
SAMPLES = LIMITS["tuning"]["samples"]
GROUPS_PER_PROBE = LIMITS["tuning"]["groups_per_probe"]
SPAN = LIMITS["tuning"]["span_seconds"]  # a measuring pass this long needs no repeats to resolve its time
SLOWER = LIMITS["tuning"]["slower"]  # a candidate scouted this many times slower than the fastest is not measured


def _number(var: str, default: float) -> float:
    value = os.environ.get(var)
    try:
        return float(value) if value else default
    except ValueError:
        raise ValueError(f"{var}={value!r}: give a number") from None


def enabled() -> bool:
    return os.environ.get(TUNE_VAR, "1") != "0"


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_VAR) or Path.home() / ".cache" / "webgpu_torch" / "tuning.json")


def device_key(engine: Engine) -> str:
    """The cache's entry for this device: choices made under another `cache_version` (limits.json) are never
    read."""
    info = engine.adapter.info
    return " | ".join([f"v{LIMITS['tuning']['cache_version']}", engine.name, engine.wgpu.__version__,
                       info.get("device", ""), info.get("description", ""), info.get("backend_type", "")])


def candidates(d: Dispatch) -> list[Option]:
    """The dispatch's own kernel first, then its options."""
    return [d.launch, *d.options]


def hints(program: Program) -> dict[str, int]:
    """The dynamic sizes tuning runs candidates at: each symbol's hint (the size the model was exported at)."""
    return {name: s.hint for name, s in program.symbols.items()}


def groups(program: Program) -> list[list[int]]:
    """The dispatch indices of each group with options: its leader, then the dispatches that follow it."""
    return [group(program.dispatches, i) for i, d in enumerate(program.dispatches) if d.options and not d.follows]


def choice_key(program: Program, members: list[int], engine: str) -> str:
    """What a group's candidates are on `engine`, independent of buffer numbering: equal keys time alike
    (docs/artifact.md, "Tuning": the Python and JavaScript runtimes compute the same key)."""
    parts, env = [], hints(program)
    for i in members:
        for o in candidates(program.dispatches[i]):
            k = program.kernels[o.kernel]
            source = hashlib.sha1(program.sources[k.source_for(engine)].encode()).hexdigest()
            overrides = [[name, _override_json(v)] for name, v in sorted(k.overrides)]
            uniform, grid = o.at(env)
            words = list(struct.unpack(f"<{len(uniform) // 4}I", uniform))
            parts.append([source, k.entry, overrides, sorted(k.requires), words, list(grid)])
    text = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(text.encode()).hexdigest()


def _override_json(v: float) -> int | str:
    """An override value in a choice key: the integer when it is one, else its binary64 bits in hex."""
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else struct.pack(">d", v).hex()


def force(program: Program, pick: Callable[[Kernel], bool]) -> Program:
    """`program` with each dispatch that offers an option whose kernel `pick` accepts running that option (the
    first; dispatches chosen as a group are left alone), as tuning could have chosen: for tests and benchmarks
    of one kind of kernel."""
    grouped = {i for g in groups(program) if len(g) > 1 for i in g}
    dispatches = list(program.dispatches)
    for i, d in enumerate(dispatches):
        picked = [o for o in d.options if pick(program.kernels[o.kernel])]
        if picked and i not in grouped:
            dispatches[i] = d.choose(picked[0])
    return program.derived(dispatches=dispatches)


def resolve(program: Program, engine: Engine, constants: dict[int, object]) -> Program:
    """`program` with every group of dispatches with options running its fastest candidate on `engine`
    (timing those not in the cache, and saving them there); unchanged when it has no options or tuning is
    off. Only groups that say their result are tuned (Dispatch.result): the others run their default.
    `constants`: the GPU buffer of each of the program's constants, uploaded (Executor.constant_buffers), which
    the probes bind."""
    tunable = [g for g in groups(program) if program.dispatches[g[0]].result]
    if not tunable or not enabled() or "timestamp-query" not in engine.device.features:
        return program
    path, device = cache_path(), device_key(engine)
    cache = _read(path)
    chosen = cache.setdefault(device, {})
    keys = [choice_key(program, g, engine.name) for g in tunable]
    # One representative per key; an entry that is not a candidate this device runs (a hand-edited cache, or
    # a hostile file whose candidates look like cached ones) is timed again.
    missing = {key: g for key, g in zip(keys, tunable, strict=True)
               if chosen.get(key) not in usable(program, g, engine.device.features, engine.limits)}
    kind = adapter_kind(engine.adapter.info)
    ranked = {key: ranked_candidates(program, members, engine.device.features, engine.limits, kind)
              for key, members in missing.items()}
    if missing:
        timed = _measure(program, engine, constants, missing, ranked, kind)
        if timed:
            chosen.update(timed)
            _write(path, cache)
    dispatches = list(program.dispatches)
    for key, members in zip(keys, tunable, strict=True):
        # A group the budget left untimed runs its default (no other candidate was checked against it), and is
        # timed at a later load.
        pick = chosen.get(key, 0)
        for i in members:
            dispatches[i] = dispatches[i].choose(candidates(dispatches[i])[pick])
    return program.derived(dispatches=dispatches)


def _measure(program: Program, engine: Engine, constants: dict[int, object], which: dict[str, list[int]],
             usable: dict[str, list[int]], kind: str) -> dict[str, int]:
    """For each key timed within the budget, the index of its group's fastest candidate among the `top(kind)`
    best-ranked `usable` ones (a group left with one such candidate takes it untimed)."""
    top = top_candidates(kind) or None
    ranked = {key: c[:top] for key, c in usable.items()}
    chosen = {key: 0 for key, c in ranked.items() if c == [0]}  # nothing to compare
    order = sorted((key for key in which if key not in chosen), key=lambda key: -_work(program, which[key]))
    budget, start = _number(BUDGET_VAR, LIMITS["tuning"]["budget_seconds"]), time.perf_counter()
    deadline = start + budget
    progress = _Progress(len(order))
    first = 0
    while first < len(order) and (elapsed := time.perf_counter() - start) < budget:
        keys = order[first:first + probe_size(first, elapsed, budget)]
        progress.show(first, program.dispatches[which[keys[0]][0]].node, elapsed)
        chosen.update(_fastest(program, engine, constants, {key: which[key] for key in keys}, ranked, deadline))
        first += len(keys)
    progress.done(sum(key in chosen for key in order), len(order), time.perf_counter() - start)
    return chosen


def top_candidates(kind: str) -> int:
    """How many of a group's best-ranked candidates are timed on `kind` of adapter (0: all): WEBGPU_TORCH_TUNE_TOP,
    else the limits' for the kind (on a CPU adapter compiling a candidate is most of the cost)."""
    return int(_number(TOP_VAR, LIMITS["tuning"]["top"][kind]))


def probe_size(timed: int, elapsed: float, budget: float) -> int:
    """How many groups the next probe times: one first, then as many as the budget left holds at the time a
    group has taken so far, at most GROUPS_PER_PROBE (the budget is checked before each candidate too)."""
    if timed == 0:
        return 1
    return max(1, min(GROUPS_PER_PROBE, int((budget - elapsed) * timed / max(elapsed, 1e-9))))


def keep(scouted: list[float]) -> list[int]:
    """Which candidates of a group, by their scouted seconds, are worth measuring: those within SLOWER times
    the fastest."""
    best = min(scouted)
    return [c for c, t in enumerate(scouted) if t <= SLOWER * best]


def repeats(run: float, fastest: float, left: float) -> int:
    """How many times each measured dispatch repeats in its pass when one run of all of them takes `run`
    seconds, the fastest of them `fastest`, and `left` seconds of budget remain: REPEATS, but no more than make
    the fastest one's repeated runs span SPAN (repeats resolve runs shorter than a timestamp's quantum; past
    that they only spend the budget later groups need), nor than SAMPLES passes of them fit (0: none fits, the
    scout decides)."""
    if run <= 0:
        return REPEATS
    spanning = math.ceil(SPAN / fastest) if fastest > 0 else REPEATS
    return max(0, min(REPEATS, spanning, int(left / (SAMPLES * run))))


def _fastest(program: Program, engine: Engine, constants: dict[int, object], which: dict[str, list[int]],
             ranked: dict[str, list[int]], deadline: float) -> dict[str, int]:
    """Each group's fastest candidate among those that compute what its default computes (the module's
    docstring). A call that times out ends the tuning (the device is still running the candidate: the rest
    would queue behind it), and the group's executors are kept (Engine.stuck); otherwise they are destroyed
    once the group is chosen."""
    chosen = {}
    for key, members in which.items():
        built: list[Executor] = []
        try:
            chosen_candidate = _fastest_of(program, engine, constants, members, ranked[key], deadline, built)
        except CallTimeout:
            engine.stuck.extend(built)
            raise
        for executor in built:  # as the next group is probed, not when the collector gets to them
            executor.destroy()
        if chosen_candidate is not None:
            chosen[key] = chosen_candidate
    return chosen


def _fastest_of(program: Program, engine: Engine, constants: dict[int, object], members: list[int],
                ranked: list[int], deadline: float, built: list[Executor]) -> int | None:
    """A group's fastest candidate, or None when the deadline cut it short (it stays untimed: its default runs,
    and a later load, with those kernels in the shader cache, times it). The default runs first on seeded
    inputs (`_probe`); then the candidates are compiled, run on the same inputs, checked against it and scouted
    one at a time in rank order, none begun past the deadline, so a load overruns its budget by one candidate's
    compile, check and scout at most. A candidate the engine refuses (a kernel its shader compiler rejects) or
    whose result differs from the default's is never chosen, with a warning naming it; the default is chosen
    when every one is. `built` collects the candidates' executors."""
    try:
        reference = Candidate(program, members, 0, engine, built, constants)
    except CallTimeout:
        raise
    except DeviceError:
        return None  # the default itself does not build: the load says so
    scouted: dict[int, tuple[Executor, float]] = {}
    tried = 0
    for c in ranked:
        if tried and time.perf_counter() >= deadline:
            break
        tried += 1
        try:
            candidate = reference if c == 0 else Candidate(program, members, c, engine, built, constants, reference)
        except CallTimeout:
            raise
        except DeviceError as e:
            _leave_out(program, members, c, f"the {engine.name} engine refuses it: {e}")
            continue
        why = candidate.differs_from(reference)
        if why:
            _leave_out(program, members, c, f"its result differs from the default's: {why}")
            continue
        scouted[c] = candidate.executor, sum(dispatch_times(candidate.executor, samples=1, repeats=1, warm_up=False))
    if tried < len(ranked):
        return None
    if not scouted:
        return 0
    order = list(scouted)
    kept = [order[i] for i in keep([scouted[c][1] for c in order])]
    return min(kept, key=_measured(scouted, kept, deadline).__getitem__)


def _measured(scouted: dict[int, tuple[Executor, float]], kept: list[int], deadline: float) -> dict[int, float]:
    """Seconds per run of each kept candidate: the median of up to SAMPLES samples of `repeats` runs each,
    interleaved, none begun past the deadline; the scout's own time where not one sample fits the budget."""
    times = [scouted[c][1] for c in kept]
    reps = repeats(sum(times), min(times), deadline - time.perf_counter()) if len(kept) > 1 else 0
    if not reps:
        return {c: scouted[c][1] for c in kept}
    samples: dict[int, list[float]] = {c: [] for c in kept}
    while len(samples[kept[0]]) < SAMPLES and (not samples[kept[0]] or time.perf_counter() < deadline):
        for c in kept:  # the scout warmed them up
            samples[c].append(sum(dispatch_times(scouted[c][0], samples=1, repeats=reps, warm_up=False)))
    return {c: float(np.median(t)) for c, t in samples.items()}


def candidate_order(workgroups: list[int], targets: list[list[str]], kind: str) -> list[int]:
    """Candidates in the order tuning times them, from each one's leader's workgroup count and its kernel's
    targets (candidate 0 is the default): those targeting `kind` of adapter first, then the default, then the
    rest; each part by how far (in log2) its workgroup count is from the default's (ties in candidate order)."""

    def order(c: int) -> tuple:
        return kind not in targets[c], c != 0, abs(math.log2(workgroups[c] / workgroups[0]))

    return sorted(range(len(workgroups)), key=order)


def ranked_candidates(program: Program, members: list[int], features, limits: dict[str, int],
                      kind: str = "gpu") -> list[int]:
    """The group's candidates this device can run, as `candidate_order` orders them on `kind` of adapter."""
    leader = candidates(program.dispatches[members[0]])
    runnable = set(usable(program, members, features, limits))
    env = hints(program)
    order = candidate_order([math.prod(o.at(env)[1]) for o in leader],
                            [list(program.kernels[o.kernel].targets) for o in leader], kind)
    return [c for c in order if c in runnable]


def _work(program: Program, members: list[int]) -> int:
    """How much a group computes, roughly: its default's workgroups."""
    return sum(math.prod(program.dispatches[i].grid) for i in members)


class _Progress:
    """One updating line on a terminal's stderr while tuning; a summary line after a long tuning."""

    def __init__(self, groups: int):
        self.groups, self.live = groups, sys.stderr.isatty()

    def show(self, done: int, node: str, elapsed: float) -> None:
        if self.live:
            sys.stderr.write(f"\rtuning {done}/{self.groups} groups of dispatches ({elapsed:.1f} s): timing the "
                             f"kernels for {node}\033[K")
            sys.stderr.flush()

    def done(self, timed: int, groups: int, elapsed: float) -> None:
        if not (self.live or elapsed > 10):
            return
        left = f"; {groups - timed} left at their defaults ({BUDGET_VAR})" if timed < groups else ""
        line = f"tuned {timed}/{groups} groups of dispatches in {elapsed:.1f} s{left}"
        sys.stderr.write(f"\r{line}\033[K\n" if self.live else line + "\n")


def usable(program: Program, members: list[int], features, limits: dict[str, int]) -> list[int]:
    """The candidates of a group whose every member's kernel runs on the device (fit.runs_on)."""
    count = len(program.dispatches[members[0]].options) + 1
    return [c for c in range(count) if all(runs_on(program.kernels[candidates(program.dispatches[i])[c].kernel],
                                                   features, limits) for i in members)]


class Candidate:
    """Candidate `c` of the group `members` built over a probe and run once: its executor (warm, for scouting)
    and its result views as computed (device form)."""

    def __init__(self, program: Program, members: list[int], c: int, engine: Engine,
                 built: list[Executor] | None = None, constants: dict[int, object] | None = None,
                 reference: Candidate | None = None):
        """`built` collects the executor as soon as it exists (what a timed-out call may still use);
        `constants`: the program's constant buffers, uploaded, which the probe binds (None: it uploads its own);
        `reference`: the group's default, built before, whose probe buffers this one binds too (the seeded ones
        as they are, the written ones zeroed first, as fresh ones are), so that a group holds one copy of its
        buffers however many candidates are timed (alternatives bind the same buffers: Emitter.alternatives).
        None: buffers of its own, its inputs seeded."""
        self.tolerance = program.dispatches[members[0]].tolerance
        probe, seeded, binds = _probe(program, members, c)
        borrowed = {j: constants[b] for j, b in binds.items()} if constants is not None else {}
        if reference is not None:
            borrowed = {**dict(enumerate(reference.executor.buffers)), **borrowed}
        self.executor = Executor(probe, engine, borrowed=borrowed)
        if built is not None:
            built.append(self.executor)
        sizes, queue = [b.size for b in probe.buffers], engine.device.queue
        written = [j for j in range(len(sizes)) if j not in seeded and j not in binds]
        with engine.lock:
            for j in seeded if reference is None else written:
                words = seeded_words(j, sizes[j] // 4) if reference is None else np.zeros(-(-sizes[j] // 4), np.uint32)
                queue.write_buffer(self.executor.buffers[j], 0, words)
        self.result = self.executor.run([])

    def differs_from(self, reference: Candidate) -> str | None:
        """How this candidate's result differs from the default's `reference`, or None when it agrees."""
        for k, (want, got) in enumerate(zip(reference.result, self.result, strict=True)):
            why = disagreement(want, got, self.tolerance)
            if why:
                return f"result view {k}: {why}" if len(self.result) > 1 else why
        return None


def _probe(program: Program, members: list[int], c: int) -> tuple[Program, list[int], dict[int, int]]:
    """A program of candidate `c` of the group `members` (its dispatches in order, at the dynamic sizes'
    hints) over copies of the buffers they bind, numbered in order of first binding, the constants as the
    program holds them, whose outputs are the group's result views (read back in the run's own submit: on
    wgpu-native a second submit waits, beyond a timeout's reach, for a run that does not end); and the buffers
    to fill with `seeded_words` (those the group only reads); and the program's buffer each of its constants
    is, by the probe's index."""
    used: dict[int, int] = {}
    dispatches, env = [], hints(program)
    for i in members:
        d = program.dispatches[i]
        o = candidates(d)[c]
        buffers = tuple(used.setdefault(b, len(used)) for b in d.buffers)
        dispatches.append(Dispatch(o.kernel, buffers, *o.at(env), d.node))
    writes = set().union(*(written(program, program.dispatches[i]) for i in members))
    constant = {b for b in used if program.buffers[b].role == "constant"}
    buffers = [Buffer(program.buffers[b].size, "constant" if b in constant else "scratch") for b in used]
    constants = {used[b]: program.constants[b] for b in constant}
    seeded = [j for b, j in used.items() if b not in constant | writes]
    # An f16 activation view reads back as the float16 values its storage holds.
    result = [replace(t, buffer=used[t.buffer], dtype="float16" if t.dtype == "f16" else t.dtype)
              for t in program.dispatches[members[0]].result]
    no_args = {"type": "tuple", "items": [{"type": "tuple", "items": []}, {"type": "dict", "keys": [], "items": []}]}
    outputs = {"type": "tuple", "items": [{"type": "leaf"}] * len(result)}
    probe = Program(program.sources, program.kernels, buffers, constants, [], result, no_args, outputs, dispatches)
    return probe, seeded, {used[b]: b for b in constant}


def seeded_words(index: int, count: int) -> np.ndarray:
    """The contents of a probe's input buffer `index`: `count` u32 words from a hash of (index, position), each
    of whose 16-bit halves reads as a float16 in ±[1, 2) and whose whole reads as a float32 in ±[2^-7, 2):
    non-zero finite values of either sign, whatever a kernel reads them as (docs/artifact.md, "Tuning")."""
    with np.errstate(over="ignore"):
        x = np.arange(count, dtype=np.uint32) + np.uint32(index * GOLDEN % 2**32)
        x ^= x >> np.uint32(16)
        x *= np.uint32(0x7FEB352D)
        x ^= x >> np.uint32(15)
        x *= np.uint32(0x846CA68B)
        x ^= x >> np.uint32(16)
    return (x & np.uint32(0x83FF83FF)) | np.uint32(0x3C003C00)


GOLDEN = 0x9E3779B9  # 2^32 / φ: spreads the buffers' hash inputs apart


def disagreement(reference: np.ndarray, candidate: np.ndarray, tolerance: float) -> str | None:
    """How a candidate's result view differs from the default's `reference`, or None when it agrees: integer
    elements exactly; float elements with the same non-finite values (NaN, ±inf) where either has one, and the
    finite ones within `tolerance` times the largest finite magnitude of the reference's (docs/artifact.md,
    "Tuning")."""
    if reference.dtype.kind != "f":
        wrong = np.flatnonzero(reference.ravel() != candidate.ravel())
        return f"{len(wrong)} of {reference.size} integers differ" if len(wrong) else None
    want, got = reference.astype(np.float64).ravel(), candidate.astype(np.float64).ravel()
    finite = np.isfinite(want)
    if not (np.array_equal(finite, np.isfinite(got))
            and np.array_equal(want[~finite], got[~finite], equal_nan=True)):
        return "its non-finite elements differ from the default's"
    scale = float(np.abs(want[finite]).max(initial=0.0))
    error = float(np.abs(got[finite] - want[finite]).max(initial=0.0))
    if error > tolerance * scale:
        return f"off by up to {error:.3g} where the default's largest magnitude is {scale:.3g} (tolerance {tolerance})"
    return None


def _leave_out(program: Program, members: list[int], c: int, why: str) -> None:
    leader = program.dispatches[members[0]]
    name = program.kernels[candidates(leader)[c].kernel].name
    warn(f"tuning leaves out kernel {name} for node {leader.node}: {why}", TuningWarning)


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):  # none yet, or unreadable: start afresh (it only caches measurements)
        return {}


def _write(path: Path, cache: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        tmp.replace(path)  # atomic: concurrent loads never read half a file
    except OSError:  # a read-only home: the choices hold for this process only
        pass

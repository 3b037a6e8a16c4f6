"""Every rule of the chunk sizer (`nht_jax.training.chunks`) pinned on known answers worked out by hand, on simulated
timings (no clock): the edges of `next` (exactly two chunks left, exactly one, the remainder), the drift window of
`record` at both ends, the first timing, the cap, the powers of two at their boundaries, and what `use` keeps apart;
then laws for all inputs (hypothesis): the calls of a whole sweep add up to its log intervals, each call is a size
compiled already or one worth compiling, never zero, and an explicit `chunk_logs` is every chunk but the last.

A target of 8 s is used where the window matters: its ends, 8/4 = 2 s and 2·8 = 16 s, and the times put on them are
exact in binary, so each comparison at an edge is exact."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax.config.sections import ExecutionConfig
from nht_jax.training.chunks import ChunkSizer, power_of_two_at_most, power_of_two_nearest

COMPILE_S = 30.0  # what a compiling call takes: the sizer must not read it as the pace


def sizer(chunk_seconds=8.0, chunk_logs=0) -> ChunkSizer:
    return ChunkSizer(ExecutionConfig(chunk_logs=chunk_logs, chunk_seconds=chunk_seconds))


def sized_to_four() -> ChunkSizer:
    """A sizer (8-s chunks) that compiled 1, timed 2 s per log interval (8/2: chunks of 4) and compiled 4."""
    s = sizer()
    assert s.record(1, COMPILE_S) is True  # compiles: not timed
    assert s.size == 1 and not s.timed
    assert s.record(1, 2.0) is False  # timed: 8 s / 2 s = 4 log intervals
    assert (s.size, s.timed) == (4, True)
    assert s.next(8) == [4] and s.record(4, COMPILE_S) is True
    return s


# ----------------------------------------------------------------------------- next: the edges


def test_a_fixed_chunk_is_that_many_logs_and_the_last_takes_what_is_left():
    """chunk_logs = 3: [3] while 3 or more are left (exactly one chunk left too), then the remainder; the pace
    changes nothing."""
    s = sizer(chunk_logs=3)
    assert [s.next(r) for r in (100, 4, 3, 2, 1)] == [[3], [3], [3], [2], [1]]
    assert s.record(3, 1000.0) is True and s.record(3, 0.001) is False  # the first call of a size compiles
    assert s.size == 1 and not s.timed and s.next(7) == [3]


def test_a_new_size_is_compiled_only_when_two_whole_chunks_of_it_are_left():
    """Chunks of 4, only 1 compiled: exactly 8 left (two chunks) compiles 4; 7, or exactly one chunk (4), run as
    calls of one log interval; fewer than a chunk, as many calls as are left."""
    s = sizer()
    s.record(1, COMPILE_S)
    s.record(1, 2.0)
    assert s.next(8) == [4] and s.next(100) == [4]
    assert s.next(7) == [1, 1, 1, 1]
    assert s.next(4) == [1, 1, 1, 1]
    assert s.next(3) == [1, 1, 1]
    assert s.next(1) == [1]


def test_a_compiled_size_runs_whole_and_the_remainder_as_smaller_compiled_calls():
    """4 compiled: 4 or more left is one call of 4 (exactly one chunk left too); 3 left, three calls of 1."""
    s = sized_to_four()
    assert s.next(4) == [4] and s.next(5) == [4] and s.next(100) == [4]
    assert s.next(3) == [1, 1, 1]
    assert 4 in s.compiled and 1 in s.compiled


def test_the_remainder_takes_the_largest_compiled_sizes_first():
    """Compiled 1, 2, 4 and chunks of 8 (not compiled): 7 left is 4 + 2 + 1; 15 left (< two chunks) is one chunk
    of 8 as 4 + 4; 16 left compiles 8."""
    s = sizer()
    s.compiled.update({1, 2, 4})
    s.size, s.timed = 8, True
    assert s.next(7) == [4, 2, 1]
    assert s.next(15) == [4, 4]
    assert s.next(16) == [8]
    s.compiled.add(8)
    assert s.next(15) == [8]


def test_a_chunk_shrunk_below_a_compiled_size_uses_only_smaller_calls():
    """Chunks shrunk to 2 (not compiled) with 1, 4 compiled: a chunk never exceeds its size, so 3 left is two calls
    of 1, and 4 left (two chunks of 2) compiles 2."""
    s = sizer()
    s.compiled.update({1, 4})
    s.size, s.timed = 2, True
    assert s.next(3) == [1, 1]
    assert s.next(4) == [2]


def test_the_first_chunks_are_one_log_interval_until_timed():
    """Fresh: one log interval (it compiles), whatever is left; a second one (timed) since one compiling call says
    nothing about the pace."""
    s = sizer()
    assert s.next(1000) == [1] and s.next(2) == [1] and s.next(1) == [1]
    s.record(1, COMPILE_S)
    assert s.next(1000) == [1]


# ----------------------------------------------------------------------------- record: timing and the drift window


def test_record_says_which_call_compiled():
    """The first call of each size compiled (True), later ones did not; a compiling call times nothing."""
    s = sizer()
    assert s.record(1, 0.5) is True and s.size == 1 and not s.timed
    assert s.record(2, 0.5) is True and s.size == 1 and not s.timed
    assert s.record(1, 0.5) is False and s.timed
    assert s.compiled == {1, 2}


def test_the_first_timing_sizes_the_chunks_even_inside_the_window():
    """Untimed, 1 log interval of 4 s lies inside [2, 16] s, yet the first timing sizes: 8/4 = 2 log intervals."""
    s = sizer()
    s.record(1, COMPILE_S)
    s.record(1, 4.0)
    assert (s.size, s.timed) == (2, True)


def test_the_first_timing_takes_the_nearest_power_of_two():
    """5-s chunks at 3.1 s per log interval: 5/3.1 = 1.61 is nearer 2 than 1 on a log scale; at 1.25 s, 4 exactly."""
    s = sizer(chunk_seconds=5.0)
    s.record(1, COMPILE_S)
    s.record(1, 3.1)
    assert s.size == 2
    s = sizer(chunk_seconds=5.0)
    s.record(1, COMPILE_S)
    s.record(1, 1.25)
    assert s.size == 4


def test_a_chunk_at_either_end_of_the_drift_window_keeps_its_size():
    """Chunks of 4 at a target of 8 s keep their size while a chunk takes 2 s (8/4) to 16 s (2·8), ends included,
    although 12 s (3 s per log: 8/3 → 2) would size them otherwise."""
    s = sized_to_four()
    for seconds in (2.0, 16.0, 12.0, 3.0):
        s.record(4, seconds)
        assert s.size == 4, seconds


def test_a_chunk_just_outside_the_drift_window_is_resized():
    """Just under 2 s per chunk of 4: 0.4998 s per log, 8/0.4998 = 16.008 → 16. Just over 16 s: 4.0025 s per log,
    8/4.0025 = 1.9988 → 2 (nearest on a log scale). Far outside: 64 s → 8/16 = 0.5 → 1; 0.25 s → 128."""
    for seconds, size in ((1.999, 16), (16.01, 2), (64.0, 1), (0.25, 128)):
        s = sized_to_four()
        s.record(4, seconds)
        assert s.size == size, (seconds, s.size)


def test_the_window_judges_the_chunk_size_not_the_call():
    """Chunks of 4 at 0.25 s per log (a call of 4 in 1 s) → 8/0.25 = 32. Then a call of 4 in 8 s: on target for a
    call of 4, but 2 s per log makes a chunk of 32 last 64 s > 16 s → 8/2 = 4."""
    s = sized_to_four()
    s.record(4, 1.0)
    assert s.size == 32
    s.record(4, 8.0)
    assert s.size == 4


def test_an_instant_call_gives_the_largest_chunk_and_no_division_by_zero():
    """A call timed at 0 s (a coarse clock) counts as 1 ns: 8 s / 1 ns is past the cap of 2^20 log intervals."""
    s = sizer()
    s.record(1, COMPILE_S)
    s.record(1, 0.0)
    assert s.size == ChunkSizer.MAX_LOGS == 1 << 20


# ----------------------------------------------------------------------------- use: programs and intervals


def test_another_program_has_its_own_compiled_sizes_and_the_same_chunk_size():
    """A re-packed (or run slice's) program compiled nothing yet: chunks of 4 compile again there when two are left,
    one chunk left runs as calls of 1; back on the first program, 4 is compiled."""
    s = sized_to_four()
    s.use("small")
    assert (s.size, s.timed) == (4, True) and s.compiled == set()
    assert s.next(8) == [4] and s.next(4) == [1, 1, 1, 1]
    s.use(None)
    assert s.next(4) == [4] and s.compiled == {1, 4}


def test_another_log_interval_is_sized_afresh_and_its_pace_kept_apart():
    """A schedule segment of another interval starts at one log interval, untimed (its first timing resizes even
    inside the window: 1 × 4 s → 8/4 = 2); back on the first interval, chunks of 4 again, still timed; back on the
    second, chunks of 2."""
    s = sized_to_four()
    s.use(None, 10)
    assert (s.size, s.timed) == (1, False) and s.compiled == set() and s.next(50) == [1]
    s.record(1, COMPILE_S)
    s.record(1, 4.0)
    assert s.size == 2
    s.use(None, None)
    assert (s.size, s.timed) == (4, True) and s.compiled == {1, 4}
    s.use("small", 10)
    assert (s.size, s.timed) == (2, True) and s.compiled == set()
    s.use(None, 10)
    assert s.compiled == {1}


def test_describe_names_the_setting_that_sizes_the_chunks():
    assert sizer(chunk_logs=3).describe() == "chunks of 3 log intervals (execution.chunk_logs)"
    assert sizer(chunk_seconds=5.0).describe() == "chunks sized to about 5 s (execution.chunk_seconds)"
    assert sizer(chunk_seconds=2.5).describe() == "chunks sized to about 2.5 s (execution.chunk_seconds)"


# ----------------------------------------------------------------------------- powers of two


def test_powers_of_two_at_their_boundaries():
    """At most: 1 below 2, then the largest power ≤ x. Nearest on a log scale: 2^k for x ∈ [2^k/√2, 2^k·√2)."""
    assert [power_of_two_at_most(x) for x in (0.3, 1.0, 1.99, 2.0, 3.99, 4.0, 7.9, 8.0, 1025.0)] == [
        1,
        1,
        1,
        2,
        2,
        4,
        4,
        8,
        1024,
    ]
    r2 = math.sqrt(2)
    assert [power_of_two_nearest(x) for x in (0.2, 1.0, 1.41, r2, 1.6, 2.0, 2.82, 2 * r2, 3.0, 5.65, 5.66)] == [
        1,
        1,
        1,
        2,
        2,
        2,
        2,
        4,
        4,
        4,
        8,
    ]


@given(st.floats(min_value=1.0, max_value=2.0**40, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_the_nearest_power_of_two_is_within_a_factor_root_two(x):
    """For x ≥ 1: a power of two p with p/√2 ≤ x < p·√2; the power at most x is p' ≤ x < 2p'."""
    p = power_of_two_nearest(x)
    assert p & (p - 1) == 0 and p / math.sqrt(2) <= x * (1 + 1e-12) and x < p * math.sqrt(2)
    q = power_of_two_at_most(x)
    assert q & (q - 1) == 0 and q <= x < 2 * q


# ----------------------------------------------------------------------------- whole sweeps: laws


def simulate(total_logs: int, paces: list[float], chunk_logs: int = 0, chunk_seconds: float = 8.0):
    """The chunks of a sweep of total_logs whose log intervals take paces[k % len(paces)] s in chunk k (each first
    call of a size COMPILE_S more), each with the sizes compiled, the logs left and the chunk size before it."""
    s = sizer(chunk_seconds, chunk_logs)
    chunks, done = [], 0
    while done < total_logs:
        pace = paces[len(chunks) % len(paces)]
        before = (set(s.compiled), total_logs - done, s.size)
        chunk = s.next(total_logs - done)
        for n in chunk:
            s.record(n, n * pace + (COMPILE_S if n not in s.compiled else 0.0))
            done += n
        chunks.append((chunk, *before))
        assert len(chunks) <= total_logs  # every chunk advances
    return chunks


@given(
    total=st.integers(1, 3000),
    paces=st.lists(st.sampled_from([1e-4, 0.01, 0.3, 1.0, 2.0, 3.1, 9.0, 40.0]), min_size=1, max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_time_sized_chunks_cover_the_sweep_with_sizes_worth_compiling(total, paces):
    """Whatever the pace: the chunks add up to the log intervals exactly; a chunk is its size, or what is left when
    less; its calls are powers of two ≥ 1, largest first, each compiled already (or 1, the first call), except a
    lone call of the chunk size with two whole chunks of it left."""
    chunks = simulate(total, paces)
    assert sum(sum(chunk) for chunk, *_ in chunks) == total
    for chunk, compiled, left, size in chunks:
        assert sum(chunk) == min(size, left)
        assert all(n >= 1 and n & (n - 1) == 0 for n in chunk) and chunk == sorted(chunk, reverse=True)
        new = [n for n in chunk if n not in compiled | {1}]
        assert not new or (chunk == new == [size] and left >= 2 * size), (chunk, compiled, left, size)


@given(total=st.integers(1, 500), chunk_logs=st.integers(1, 40))
@settings(max_examples=60, deadline=None)
def test_fixed_chunks_are_chunk_logs_but_the_last(total, chunk_logs):
    """chunk_logs ≥ 1: every chunk one call of chunk_logs log intervals, but the last, which takes the remainder
    (whole when chunk_logs divides the sweep), whatever the pace."""
    chunks = [chunk for chunk, *_ in simulate(total, [0.01, 50.0], chunk_logs=chunk_logs)]
    whole, rest = divmod(total, chunk_logs)
    assert chunks == [[chunk_logs]] * whole + ([[rest]] if rest else [])

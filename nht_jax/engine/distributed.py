"""Many processes, one sweep: JAX's own multi-process runtime (`jax.distributed`).

Every process runs the same command with its own process id; `initialize` joins them through a coordinator
(`Launch`: explicit HOST:PORT, or `auto` where `jax.distributed.initialize()` detects the cluster), with a watchdog
that ends a process that cannot join, naming what it waited for. The run axis is sharded over a global mesh of
every process's devices; whatever Python decides between calls is process 0's decision, sent to all
(`from_writer`, `writer_does`), results come back to every process (`gather`), a refusal anywhere reaches all
(`all_do`), and only process 0 (`is_writer`) touches the results folder. A single process takes none of these
paths.

How to launch, what each process does, how they agree, and the results against one device:
docs/guides/execution.md, "Many processes (jax.distributed)"."""

from __future__ import annotations

import os
import pickle
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Callable, TypeVar

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nht_jax.base.errors import ConfigError, check

T = TypeVar("T")

JAX_TIMEOUT_MARGIN_S = 30  # JAX's own initialization_timeout is this much longer than the watchdog's


@dataclass(frozen=True)
class Launch:
    """How this process joins a sweep of several processes.

    auto: let `jax.distributed.initialize()` detect everything (SLURM, TPU pod, Open MPI); otherwise
    coordinator ("HOST:PORT" of process 0, the same for every process), num_processes (≥ 1) and process_id
    (0 … num_processes − 1, each once) are all given. timeout_s: how long joining may take (every process must
    have started by then) before this process ends with a message.
    """

    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    auto: bool = False
    timeout_s: float = 300.0

    def describe(self) -> str:
        if self.auto:
            return "cluster detected by jax.distributed"
        return f"process {self.process_id} of {self.num_processes}, coordinator {self.coordinator}"


def parse_address(text: str) -> tuple[str, int]:
    """ "HOST:PORT" → (host, port); ConfigError when it is not one."""
    host, sep, port = str(text).rpartition(":")
    check(
        bool(sep) and bool(host) and port.isdigit() and 0 < int(port) < 65536,
        f"--coordinator must be HOST:PORT with a port in 1–65535 (e.g. node0:12345 or localhost:12345), got {text!r}",
    )
    return host.strip("[]"), int(port)


def validate(launch: Launch) -> None:
    """Bad launch settings fail here, before anything joins or trains."""
    check(launch.timeout_s > 0, f"the join timeout must be > 0 seconds, got {launch.timeout_s}")
    if launch.auto:
        given = [
            name
            for name, v in (("--coordinator", launch.coordinator), ("--process-id", launch.process_id))
            if v is not None
        ]
        check(
            not given,
            f"--processes auto detects the cluster itself; drop {', '.join(given)} (or give the number "
            f"of processes with --processes N, --process-id I and --coordinator HOST:PORT)",
        )
        return
    missing = [
        name
        for name, v in (
            ("--coordinator", launch.coordinator),
            ("--processes", launch.num_processes),
            ("--process-id", launch.process_id),
        )
        if v is None
    ]
    check(
        not missing,
        f"joining a sweep of several processes needs --processes N, --process-id I and --coordinator "
        f"HOST:PORT together; missing {', '.join(missing)}",
    )
    parse_address(launch.coordinator)
    check(launch.num_processes >= 1, f"--processes must be ≥ 1, got {launch.num_processes}")
    check(
        0 <= launch.process_id < launch.num_processes,
        f"--process-id must lie in 0 … {launch.num_processes - 1} (--processes {launch.num_processes}), "
        f"got {launch.process_id}",
    )


def check_port_free(port: int) -> None:
    """Process 0 serves the coordinator on this port of its own host: fail clearly when something holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("", port))
        except OSError as e:
            raise ConfigError(
                f"process 0 serves the coordinator on port {port} of this host ({socket.gethostname()}), "
                f"but that port is in use ({e.strerror or e}); choose another port in --coordinator "
                f"HOST:PORT for every process"
            ) from None


def use_cpu_collectives() -> None:
    """Cross-process collectives on CPU need an implementation; pick gloo unless one is chosen already."""
    try:
        if jax.config.jax_cpu_collectives_implementation in (None, "", "none"):
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except AttributeError:  # a JAX without the option
        pass


def _watchdog(launch: Launch) -> threading.Timer:
    """A timer that ends this process with a clear message when joining outlasts launch.timeout_s."""
    if launch.auto:
        waited = "the processes of the detected cluster"
    elif launch.process_id == 0:
        waited = (
            f"the other {launch.num_processes - 1} process(es) to join at {launch.coordinator} (start every one "
            f"with the same --coordinator and --processes, and --process-id 1 … {launch.num_processes - 1})"
        )
    else:
        waited = (
            f"the coordinator at {launch.coordinator} (process 0: is it started, with the same --coordinator "
            f"and --processes, and is its port reachable from {socket.gethostname()}?)"
        )

    def fail():
        print(
            f"nht: error: {launch.describe()}: gave up after {launch.timeout_s:g} s waiting for {waited}. "
            f"Raise the limit with --join-timeout SECONDS.",
            file=sys.stderr,
            flush=True,
        )
        os._exit(2)

    timer = threading.Timer(launch.timeout_s, fail)
    timer.daemon = True
    return timer


def initialize(launch: Launch) -> None:
    """Join the sweep's processes (before any JAX computation in this process). ConfigError on bad input.

    Args:
        launch: the process's launch settings (coordinator, process id and count, or auto).
    """
    validate(launch)
    if not launch.auto and launch.num_processes == 1:
        return  # one process: nothing to join
    if not launch.auto and launch.process_id == 0:
        check_port_free(parse_address(launch.coordinator)[1])
    use_cpu_collectives()
    timer = _watchdog(launch)
    timer.start()
    try:
        if launch.auto:
            jax.distributed.initialize(initialization_timeout=int(launch.timeout_s) + JAX_TIMEOUT_MARGIN_S)
        else:
            jax.distributed.initialize(
                launch.coordinator,
                num_processes=launch.num_processes,
                process_id=launch.process_id,
                initialization_timeout=int(launch.timeout_s) + JAX_TIMEOUT_MARGIN_S,
            )
    except (ValueError, RuntimeError) as e:
        if launch.auto and "coordinator_address" in str(e):
            raise ConfigError(
                "--processes auto found no cluster to join (jax.distributed detects a SLURM job step, "
                "a Cloud TPU pod slice, Open MPI, …); outside one, give --coordinator HOST:PORT, "
                "--processes N and --process-id I"
            ) from None
        raise ConfigError(f"could not join the sweep's processes ({launch.describe()}): {e}") from None
    finally:
        timer.cancel()


def multi_process() -> bool:
    return jax.process_count() > 1


def is_writer() -> bool:
    """Whether this process writes the results (process 0; always true for a single process)."""
    return jax.process_index() == 0


def gather(tree):
    """Every leaf as a full host (NumPy) array on every process. Leaves spread over several processes are
    all-gathered in one compiled call per tree structure (`_replicated`; a collective: every process must call it
    at the same point); the others are `np.asarray`.

    Args:
        tree: a pytree of arrays, some perhaps spread over processes.

    Returns:
        The same pytree of NumPy arrays.
    """
    leaves, structure = jax.tree.flatten(tree)
    spread = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array) and not x.is_fully_addressable]
    if spread:
        whole = _replicated(leaves[spread[0]].sharding.mesh)([leaves[i] for i in spread])
        for i, x in zip(spread, whole):
            leaves[i] = x.addressable_data(0)  # every device now holds all of it
    return jax.tree.unflatten(structure, [np.asarray(x) for x in leaves])


def _identity(tree):
    return tree


def _replicated(mesh: Mesh):
    """identity, compiled to return its input replicated on every device of `mesh` (XLA inserts the all-gathers;
    `multihost_utils.process_allgather` does the same one array at a time)."""
    return jax.jit(_identity, out_shardings=NamedSharding(mesh, PartitionSpec()))


def _padded_length(n: int) -> int:
    """Byte buffers are sent padded to a power of two (≥ 64), so few distinct sizes ever compile."""
    return max(64, 1 << (n - 1).bit_length())


def _broadcast_bytes(data: bytes, source: int = 0) -> bytes:
    """Process `source`'s bytes on every process (a collective; what other processes pass is ignored)."""
    from jax.experimental import multihost_utils

    is_source = jax.process_index() == source
    payload = np.frombuffer(data, np.uint8) if is_source else np.zeros(0, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.asarray(payload.size, np.int32), is_source=is_source))
    buffer = np.zeros(_padded_length(max(size, 1)), np.uint8)
    buffer[: payload.size] = payload
    received = np.asarray(multihost_utils.broadcast_one_to_all(buffer, is_source=is_source))
    return received[:size].tobytes()


def from_writer(value: T) -> T:
    """Process 0's `value` on every process (any picklable object; a collective). One process: `value`."""
    if not multi_process():
        return value
    received = _broadcast_bytes(pickle.dumps(value) if is_writer() else b"")
    return value if is_writer() else pickle.loads(received)


def writer_does(fn: Callable[[], T]) -> T:
    """Process 0 calls fn(); every process gets its result, or raises the ConfigError it raised (so a refusal
    of process 0, such as a results folder in use, stops every process with the same message)."""
    outcome = None
    if is_writer():
        try:
            outcome = ("ok", fn())
        except ConfigError as e:
            outcome = ("error", str(e))
    outcome = from_writer(outcome)
    if outcome[0] == "error":
        raise ConfigError(outcome[1])
    return outcome[1]


def all_do(fn: Callable[[], T]) -> T:
    """Every process calls fn(); when it raises ConfigError on any process, every process raises it (the first
    failing process's message, naming that process), so none is left waiting in a collective."""
    try:
        result, error = fn(), None
    except ConfigError as e:
        result, error = None, e
    if not multi_process():
        if error is not None:
            raise error
        return result
    from jax.experimental import multihost_utils

    failed = np.asarray(multihost_utils.process_allgather(np.asarray(error is not None))).reshape(-1)
    if failed.any():
        first = int(np.flatnonzero(failed)[0])
        message = _broadcast_bytes(str(error).encode() if error is not None else b"", first).decode()
        raise ConfigError(message if first == 0 else f"process {first}: {message}") from None
    return result


__all__ = ["gather", "initialize"]

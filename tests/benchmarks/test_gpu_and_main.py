"""The GPU sweep benchmark's step jobs on CPU (quick sizes: one compile of a tiny MLP) and its report, and the
end-to-end benchmark's table of parts (pure: no training)."""

import math

from benchmarks import gpu_sweep, main_command


def test_a_step_job_times_one_call_of_vmapped_runs_and_reports_it():
    config = gpu_sweep.step_config(2, quick=True)
    assert config.execution.strategy == "vmap" and len(config.grid["weight_decay"]) == 2
    assert gpu_sweep.step_config(1, quick=True, precision="tf32").model.precision == "default"
    row = gpu_sweep.time_steps(config)
    assert row["runs"] == 2 and row["steps"] == config.train.steps and row["step_ms"] > 0
    assert math.isclose(row["run_steps_per_s"], 2 * row["steps"] / row["call_s"])
    assert math.isfinite(row["final_train_loss"])
    report = {
        "date": "d",
        "backend": "cpu",
        "device": "cpu",
        "device_count": 1,
        "jax": "x",
        "matmul_peak_flops": 1e11,
        "matmul_size": 1024,
        "quick": True,
        "jobs": [
            {"job": "scaling", "preset": "default", "rows": [row]},
            {"job": "precision", "skipped": "--budget-s 1 s spent"},
        ],
    }
    text = gpu_sweep.markdown(report)
    assert "scaling (default, runs vmapped" in text and f"| 2 | highest | {row['steps']} |" in text
    assert "| skipped | precision: --budget-s 1 s spent |" in text


def test_the_main_benchmark_lists_every_part_of_the_training_wall_time():
    bare = {
        "seconds": {"setup": 1.0, "start": 2.0, "compile": 3.0, "train": 40.0},
        "train_wall_s": 45.0,
        "wall_s": 46.0,
        "how": "lax.map",
    }
    main = {
        "profile": {
            "start": 1.5,
            "compile": 5.0,
            "train": 41.0,
            "checkpoint": 0.2,
            "live table": 0.3,
            "live.png": 0.4,
            "progress": 0.1,
            "loop": 0.5,
        },
        "train_wall_s": 49.0,
        "run_sweep_s": 50.0,
        "figures_s": 3.0,
        "wall_s": 54.0,
    }
    rows = {part.split(" (")[0]: (m, b) for part, m, b in main_command.parts(bare, main)}
    training = [
        m
        for part, (m, b) in rows.items()
        if not part.startswith("=")
        and part in ("start", "compile", "train", "checkpoint", "live table", "live.png", "progress", "loop")
    ]
    assert sum(training) == main["train_wall_s"] and rows["= training wall time"] == (49.0, 45.0)
    assert rows["figures after training"] == (3.0, 0.0) and rows["= end to end"] == (54.0, 46.0)
    assert rows["setup and results files"] == (1.0, 1.0)

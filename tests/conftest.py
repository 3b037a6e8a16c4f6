import pytest

from nht_jax.config import Config, GridConfig, ModelConfig, OptimConfig, TaskConfig, TrainConfig


def tiny_config(**train_overrides) -> Config:
    """p = 31 addition, width-32 MLP, a handful of steps: compiles and runs in seconds."""
    train = dict(steps=40, log_every=10, chunk_logs=2)
    train.update(train_overrides)
    return Config(
        name="tiny-test",
        task=TaskConfig(p=31),
        model=ModelConfig(hidden=(32,)),
        optim=OptimConfig(),
        train=TrainConfig(**train),
        grid=GridConfig(weight_decay=(0.01, 1.0), learning_rate=(1e-2,), seed=(0, 1), train_fraction=(0.5,)),
    )


@pytest.fixture
def tiny():
    return tiny_config()

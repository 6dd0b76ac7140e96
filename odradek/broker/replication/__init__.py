"""The simulated multi-broker cluster (issue #15, docs/cluster.md): `controller.py` is the
sans-IO partition state (placement, leaders, epochs, ISR, high watermark); `simulated.py`
holds the brokers' replica logs and moves batches between them; `listeners.py` gives each
broker its own listener."""

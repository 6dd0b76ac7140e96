"""Odradek: a Kafka-wire-compatible broker."""

__version__ = "0.1.0"

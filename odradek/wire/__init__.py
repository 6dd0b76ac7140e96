"""Sans-IO Kafka codec: bytes <-> typed messages. Imports nothing from broker or coordinator."""

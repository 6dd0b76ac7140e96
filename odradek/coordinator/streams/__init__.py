"""Streams groups (KIP-1071): the sans-IO model, topology validation, task assignor and
the `__consumer_offsets` records of Kafka's StreamsGroup* formats."""

"""KIP-848 consumer groups (the consumer protocol): model, assignors, records, operations."""
